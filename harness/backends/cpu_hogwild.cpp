// harness/backends/cpu_hogwild.cpp — `cpu-hogwild`: Hogwild! (Niu et al., 2011) as
// torch.multiprocessing runs it: --workers N forked processes, T OpenMP threads each, share
// one parameter buffer (P floats, a memfd) and apply SGD to it in place without locks, each
// with its own momentum. Worker w trains batches w, w+N, ... of every epoch's order (B rows,
// the short last one kept): together one pass per epoch. README "Hogwild!".
#include <fcntl.h>
#include <linux/futex.h>
#include <omp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/backend.h"
#include "harness/backends/cpu_model.h"
#include "harness/ddp_plan.h"
#include "harness/disturbance.h"
#include "harness/fault_plan.h"
#include "harness/exit_codes.h"
#include "harness/interrupt.h"
#include "kernels/cpu/elementwise.h"

namespace tb {
namespace {

static_assert(std::atomic<uint32_t>::is_always_lock_free && std::atomic<int64_t>::is_always_lock_free &&
                  std::atomic<double>::is_always_lock_free && sizeof(std::atomic<uint32_t>) == 4,
              "atomics shared between processes must be lock-free (address-free)");

constexpr double kPollSeconds = 0.02;  // how often the parent looks at its workers while waiting
constexpr size_t kMaxError = 480;

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }
std::string seconds_text(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", s);
  return b;
}

// futex on a word of the shared segment (process-shared: not the _PRIVATE operations).
void futex_wait(std::atomic<uint32_t>* word, uint32_t seen, double seconds) {
  timespec ts{static_cast<time_t>(seconds), static_cast<long>((seconds - std::floor(seconds)) * 1e9)};
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, seen, &ts, nullptr, 0);
}
void futex_wake(std::atomic<uint32_t>* word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// Anonymous shared memory: a memfd mapped MAP_SHARED and its descriptor closed at once, so
// the segment has no name (nothing in /dev/shm) and is freed when the last process that
// maps it — this one or a worker — exits, however it ends (kill -9 included).
class SharedSegment {
 public:
  explicit SharedSegment(size_t bytes) : bytes_(bytes) {
    const int fd = ::memfd_create("trainbench-hogwild", MFD_CLOEXEC);
    if (fd < 0) throw std::runtime_error(errno_text("cpu-hogwild: memfd_create"));
    // Reserve the pages now: out of memory is an error here, not a SIGBUS in a worker.
    const int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
    if (rc != 0) {
      ::close(fd);
      throw std::runtime_error("cpu-hogwild: cannot reserve " + std::to_string(bytes >> 20) +
                               " MiB of shared memory: " + std::strerror(rc));
    }
    base_ = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (base_ == MAP_FAILED) throw std::runtime_error(errno_text("cpu-hogwild: mmap"));
  }
  ~SharedSegment() { ::munmap(base_, bytes_); }
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;
  char* at(size_t offset) const { return static_cast<char*>(base_) + offset; }

 private:
  size_t bytes_;
  void* base_ = nullptr;
};

// One worker's figures for the epoch in progress; written by that worker only, read by the
// parent once the worker has counted itself done (release/acquire on Control::done).
struct alignas(64) WorkerSlot {
  std::atomic<int64_t> steps{0};       // steps this epoch: the parent's progress and watchdog
  std::atomic<double> last_loss{0};
  std::atomic<uint32_t> done_gen{0};   // the last command it finished
  double loss_sum = 0;                 // sum of its step losses this epoch
  int64_t nonfinite_step = -1;         // the batch index of its first non-finite loss, or -1
  PhaseTimes phases;                   // this epoch
  std::atomic<double> cpu_s{0};        // the worker's CPU time (getrusage) when it finished its last epoch
  std::atomic<int> failed{0};          // set, with error, before a worker dies of an exception
  char error[kMaxError] = {};
};

enum Command : uint32_t { kEpoch = 1, kExit = 2 };

// The segment's head: the parent's commands, the workers' completions.
struct alignas(64) Control {
  std::atomic<uint32_t> gen{0};   // futex word: bumped by the parent for every command
  std::atomic<uint32_t> done{0};  // futex word: commands finished, counted over workers
  std::atomic<uint32_t> stop{0};  // a worker met a non-finite loss: the others stop too
  uint32_t command = 0;
  uint32_t reset_optimizer = 0;   // zero the momentum before this epoch (a new repetition)
  int64_t batch = 0, num_batches = 0, rows = 0;
};

size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

class HogwildTrainer final : public Trainer {
 public:
  HogwildTrainer(const Dataset& data, const RunConfig& cfg)
      : cfg_(cfg), sgd_(sgd_of(cfg)), workers_(cfg.workers), model_(cfg.model, data, cfg.batch),
        p_(model_.layout().total), fault_(fault_from_env()) {
    // [Control][N slots][P floats, page-aligned][order: n int64]
    const size_t slots_at = align_up(sizeof(Control), 64);
    const size_t params_at = align_up(slots_at + sizeof(WorkerSlot) * static_cast<size_t>(workers_), 4096);
    const size_t order_at = align_up(params_at + sizeof(float) * static_cast<size_t>(p_), 64);
    seg_ = std::make_unique<SharedSegment>(order_at + sizeof(int64_t) * static_cast<size_t>(std::max<int64_t>(data.n, 1)));
    ctl_ = new (seg_->at(0)) Control;
    slots_ = reinterpret_cast<WorkerSlot*>(seg_->at(slots_at));
    for (int w = 0; w < workers_; ++w) new (&slots_[w]) WorkerSlot;
    shared_ = reinterpret_cast<float*>(seg_->at(params_at));
    order_ = reinterpret_cast<int64_t*>(seg_->at(order_at));
    model_.bind_params(shared_);
    if (cfg.momentum != 0) velocity_.assign(static_cast<size_t>(p_), 0.0f);
  }
  ~HogwildTrainer() override { stop_workers(); }

  // Between epochs the workers wait: the parent writes the shared parameters alone.
  void set_params(const std::vector<float>& params) override {
    model_.set_params(params);
    reset_optimizer_ = true;
    if (pids_.empty()) start_workers();
  }
  std::vector<float> params() const override { return {shared_, shared_ + p_}; }
  std::string precision() const override { return "fp32"; }
  int replicas() const override { return workers_; }
  double helper_cpu_s() const override {
    double s = 0;
    for (int w = 0; w < workers_; ++w) s += slots_[w].cpu_s.load(std::memory_order_relaxed);
    return s;
  }

  EvalResult evaluate() override {
    omp_set_num_threads(cfg_.threads);
    return model_.evaluate();  // in the parent, on the shared parameters, workers idle
  }

  // Per-phase times: the mean over workers of each worker's sum over its steps.
  PhaseTimes take_phase_times() override {
    PhaseTimes t = phases_;
    const double n = workers_;
    t.transfer_s /= n, t.forward_s /= n, t.backward_s /= n, t.comm_s /= n, t.optimizer_s /= n;
    phases_ = PhaseTimes{};
    return t;
  }

  EpochResult train_epoch(const EpochPlan& plan, const StepCallback& on_step) override;

 private:
  void start_workers();
  [[noreturn]] void worker_main(int w, pid_t parent, uint32_t seen);
  void worker_epoch(int w);
  double step(const int64_t* rows, int64_t count, PhaseTimes& ph);
  void wait_for_workers(uint32_t gen, const StepCallback& on_step);
  void check_workers_alive();
  void stop_workers() noexcept;

  RunConfig cfg_;
  Sgd sgd_;
  int workers_;
  CpuModel model_;  // the parent's (evaluation); each worker has its own copy since fork
  int64_t p_;
  Fault fault_;
  std::unique_ptr<SharedSegment> seg_;
  Control* ctl_ = nullptr;
  WorkerSlot* slots_ = nullptr;
  float* shared_ = nullptr;   // the parameters every worker reads and updates
  int64_t* order_ = nullptr;  // the epoch's order, copied from the plan
  std::vector<float> velocity_;  // per worker (private since fork): torch's per-process SGD state
  std::vector<pid_t> pids_;
  std::vector<bool> reaped_;
  bool reset_optimizer_ = false, in_epoch_ = false;
  int64_t worker_steps_ = 0;  // a worker's steps so far, warm-up included (TB_FAULT's step)
  PhaseTimes phases_;
};

// libgomp registers no fork handler (GCC bug 60035): a child forked while this process's
// OpenMP thread pool exists waits forever in its first parallel region for pool threads
// that fork did not copy. omp_pause_resource_all (OpenMP 5.0; libgomp joins the pool's
// threads) leaves none, so each worker starts a pool of its own (docs/decisions.md).
void HogwildTrainer::start_workers() {
  if (omp_in_parallel()) throw std::logic_error("cpu-hogwild: workers cannot be forked inside a parallel region");
  if (const int rc = omp_pause_resource_all(omp_pause_hard); rc != 0) {
    throw std::runtime_error("cpu-hogwild: the OpenMP runtime could not release its threads before fork "
                             "(omp_pause_resource_all returned " + std::to_string(rc) + ")");
  }
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t parent = ::getpid();
  const uint32_t seen = ctl_->gen.load();
  for (int w = 0; w < workers_; ++w) {
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(errno_text("cpu-hogwild: fork"));  // the destructor ends the others
    if (pid == 0) worker_main(w, parent, seen);
    pids_.push_back(pid);
    reaped_.push_back(false);
  }
}

// A worker: the parent's copy, minus its threads. It ends with _exit, never with exit():
// the parent's atexit handlers and static destructors are not the worker's to run.
void HogwildTrainer::worker_main(int w, pid_t parent, uint32_t seen) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the parent killed (kill -9): its workers go with it
  if (::getppid() != parent) ::_exit(kExitJobAborted);
  int code = 0;
  try {
    fault_.at_setup(w);  // TB_FAULT's rank is the worker index
    for (;;) {
      uint32_t g;
      while ((g = ctl_->gen.load(std::memory_order_acquire)) == seen) {
        futex_wait(&ctl_->gen, seen, 0.2);
        if (::getppid() != parent) ::_exit(kExitJobAborted);
      }
      seen = g;
      if (ctl_->command == kExit) break;
      worker_epoch(w);
      slots_[w].cpu_s.store(own_cpu_seconds(), std::memory_order_relaxed);
      slots_[w].done_gen.store(g, std::memory_order_release);  // publishes the slot's figures
      ctl_->done.fetch_add(1, std::memory_order_release);
      futex_wake(&ctl_->done);
    }
  } catch (const std::exception& e) {
    std::snprintf(slots_[w].error, kMaxError, "%s", e.what());
    slots_[w].failed.store(1, std::memory_order_release);
    code = kExitRunFailed;
  } catch (...) {
    std::snprintf(slots_[w].error, kMaxError, "unknown exception");
    slots_[w].failed.store(1, std::memory_order_release);
    code = kExitRunFailed;
  }
  std::fflush(stderr);
  ::_exit(code);
}

