// harness/cli.cpp — the flag table for `trainbench run` and suite lines.
// Each entry parses and range-checks its own value; errors are one line naming
// the flag and the allowed values (UsageError -> exit code 2 in main()).
#include "harness/cli.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <functional>
#include <limits>
#include <sstream>
#include <thread>

#include "harness/backend.h"
#include "harness/utf8.h"

namespace tb {
namespace {

struct FlagDef {
  const char* name;
  const char* hint;  // value placeholder, nullptr for a switch
  const char* help;
  std::function<void(const std::string& value, bool allow_lists, RunFlags* f)> apply;
};

[[noreturn]] void bad(const std::string& flag, const std::string& value, const std::string& allowed) {
  throw UsageError(flag + ": invalid value '" + value + "' (" + allowed + ")");
}

// Upper bounds: far beyond any real run, low enough that no count wraps or runs "forever".
constexpr int64_t kMaxCount = 1000000;        // --epochs, --warmup, --reps
constexpr int64_t kMaxRows = int64_t{1} << 40;  // --samples, --batch
constexpr int64_t kMaxWidth = int64_t{1} << 30; // one --layers size
constexpr int64_t kMaxThreads = 4096;         // --threads, --world-sizes, --workers
constexpr int64_t kMaxDevice = 1023;          // --device, --devices entries
constexpr double kMaxNoise = 1e6;             // --noise (a label's square stays far below FLT_MAX)
constexpr int64_t kMaxSeed = std::numeric_limits<int64_t>::max();  // --seed: the CSV's int column
constexpr double kMinCommTimeout = 1, kMaxCommTimeout = 86400;  // --comm-timeout, seconds

// A 64-bit integer in [min_value, max_value], else a one-line error naming the flag and the range
// (after `other`, the flag's other allowed words: "all or "). The range is always stated: "an
// integer >= 0" for --seed refused 2^63 without saying why.
int64_t parse_int(const std::string& flag, const std::string& v, int64_t min_value, int64_t max_value,
                  const std::string& other = "") {
  int64_t x = 0;
  const char* end = v.data() + v.size();
  auto [p, ec] = std::from_chars(v.data(), end, x);
  if (ec != std::errc() || p != end || x < min_value || x > max_value) {
    // The range in full, also where it ends at int64's largest value (--seed).
    bad(flag, v, "expected " + other + "an integer in [" + std::to_string(min_value) + ", " +
                     std::to_string(max_value) + "]");
  }
  return x;
}

// A finite number written as the whole of v, into *x. strtod skips leading blanks; the
// integer flags do not, nor do these.
bool read_number(const std::string& v, double* x) {
  char* end = nullptr;
  *x = std::strtod(v.c_str(), &end);
  return !v.empty() && !std::isspace(static_cast<unsigned char>(v[0])) && end == v.c_str() + v.size() &&
         std::isfinite(*x);
}

double parse_positive(const std::string& flag, const std::string& v, bool allow_zero) {
  double x = 0;
  if (!read_number(v, &x) || !(allow_zero ? x >= 0 : x > 0)) {
    bad(flag, v, allow_zero ? "expected a finite number >= 0" : "expected a finite number > 0");
  }
  return x;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.push_back("");
  return out;
}

// A suite's list flag (--backends, --threads, --world-sizes, --workers), each item once:
// "2,2" would run one configuration twice and count it twice in the report.
std::vector<std::string> split_list(const std::string& flag, const std::string& v) {
  const std::vector<std::string> items = split(v, ',');
  for (size_t i = 0; i < items.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (items[i] == items[j]) bad(flag, v, "'" + items[i] + "' is listed twice");
    }
  }
  return items;
}

int parse_threads(const std::string& v) {
  if (v == "all") return hardware_threads();
  return static_cast<int>(parse_int("--threads", v, 1, kMaxThreads, "all or "));
}

const std::vector<FlagDef>& flag_table() {
  static const std::vector<FlagDef> table = {
      {"--backend", "NAME", "backend to run (see `trainbench backends`); suites: --backends A,B",
       [](const std::string& v, bool lists, RunFlags* f) {
         f->backends.clear();
         for (const std::string& b : lists ? split_list("--backends", v) : std::vector<std::string>{v}) {
           if (!find_backend(b)) bad("--backend", b, "allowed: " + backend_names());
           f->backends.push_back(b);
         }
       }},
      {"--model", "linear|mlp", "linear (D->O) or mlp (ReLU hidden layers)",
       [](const std::string& v, bool, RunFlags* f) {
         if (v == "linear") f->config.model.kind = ModelKind::kLinear;
         else if (v == "mlp") f->config.model.kind = ModelKind::kMlp;
         else bad("--model", v, "allowed: linear, mlp");
       }},
      {"--layers", "D,H,...,O", "layer widths, input first (linear: exactly D,O); default 64,1 or 784,256,256,10",
       [](const std::string& v, bool, RunFlags* f) {
         std::vector<int64_t> l;
         for (const std::string& s : split(v, ',')) l.push_back(parse_int("--layers", s, 1, kMaxWidth));
         if (l.size() < 2) bad("--layers", v, "expected at least 2 positive sizes, e.g. 64,1");
         f->config.model.layers = l;
         f->layers_given = true;
       }},
      {"--samples", "N", "training rows (synthetic data; default 10000)",
       [](const std::string& v, bool, RunFlags* f) {
         f->config.data.n = parse_int("--samples", v, 1, kMaxRows);
         f->samples_given = true;
       }},
      {"--batch", "B", "global batch size (default 256)",
       [](const std::string& v, bool, RunFlags* f) { f->config.batch = parse_int("--batch", v, 1, kMaxRows); }},
      {"--epochs", "E", "timed epochs per repetition (default 3)",
       [](const std::string& v, bool, RunFlags* f) { f->config.epochs = parse_int("--epochs", v, 1, kMaxCount); }},
      {"--lr", "X", "SGD learning rate, finite and > 0 (default 0.01)",
       [](const std::string& v, bool, RunFlags* f) { f->config.lr = parse_positive("--lr", v, false); }},
      {"--momentum", "X", "SGD momentum in [0, 1) (default 0)",
       [](const std::string& v, bool, RunFlags* f) {
         double m = 0;
         if (!read_number(v, &m) || !(m >= 0 && m < 1)) bad("--momentum", v, "expected a number in [0, 1)");
         f->config.momentum = m;
       }},
      {"--weight-decay", "X", "L2 weight decay >= 0 (default 0)",
       [](const std::string& v, bool, RunFlags* f) { f->config.weight_decay = parse_positive("--weight-decay", v, true); }},
      {"--seed", "S", "seed for data, init and shuffling, 0 to 2^63-1 (default 1)",
       [](const std::string& v, bool, RunFlags* f) {
         f->config.seed = static_cast<uint64_t>(parse_int("--seed", v, 0, kMaxSeed));
         f->config.data.seed = f->config.seed;
       }},
      {"--threads", "T|all", "CPU threads, >= 1 or 'all' (default all); suites: a list such as 1,all",
       [](const std::string& v, bool lists, RunFlags* f) {
         f->threads.clear();
         for (const std::string& t : lists ? split_list("--threads", v) : std::vector<std::string>{v}) {
           f->threads.push_back(parse_threads(t));
         }
       }},
      {"--warmup", "W", "untimed warm-up epochs before the repetitions (default 1)",
       [](const std::string& v, bool, RunFlags* f) { f->config.warmup = parse_int("--warmup", v, 0, kMaxCount); }},
      {"--reps", "R", "timed repetitions, one CSV row each (default 3)",
       [](const std::string& v, bool, RunFlags* f) { f->config.reps = parse_int("--reps", v, 1, kMaxCount); }},
      {"--dataset", "SPEC", "synthetic | synthetic-regression | synthetic-classification | csv:PATH | idx:IMAGES,LABELS",
       [](const std::string& v, bool, RunFlags* f) {
         DatasetSpec d;
         try {
           d = parse_dataset_arg(v);
         } catch (const std::invalid_argument& e) {
           throw UsageError(e.what());
         }
         d.n = f->config.data.n;
         d.seed = f->config.data.seed;
         d.noise = f->config.data.noise;
         d.target = f->config.data.target;
         d.task = f->config.data.task;
         f->config.data = d;
       }},
      {"--target", "COLUMN", "csv: name of the target column (default: the last column)",
       [](const std::string& v, bool, RunFlags* f) {
         f->config.data.target = v;
         f->target_given = true;
       }},
      {"--task", "regression|classification", "csv: what the target column is (default regression)",
       [](const std::string& v, bool, RunFlags* f) {
         if (v == "regression") f->config.data.task = Task::kRegression;
         else if (v == "classification") f->config.data.task = Task::kClassification;
         else bad("--task", v, "allowed: regression, classification");
         f->task_given = true;
       }},
      {"--noise", "X", "synthetic regression label noise std dev in [0, 1e6] (default 0.1)",
       [](const std::string& v, bool, RunFlags* f) {
         // Bounded so that the labels and their squares stay finite in float32.
         const double x = parse_positive("--noise", v, true);
         if (x > kMaxNoise) bad("--noise", v, "expected a number in [0, 1e6]");
         f->config.data.noise = static_cast<float>(x);
         f->noise_given = true;
       }},
      {"--shuffle", nullptr, "seeded per-epoch shuffle, identical for every backend",
       [](const std::string&, bool, RunFlags* f) { f->config.shuffle = true; }},
      {"--drop-last", nullptr, "drop the last partial batch of each epoch (default: keep it, mean over its size)",
       [](const std::string&, bool, RunFlags* f) { f->config.drop_last = true; }},
      {"--target-loss", "X",
       "time to target: evaluate after every timed epoch until the loss is <= X (finite, >= 0); the time "
       "and epoch it is first reached are columns (default: not set)",
       [](const std::string& v, bool, RunFlags* f) { f->config.target_loss = parse_positive("--target-loss", v, true); }},
      {"--precision", "fp32|tf32", "arithmetic: fp32 (default); tf32 lets GPU GEMMs use TF32",
       [](const std::string& v, bool, RunFlags* f) {
         if (v != "fp32" && v != "tf32") bad("--precision", v, "allowed: fp32, tf32");
         f->config.precision = v;
       }},
      {"--workload", "NAME", "name shown in reports (default: derived from model, layers, samples, batch)",
       [](const std::string& v, bool, RunFlags* f) {
         check_workload_name("--workload", v);
         f->config.workload = v;
       }},
      {"--bucket-mb", "X", "gradient bucket size in MiB, > 0 (default 25)",
       [](const std::string& v, bool, RunFlags* f) { f->config.bucket_mb = parse_positive("--bucket-mb", v, false); }},
      {"--no-overlap", nullptr, "all-reduce after the backward pass instead of during it",
       [](const std::string&, bool, RunFlags* f) { f->config.overlap = false; }},
      {"--comm-timeout", "S", "multi-process: seconds a collective may take before the job is aborted; cpu-hogwild: "
       "seconds without a step of any worker before the run fails; 1 to 86400 (default 60)",
       [](const std::string& v, bool, RunFlags* f) {
         // Whole seconds and up: a collective on a loaded machine takes milliseconds to
         // seconds, and a deadline under that aborts healthy jobs (0.001 did, as "0 s").
         // One message for every bad value (0 and inf said "a finite number > 0").
         double s = 0;
         if (!read_number(v, &s) || s < kMinCommTimeout || s > kMaxCommTimeout) {
           bad("--comm-timeout", v, "expected seconds in [1, 86400]");
         }
         f->config.comm_timeout_s = s;
       }},
      {"--deterministic", nullptr,
       "reduce gradients of 12 fixed leaves of the batch in a fixed tree, so results are bitwise "
       "equal across runs and world sizes dividing 12 (slower)",
       [](const std::string&, bool, RunFlags* f) { f->config.deterministic = true; }},
      {"--device", "N", "GPU index among the visible ones (CUDA_VISIBLE_DEVICES), default 0",
       [](const std::string& v, bool, RunFlags* f) { f->config.device = static_cast<int>(parse_int("--device", v, 0, kMaxDevice)); }},
      {"--data-placement", "device|host",
       "upload the dataset once (device, default) or stream each batch from pinned host memory (host)",
       [](const std::string& v, bool, RunFlags* f) {
         if (v != "device" && v != "host") bad("--data-placement", v, "allowed: device, host");
         f->config.data_placement = v;
       }},
      {"--cuda-graph", nullptr, "capture the training step once and replay it (removes launch overhead)",
       [](const std::string&, bool, RunFlags* f) { f->config.cuda_graph = true; }},
      {"--phase-timing", "on|off",
       "GPU backends: time each phase with CUDA events (on, default) or not (off: the phase columns stay "
       "empty; what the events cost, docs/performance.md)",
       [](const std::string& v, bool, RunFlags* f) {
         if (v != "on" && v != "off") bad("--phase-timing", v, "allowed: on, off");
         f->config.phase_timing = v == "on";
       }},
      {"--devices", "I,J,...", "GPU slots to replicate over (default: all visible); repeats such as 0,0 "
                               "run several replicas on one GPU",
       [](const std::string& v, bool, RunFlags* f) {
         f->config.dp_devices.clear();
         for (const std::string& d : split(v, ',')) f->config.dp_devices.push_back(static_cast<int>(parse_int("--devices", d, 0, kMaxDevice)));
       }},
      {"--dp-mode", "faithful|persistent",
       "replicate the model from GPU 0 every step (faithful, as torch.nn.DataParallel) or keep replicas "
       "and broadcast only the updated parameters (persistent)",
       [](const std::string& v, bool, RunFlags* f) {
         if (v != "faithful" && v != "persistent") bad("--dp-mode", v, "allowed: faithful, persistent");
         f->config.dp_mode = v;
       }},
      {"--workers", "N", "worker processes updating one shared replica without locks (Hogwild!), 1..4096 "
                         "(default 1); suites: a list such as 1,2",
       [](const std::string& v, bool lists, RunFlags* f) {
         f->workers.clear();
         for (const std::string& s : lists ? split_list("--workers", v) : std::vector<std::string>{v}) {
           f->workers.push_back(static_cast<int>(parse_int("--workers", s, 1, kMaxThreads)));
         }
       }},
      {"--world-sizes", "N,...", "suites: process counts to launch multi-process backends with (default 1,2)",
       [](const std::string& v, bool lists, RunFlags* f) {
         if (!lists) throw UsageError("--world-sizes: only in suite files (under mpirun the world size is -np)");
         f->world_sizes.clear();
         for (const std::string& s : split_list("--world-sizes", v)) {
           f->world_sizes.push_back(static_cast<int>(parse_int("--world-sizes", s, 1, kMaxThreads)));
         }
       }},
      {"--save-params", "FILE", "run: write the final parameters of the last repetition (float32, see params_file.h)",
       [](const std::string& v, bool lists, RunFlags* f) {
         // Every configuration of a suite would write the one file: run-only, as the help says.
         if (lists) throw UsageError("--save-params: not in suite files (give it to `trainbench run`)");
         if (v.empty()) bad("--save-params", v, "expected a file path");
         f->config.save_params = v;
       }},
      {"--out", "FILE.csv", "run: append result rows to FILE.csv (env JSON beside it as FILE.csv.env.json, kept "
       "when appending: a run of another build or machine is refused); default: stdout",
       [](const std::string& v, bool, RunFlags* f) {
         if (v.empty()) bad("--out", v, "expected a path");
         f->out = v;
       }},
      {"--no-ceilings", nullptr, "run: do not measure this machine's FMA, memory and GPU ceilings for the env JSON "
       "(~1 s; also TB_CEILINGS=0)",
       [](const std::string&, bool lists, RunFlags* f) {
         if (lists) throw UsageError("--no-ceilings: not in suite files (give it to `trainbench suite`)");
         f->no_ceilings = true;
       }},
  };
  return table;
}

}  // namespace

