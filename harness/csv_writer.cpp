// harness/csv_writer.cpp — whole-row appends and atomic file replacement.
#include "harness/csv_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tb {
namespace {

void write_all(int fd, const std::string& s, const std::string& path) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t w = ::write(fd, s.data() + done, s.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw OutputError(path + ": write failed: " + std::strerror(errno));
    }
    done += static_cast<size_t>(w);
  }
}

}  // namespace

std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) line += ',';
    const std::string& f = fields[i];
    if (f.find_first_of(",\"\n\r") == std::string::npos) {
      line += f;
    } else {
      line += '"';
      for (char ch : f) {
        if (ch == '"') line += '"';
        line += ch;
      }
      line += '"';
    }
  }
  line += '\n';
  return line;
}

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> f(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        f.back() += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        f.back() += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      f.emplace_back();
    } else {
      f.back() += ch;
    }
  }
  return f;
}

CsvWriter::CsvWriter(const std::string& path, const std::vector<std::string>& header)
    : path_(path), columns_(header.size()) {
  const std::string head = csv_line(header);
  if (path == "-") {
    fd_ = STDOUT_FILENO;
    write_all(fd_, head, "stdout");
    return;
  }
  // O_EXCL first, to know whether this writer made the file: one it made and could not
  // write a row into is removed again, never left behind empty or as a bare header.
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  created_ = fd_ >= 0;
  if (fd_ < 0 && errno == EEXIST) fd_ = ::open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC);
  if (fd_ < 0) throw CsvError(path + ": cannot open for writing: " + std::strerror(errno));
  struct stat kind {};
  if (::fstat(fd_, &kind) == 0 && !S_ISREG(kind.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw CsvError(path + ": not a regular file");
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw CsvError(path + ": cannot stat: " + std::strerror(errno));
  if (st.st_size == 0) {  // new or empty file: start it with the header
    try {
      write_all(fd_, head, path);
    } catch (const OutputError&) {
      if (::ftruncate(fd_, 0) != 0) {}  // no torn header left behind (best effort)
      ::close(fd_);
      fd_ = -1;
      if (created_) ::unlink(path.c_str());  // nor a new empty file (a full disk at start)
      throw;
    }
    return;
  }
  // An existing file is appended to only when it starts with exactly our header
  // and ends with a whole line; it is never truncated or rewritten.
  std::string first(head.size(), '\0');
  const ssize_t got = ::pread(fd_, first.data(), first.size(), 0);
  char last = 0;
  const ssize_t got_last = ::pread(fd_, &last, 1, st.st_size - 1);
  if (got != static_cast<ssize_t>(head.size()) || first != head) {
    ::close(fd_);
    fd_ = -1;
    throw CsvError(path + ": refusing to append: the file has a different header (another schema or tool)");
  }
  if (got_last != 1 || last != '\n') {
    ::close(fd_);
    fd_ = -1;
    throw CsvError(path + ": refusing to append: the file does not end with a newline (edited or truncated?)");
  }
}

CsvWriter::~CsvWriter() {
  if (fd_ > STDERR_FILENO) ::close(fd_);
}

void CsvWriter::append(const std::vector<std::string>& fields) {
  if (fields.size() != columns_) {
    throw CsvError(path_ + ": internal error: row has " + std::to_string(fields.size()) + " fields, header " +
                   std::to_string(columns_));
  }
  if (fd_ <= STDERR_FILENO) {
    write_all(fd_, csv_line(fields), path_);
    return;
  }
  // O_APPEND: the row lands at the end; remember where that was, to cut a torn row off.
  const off_t before = ::lseek(fd_, 0, SEEK_END);
  try {
    write_all(fd_, csv_line(fields), path_);
    if (::fdatasync(fd_) != 0 && errno != EINVAL) {
      throw OutputError(path_ + ": write failed: " + std::strerror(errno));
    }
  } catch (const OutputError& e) {
    if (discard_if_new()) throw OutputError(std::string(e.what()) + " (the file was new: removed)");
    const bool cut = before >= 0 && ::ftruncate(fd_, before) == 0;
    throw OutputError(std::string(e.what()) + (cut ? " (the file ends at its last complete row)"
                                                   : " (and cutting the torn row off failed: check the file)"));
  }
  ++rows_;
}

bool CsvWriter::discard_if_new() {
  if (!created_ || rows_ > 0 || fd_ <= STDERR_FILENO) return false;
  ::close(fd_);
  fd_ = -1;
  return ::unlink(path_.c_str()) == 0;
}

void CsvWriter::append_line(const std::string& line) {
  append(csv_fields(line));
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw CsvError(path + ": cannot write: " + std::strerror(errno));
  try {
    write_all(fd, text, path);  // the message names the file meant, not its temporary
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw CsvError(path + ": cannot rename into place: " + std::strerror(errno));
  }
}

}  // namespace tb