// One epoch of worker w: batches w, w + N, ... of the order, until a worker meets a
// non-finite loss. TB_FAULT counts the worker's steps from 1, warm-up included.
void HogwildTrainer::worker_epoch(int w) {
  WorkerSlot& me = slots_[w];
  me.steps.store(0, std::memory_order_relaxed);
  me.loss_sum = 0;
  me.nonfinite_step = -1;
  me.phases = PhaseTimes{};
  if (ctl_->reset_optimizer) std::fill(velocity_.begin(), velocity_.end(), 0.0f);
  omp_set_num_threads(cfg_.threads);
  for (int64_t s = w; s < ctl_->num_batches; s += workers_) {
    if (ctl_->stop.load(std::memory_order_relaxed)) break;
    ++worker_steps_;
    fault_.before_step(w, worker_steps_);  // throw, exit, kill, hang
    const int64_t begin = s * ctl_->batch;
    const int64_t count = std::min(ctl_->batch, ctl_->rows - begin);
    double loss = step(order_ + begin, count, me.phases);
    if (fault_.nan_at(w, worker_steps_)) loss = std::numeric_limits<double>::quiet_NaN();
    if (!std::isfinite(loss)) {
      me.nonfinite_step = s;
      ctl_->stop.store(1, std::memory_order_relaxed);
      break;
    }
    me.loss_sum += loss;
    me.last_loss.store(loss, std::memory_order_relaxed);
    me.steps.fetch_add(1, std::memory_order_relaxed);
  }
}