void check_workload_name(const std::string& what, const std::string& name) {
  // Reports group by the name and CSV/JSON carry it: text, one field, one line.
  if (const size_t at = first_invalid_utf8(name); at != std::string::npos) {
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(name[at]));
    throw UsageError(what + ": not valid UTF-8 (byte " + byte + " at offset " + std::to_string(at) +
                     "); workload names are written to CSV and JSON as UTF-8 text");
  }
  if (name.empty() || name.find_first_of(",\"\n\r") != std::string::npos) {
    bad(what, name, "non-empty, no commas, quotes or line breaks");
  }
}

int hardware_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

void parse_run_flags(const std::vector<std::string>& args, bool allow_lists, RunFlags* flags) {
  // No flag is repeatable: a second value silently replacing the first hid typos such as
  // `--lr 0.1 ... --lr 0.2`. (A suite entry still overrides its defaults: another call.)
  std::vector<std::string> given;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i], value;
    bool has_inline = false;
    if (const size_t eq = name.find('='); name.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_inline = true;
    }
    const std::string spelled = name;  // --backends is --backend on suite lines
    if (allow_lists && name == "--backends") name = "--backend";
    const FlagDef* def = nullptr;
    for (const FlagDef& d : flag_table()) {
      if (name == d.name) def = &d;
    }
    if (!def) throw UsageError("unknown flag '" + args[i] + "' (see `trainbench run --help`)");
    if (std::find(given.begin(), given.end(), name) != given.end()) {
      throw UsageError(spelled + " given twice (each flag may be given once; see `trainbench run --help`)");
    }
    given.push_back(name);
    if (def->hint) {
      if (!has_inline) {
        if (i + 1 >= args.size()) throw UsageError(name + ": missing value (" + def->hint + ")");
        value = args[++i];
      }
    } else if (has_inline) {
      throw UsageError(name + ": takes no value");
    }
    def->apply(value, allow_lists, flags);
  }
}

