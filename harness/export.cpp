// harness/export.cpp — see export.h. The binary files are streamed straight into a
// temporary folder (data.bin can be ~1 GB: no second copy in memory), which is
// renamed to the requested folder once every file is complete.
#include "harness/export.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include "datasets/shuffle.h"
#include "harness/cli.h"
#include "harness/exit_codes.h"
#include "harness/host_memory.h"
#include "harness/json_out.h"
#include "harness/model.h"
#include "harness/params_file.h"
#include "harness/runner.h"

namespace tb {
namespace {

namespace fs = std::filesystem;

constexpr char kDataMagic[8] = {'T', 'B', 'D', 'A', 'T', 'A', '\0', '\0'};
constexpr char kOrderMagic[8] = {'T', 'B', 'O', 'R', 'D', 'E', 'R', '\0'};

// 64-byte header: magic, then up to 7 int64 fields (version first), zero-padded.
std::string header(const char (&magic)[8], std::initializer_list<int64_t> fields) {
  std::string h(magic, 8);
  int64_t slots[7] = {};
  size_t i = 0;
  for (int64_t f : fields) slots[i++] = f;
  h.append(reinterpret_cast<const char*>(slots), sizeof slots);
  return h;
}

class BinaryFile {
 public:
  explicit BinaryFile(const fs::path& p) : path_(p), out_(p, std::ios::binary | std::ios::trunc) {
    if (!out_) throw std::runtime_error(p.string() + ": cannot create");
  }
  void write(const void* data, size_t bytes) {
    out_.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
    if (!out_) throw std::runtime_error(path_.string() + ": write failed (disk full?)");
  }
  void close() {
    out_.close();
    if (!out_) throw std::runtime_error(path_.string() + ": write failed on close");
  }

 private:
  fs::path path_;
  std::ofstream out_;
};

void write_data(const fs::path& p, const Dataset& d) {
  const bool cls = d.task == Task::kClassification;
  BinaryFile f(p);
  const std::string h = header(kDataMagic, {kExportVersion, cls ? 1 : 0, d.n, d.d, d.o});
  f.write(h.data(), h.size());
  f.write(d.x.data(), d.x.size() * sizeof(float));
  if (cls) f.write(d.labels.data(), d.labels.size() * sizeof(int32_t));
  else f.write(d.y.data(), d.y.size() * sizeof(float));
  f.close();
}

// The permutation of every timed epoch, as runner.cpp computes them.
void write_orders(const fs::path& p, const RunConfig& c, int64_t n) {
  BinaryFile f(p);
  const std::string h = header(kOrderMagic, {kExportVersion, c.epochs, n});
  f.write(h.data(), h.size());
  std::vector<int64_t> order;
  for (int64_t e = 0; e < c.epochs; ++e) {
    epoch_order(c.seed, e, n, /*shuffle=*/true, &order);
    f.write(order.data(), order.size() * sizeof(int64_t));
  }
  f.close();
}

std::string workload_json(const RunConfig& c, const Dataset& d, int64_t param_count) {
  const bool cls = d.task == Task::kClassification;
  Json j;
  j["format"] = "trainbench-export";
  j["version"] = kExportVersion;
  j["trainbench_version"] = TB_VERSION;
  j["workload"] = c.workload;
  j["model"] = model_name(c.model.kind);
  j["layers"] = c.model.layers;
  j["task"] = task_name(d.task);
  j["loss"] = cls ? "cross_entropy_mean" : "mse_mean";
  j["dataset"] = d.description;
  j["n"] = d.n;
  j["d"] = d.d;
  j["o"] = d.o;
  j["param_count"] = param_count;
  j["batch"] = c.batch;
  j["lr"] = c.lr;  // doubles are written so that they read back exactly
  j["momentum"] = c.momentum;
  j["weight_decay"] = c.weight_decay;
  j["epochs"] = c.epochs;
  j["warmup"] = c.warmup;
  j["reps"] = c.reps;
  j["threads"] = c.threads;
  j["shuffle"] = c.shuffle;
  j["drop_last"] = c.drop_last;
  j["seed"] = c.seed;
  j["precision"] = c.precision;
  j["rows_per_epoch"] = c.rows_per_epoch();
  j["batches_per_epoch"] = c.batches_per_epoch();
  j["files"] = {{"data", "data.bin"}, {"params", "params.bin"}, {"orders", c.shuffle ? Json("orders.bin") : Json(nullptr)}};
  return json_text(j);
}

bool usable_target(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return true;
  return fs::is_directory(dir, ec) && fs::is_empty(dir, ec);
}

}  // namespace

void export_workload(const RunConfig& cfg, const Dataset& data, const std::string& dir_arg) {
  RunConfig c = cfg;
  c.data.n = data.n;  // file datasets learn their size on load
  const fs::path dir = fs::path(dir_arg).lexically_normal();
  if (!usable_target(dir)) throw UsageError("--out: " + dir_arg + " exists and is not an empty folder");
  fs::path parent = dir.parent_path();
  if (parent.empty()) parent = ".";
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) throw UsageError("--out: " + parent.string() + " is not a folder");

  std::string tmpl = (parent / ("." + dir.filename().string() + ".tmp-XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw UsageError("--out: cannot create a folder in " + parent.string());
  const fs::path tmp = tmpl;
  try {
    write_data(tmp / "data.bin", data);
    const std::vector<float> init = init_params(c.model, c.seed);
    write_params_file((tmp / "params.bin").string(), init);
    if (c.shuffle) write_orders(tmp / "orders.bin", c, data.n);
    BinaryFile json(tmp / "workload.json");
    const std::string text = workload_json(c, data, static_cast<int64_t>(init.size()));
    json.write(text.data(), text.size());
    json.close();
    fs::permissions(tmp, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
    if (fs::exists(dir)) fs::remove(dir);  // the empty folder allowed above
    fs::rename(tmp, dir);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
}

int cmd_export(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    const std::string name = a.substr(0, a.find('='));
    if (name == "--backend" || name == "--save-params") {
      throw UsageError("export: " + name + " does not apply (export trains nothing; it writes data and initial "
                       "parameters)");
    }
  }
  RunFlags f;
  parse_run_flags(args, /*allow_lists=*/false, &f);
  if (f.out.empty()) throw UsageError("export: --out DIR is required (the folder to write)");
  validate_run_flags(&f);
  const RunConfig& c = f.config;
  const fs::path out = fs::path(f.out).lexically_normal();
  if (!usable_target(out)) throw UsageError("--out: " + f.out + " exists and is not an empty folder");
  std::error_code ec;
  if (const fs::path parent = out.parent_path(); !parent.empty() && !fs::is_directory(parent, ec)) {
    throw UsageError("--out: " + parent.string() + " is not a folder");
  }
  // Too large for this host: said before any data is made, with run's numbers (exit 1, as a failed run).
  if (const std::string short_of = host_memory_shortfall(c, 1, 1); !short_of.empty()) {
    std::fprintf(stderr, "trainbench: export: %s; nothing written\n", short_of.c_str());
    return kExitRunFailed;
  }
  const Dataset data = load_dataset(c.data);  // DataError -> exit 2, nothing written
  if (const std::string misfit = check_data_fits(c, data); !misfit.empty()) throw UsageError(misfit);
  export_workload(c, data, f.out);
  std::printf("exported %s: %lld rows x %lld features -> %s\n", c.workload.c_str(), static_cast<long long>(data.n),
              static_cast<long long>(data.d), f.out.c_str());
  return 0;
}

}  // namespace tb