// cpu-omp's step on B rows, then SGD in place on the shared parameters, no lock: the
// other workers read and write them meanwhile. One worker is cpu-omp, bit for bit.
double HogwildTrainer::step(const int64_t* rows, int64_t count, PhaseTimes& ph) {
  Stopwatch sw;
  const BatchView b = model_.load_batch(rows, count);
  if (b.gathered) ph.transfer_s += sw.lap();
  double loss_sum = 0;
  if (model_.has_fused_step()) {
    loss_sum = model_.fused_step(b, count, count);  // forward_s holds the backward too
    ph.forward_s += sw.lap();
  } else {
    model_.forward(b.x, count);
    loss_sum = model_.loss(b, count, count, true, nullptr);
    ph.forward_s += sw.lap();
    model_.backward(b.x, count);
    ph.backward_s += sw.lap();
  }
  cpu::sgd_update(shared_, model_.grads().data(), velocity_.empty() ? nullptr : velocity_.data(), p_, sgd_.lr,
                  sgd_.momentum, sgd_.weight_decay);
  ph.optimizer_s += sw.lap();
  return loss_sum / static_cast<double>(count);
}

EpochResult HogwildTrainer::train_epoch(const EpochPlan& plan, const StepCallback& on_step) {
  if (pids_.empty()) throw std::logic_error("cpu-hogwild: set_params() before train_epoch()");
  in_epoch_ = true;
  // The workers read the epoch's order from the segment (8 bytes a row, copied every epoch:
  // a caller may refill one vector in place, and the workers cannot see the parent's heap).
  std::memcpy(order_, plan.order->data(), sizeof(int64_t) * static_cast<size_t>(plan.rows));
  ctl_->command = kEpoch;
  ctl_->batch = plan.batch;
  ctl_->num_batches = plan.num_batches;
  ctl_->rows = plan.rows;
  ctl_->reset_optimizer = reset_optimizer_;
  ctl_->stop.store(0, std::memory_order_relaxed);
  reset_optimizer_ = false;
  const uint32_t gen = ctl_->gen.fetch_add(1, std::memory_order_release) + 1;
  futex_wake(&ctl_->gen);
  wait_for_workers(gen, on_step);

  EpochResult r;
  double sum = 0;
  for (int w = 0; w < workers_; ++w) {
    const WorkerSlot& s = slots_[w];
    r.steps += s.steps.load(std::memory_order_relaxed);
    sum += s.loss_sum;
    if (s.nonfinite_step >= 0 && (r.nonfinite_step < 0 || s.nonfinite_step < r.nonfinite_step)) {
      r.nonfinite_step = s.nonfinite_step;
    }
    phases_ += s.phases;
  }
  r.mean_loss = r.steps ? sum / static_cast<double>(r.steps) : 0.0;
  in_epoch_ = false;
  return r;
}

