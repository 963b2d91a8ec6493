// harness/csv_writer.h — append-only CSV files that are never left half-written.
// Each row is formatted in memory and handed to the kernel with one write() on an
// O_APPEND descriptor, so a crash leaves whole rows only. Opening a file whose
// existing header differs from ours is refused, so two schemas never mix.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tb {

// A result file that does not fit (another header, not ending with a newline, a
// directory): bad input, exit 2.
class CsvError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Writing an output failed (a full disk, a file size limit, an I/O error): the file
// was cut back to its last complete row; exit kExitIoError.
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// RFC 4180 quoting: a field with a comma, quote or newline is quoted, quotes doubled.
std::string csv_line(const std::vector<std::string>& fields);

// Splits one CSV line (without its newline) into fields, undoing csv_line's quoting.
std::vector<std::string> csv_fields(const std::string& line);

class CsvWriter {
 public:
  // path "-" writes to stdout. Creates the file with `header`, or checks that an
  // existing non-empty file starts with exactly that header and ends with a newline.
  // Throws CsvError naming the file when it cannot be opened or does not fit; an
  // existing file is never truncated.
  CsvWriter(const std::string& path, const std::vector<std::string>& header);
  ~CsvWriter();
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;

  // Appends one row with one write(); if the write fails part-way (ENOSPC, EFBIG,
  // EIO) the file is truncated back to its previous size and OutputError is thrown,
  // so the file always ends with a whole row.
  void append(const std::vector<std::string>& fields);
  // Appends a line another CsvWriter with the same header produced (checked for width).
  void append_line(const std::string& line);
  const std::string& path() const { return path_; }
  // A file this writer created and appended no row to is removed (a run that could not
  // start: nothing half-written left behind), and the writer is closed; true if so.
  // A new file whose first append fails is removed the same way.
  bool discard_if_new();

 private:
  std::string path_;
  int fd_ = -1;
  size_t columns_ = 0;
  bool created_ = false;  // this writer made the file (it did not exist)
  int64_t rows_ = 0;      // rows appended through this writer
};

// Writes `text` to `path` through a temporary file and rename(): readers see the
// old file or the new one, never a torn one. Throws CsvError.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace tb