void validate_run_flags(RunFlags* f) {
  RunConfig& c = f->config;
  if (f->backends.empty()) f->backends = {default_backend()};
  if (f->threads.empty()) f->threads = {hardware_threads()};
  if (f->world_sizes.empty()) f->world_sizes = {1, 2};
  if (f->workers.empty()) f->workers = {1};
  c.backend = f->backends.front();
  const BackendTraits traits = traits_of(c.backend);
  // Only backends on CPU threads use --threads; the others record 1.
  c.threads = traits.cpu_threads ? f->threads.front() : 1;
  // --workers is a knob: a backend that does not honour it gives a skipped row.
  c.workers = f->workers.front();
  if (traits.parallelism == Parallelism::kSharedMemory) c.world_size = c.workers;
  if (!f->layers_given) {
    c.model.layers = c.model.kind == ModelKind::kLinear ? std::vector<int64_t>{64, 1}
                                                        : std::vector<int64_t>{784, 256, 256, 10};
  }
  if (c.model.kind == ModelKind::kLinear && c.model.layers.size() != 2) {
    throw UsageError("--layers: a linear model takes exactly two sizes D,O (got " + layers_to_string(c.model.layers) + ")");
  }
  if (c.model.kind == ModelKind::kMlp && c.model.layers.size() < 3) {
    throw UsageError("--layers: an mlp needs at least one hidden layer, e.g. 784,256,10 (got " +
                     layers_to_string(c.model.layers) + ")");
  }
  DatasetSpec& d = c.data;
  if (d.kind == "synthetic") {
    d.kind = c.model.kind == ModelKind::kLinear ? "synthetic-regression" : "synthetic-classification";
  }
  // A dataset flag that does not apply to the data is bad input, not silently ignored.
  if (f->task_given && d.kind != "csv") {
    throw UsageError("--task: applies to csv datasets only (" + d.kind +
                     (d.kind == "idx" ? " data is classification, by its labels file)"
                                      : " data has its task: pick synthetic-regression or synthetic-classification)"));
  }
  if (f->target_given && d.kind != "csv") {
    throw UsageError("--target: applies to csv datasets only (it names a column of the file; this run's data is " +
                     d.kind + ")");
  }
  if (f->noise_given && d.kind != "synthetic-regression") {
    const bool labels = d.kind == "synthetic-classification";
    throw UsageError("--noise: applies to synthetic regression data only (this run's data is " + d.kind +
                     (labels ? ", whose labels carry no noise)" : ", read from its file)"));
  }
  if (d.kind == "synthetic-regression" || d.kind == "synthetic-classification") {
    d.task = d.kind == "synthetic-regression" ? Task::kRegression : Task::kClassification;
    if (d.n == 0) d.n = 10000;
    d.d = c.model.in_dim();
    d.o = c.model.out_dim();
    if (d.task == Task::kClassification && d.o < 2) {
      throw UsageError("--layers: classification needs at least 2 outputs (classes), got " + std::to_string(d.o));
    }
  } else {
    if (f->samples_given) {
      throw UsageError("--samples: applies to synthetic data only (" + d.kind + " datasets use every row of the file)");
    }
    if (d.kind == "idx") d.task = Task::kClassification;
    d.o = c.model.out_dim();
    d.d = c.model.in_dim();
    if (d.task == Task::kClassification && d.o < 2) {
      throw UsageError("--layers: classification needs at least 2 outputs (classes), got " + std::to_string(d.o));
    }
  }
  // Sizes this machine could never hold are bad input, not an out-of-memory crash.
  constexpr int64_t kMaxElements = int64_t{1} << 36;  // 256 GiB of float32
  for (size_t i = 0; i + 1 < c.model.layers.size(); ++i) {
    if (c.model.layers[i] > kMaxElements / c.model.layers[i + 1]) {
      throw UsageError("--layers: " + layers_to_string(c.model.layers) + " is too large (over 2^36 weights in one layer)");
    }
  }
  const int64_t params = make_layout(c.model).total;  // safe now: each layer < 2^36
  if (params > kMaxElements || (d.n > 0 && d.n > kMaxElements / c.model.in_dim())) {
    throw UsageError("--samples/--layers: the data or parameters exceed 2^36 floats (256 GiB)");
  }
  c.model.task = d.task;
  if (d.n > 0 && c.batch > d.n) {
    throw UsageError("--batch: " + std::to_string(c.batch) + " is larger than --samples " + std::to_string(d.n));
  }
  if (c.workload.empty()) c.workload = default_workload_name(c);
}