// Until every worker has finished command `gen`: progress to on_step, and an exception
// when a worker died or failed, when no worker took a step for --comm-timeout seconds, or
// on SIGINT/SIGTERM (the destructor then ends the workers).
void HogwildTrainer::wait_for_workers(uint32_t gen, const StepCallback& on_step) {
  Stopwatch quiet;
  int64_t last_total = 0;
  for (;;) {
    bool all = true;
    for (int w = 0; w < workers_; ++w) all &= slots_[w].done_gen.load(std::memory_order_acquire) == gen;
    if (all) return;
    const uint32_t d = ctl_->done.load(std::memory_order_acquire);
    futex_wait(&ctl_->done, d, kPollSeconds);
    check_workers_alive();
    throw_if_interrupted();
    int64_t total = 0;
    double loss = 0;
    for (int w = 0; w < workers_; ++w) {
      const int64_t s = slots_[w].steps.load(std::memory_order_relaxed);
      if (s > 0) loss = slots_[w].last_loss.load(std::memory_order_relaxed);
      total += s;
    }
    if (total != last_total) {
      last_total = total;
      quiet.restart();
      if (on_step && total > 0) on_step(total - 1, loss);
    } else if (quiet.seconds() > cfg_.comm_timeout_s) {
      std::string stuck;
      for (int w = 0; w < workers_; ++w) {
        if (slots_[w].done_gen.load() != gen) stuck += (stuck.empty() ? "" : ", ") + std::to_string(w);
      }
      throw std::runtime_error("cpu-hogwild: no worker took a step for " + seconds_text(cfg_.comm_timeout_s) +
                               " s (--comm-timeout); unfinished: worker " + stuck);
    }
  }
}