// "[cuda, cuda-ddp]": the backends that honour a knob flag (from their traits), or ""
// for flags every backend honours.
static std::string applies_to(const char* flag) {
  for (const KnobDef& k : knob_defs()) {
    const std::string f = k.flag;
    if (f.compare(0, f.find(' '), flag) != 0) continue;
    std::string by;
    for (const auto& b : all_backends()) {
      if (b->traits().knobs & k.bit) by += (by.empty() ? "" : ", ") + b->name();
    }
    return " [" + by + "]";
  }
  return "";
}

std::string run_flags_help(bool for_export) {
  std::ostringstream os;
  for (const FlagDef& d : flag_table()) {
    const std::string name = d.name;
    if (for_export) {
      // export trains nothing: no backend, its knobs, ranks or outputs of a run.
      if (name == "--backend" || name == "--save-params" || name == "--world-sizes" || name == "--comm-timeout" ||
          name == "--no-ceilings" ||
          !applies_to(d.name).empty()) {
        continue;
      }
      if (name == "--out") {
        os << "  --out DIR                      the folder to write (must not exist, or be empty)\n";
        continue;
      }
    }
    std::string lhs = std::string(d.name) + (d.hint ? std::string(" ") + d.hint : "");
    os << "  " << lhs;
    for (size_t i = lhs.size(); i < 30; ++i) os << ' ';
    os << ' ' << d.help << applies_to(d.name) << '\n';
  }
  if (for_export) return os.str();
  os << "\nA flag in [brackets] applies to those backends only; set for another backend, the run is a\n"
        "`skipped: FLAG does not apply to BACKEND` row (exit 0). --comm-timeout matters to multi-process\n"
        "backends and cpu-hogwild only and changes no result. Exit codes: 0 ok, 1 a run failed (its row says why),\n"
        "2 bad input (nothing written), 3 a multi-process job was aborted, 74 an output could not be written\n"
        "(disk full: files end at their last whole row), 130 / 143 SIGINT / SIGTERM (finished rows kept).\n";
  return os.str();
}

}  // namespace tb