// Throws naming the first worker that has ended (they end only when told to).
void HogwildTrainer::check_workers_alive() {
  for (int w = 0; w < workers_; ++w) {
    if (reaped_[w]) continue;
    int st = 0;
    if (::waitpid(pids_[w], &st, WNOHANG) != pids_[w]) continue;
    reaped_[w] = true;
    std::string why = "cpu-hogwild: worker " + std::to_string(w) + " of " + std::to_string(workers_);
    if (slots_[w].failed.load(std::memory_order_acquire)) {
      why += " failed: " + std::string(slots_[w].error);
    } else if (WIFSIGNALED(st)) {
      why += " was killed by signal " + std::to_string(WTERMSIG(st)) + " (" + strsignal(WTERMSIG(st)) + ")";
    } else {
      why += " exited with status " + std::to_string(WEXITSTATUS(st));
    }
    throw std::runtime_error(why);
  }
}

// Idle workers are told to exit and given a second; workers still in an epoch (the run
// failed or was interrupted) and stragglers are killed. Every worker is reaped.
void HogwildTrainer::stop_workers() noexcept {
  if (pids_.empty()) return;
  if (!in_epoch_) {
    ctl_->command = kExit;
    ctl_->gen.fetch_add(1, std::memory_order_release);
    futex_wake(&ctl_->gen);
    Stopwatch sw;
    for (bool left = true; left && sw.seconds() < 1.0;) {
      left = false;
      for (size_t w = 0; w < pids_.size(); ++w) {
        int st = 0;
        if (!reaped_[w] && ::waitpid(pids_[w], &st, WNOHANG) == pids_[w]) reaped_[w] = true;
        left |= !reaped_[w];
      }
      if (left) ::usleep(1000);
    }
  }
  for (size_t w = 0; w < pids_.size(); ++w) {
    if (reaped_[w]) continue;
    ::kill(pids_[w], SIGKILL);
    int st = 0;
    while (::waitpid(pids_[w], &st, 0) < 0 && errno == EINTR) {}
    reaped_[w] = true;
  }
}

class CpuHogwildBackend final : public Backend {
 public:
  std::string name() const override { return "cpu-hogwild"; }
  std::string description() const override {
    return "N forked processes x T threads, lock-free SGD on shared parameters (Hogwild!)";
  }
  BackendTraits traits() const override {
    BackendTraits t;
    t.parallelism = Parallelism::kSharedMemory;
    t.cpu_threads = true;
    t.asynchronous = true;
    t.knobs = kKnobWorkers;
    t.scaling_base = "cpu-omp";
    return t;
  }
  Availability availability() const override { return {true, ""}; }
  std::unique_ptr<Trainer> make_trainer(const Dataset& data, const RunConfig& cfg, Job&) const override {
    return std::make_unique<HogwildTrainer>(data, cfg);
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_hogwild_backend() { return std::make_unique<CpuHogwildBackend>(); }

}  // namespace tb
