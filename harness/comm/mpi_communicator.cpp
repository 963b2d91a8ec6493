// harness/comm/mpi_communicator.cpp — Communicator over MPI (CPU buffers) and the
// collective watchdog. Every collective is bracketed by Watch: the watchdog thread
// sees how long the current one has run and, past the deadline, prints which rank
// and which call, then MPI_Abort()s the job — the rest of the ranks die with it
// instead of blocking forever on a peer that hung or vanished.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "harness/comm/mpi_session.h"

namespace tb {
namespace {

#define TB_MPI_CHECK(stmt)                                                                          \
  do {                                                                                              \
    const int tb_mpi_rc_ = (stmt);                                                                  \
    if (tb_mpi_rc_ != MPI_SUCCESS) {                                                                \
      char tb_msg_[MPI_MAX_ERROR_STRING];                                                           \
      int tb_len_ = 0;                                                                              \
      MPI_Error_string(tb_mpi_rc_, tb_msg_, &tb_len_);                                              \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + " " +       \
                               __func__ + ": " #stmt " failed: " + std::string(tb_msg_, tb_len_)); \
    }                                                                                               \
  } while (0)

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Flushes what this rank printed, then waits a moment before MPI_Abort. The launcher
// forwards each rank's output through a pipe it reads when it gets around to it; told to
// abort, it kills every rank and exits, and what still sat in the pipe (the very line that
// says why) was lost: MPICH's Hydra dropped all of a job's output in about 1 of 150
// aborts on a loaded 2-core machine. Half a second lets it read the pipe; the job still
// ends within seconds of the fault.
void flush_before_abort() {
  std::fflush(stdout);
  std::fflush(stderr);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(double deadline_s, bool abort_from_thread)
      : deadline_s_(deadline_s), abort_from_thread_(abort_from_thread) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_free(&local);
    // Errors come back as codes (turned into exceptions), not as MPI's default abort.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (deadline_s_ > 0 && size_ > 1) watchdog_ = std::thread([this] { watch(); });
  }

  ~MpiCommunicator() override { stop_watchdog(); }

  // Must run before MPI_Finalize: the watchdog may call MPI_Abort.
  void stop_watchdog() {
    stop_ = true;
    if (watchdog_.joinable()) watchdog_.join();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  std::string name() const override { return "mpi"; }

  void allreduce_sum(float* data, int64_t n) override {
    Watch w(this, "MPI_Allreduce");
    TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, count(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
  }
  void allreduce_sum(double* data, int64_t n) override {
    Watch w(this, "MPI_Allreduce");
    TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, count(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
  }
  void allreduce_max(double* data, int64_t n) override {
    Watch w(this, "MPI_Allreduce(max)");
    TB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, count(n), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  }

  int iallreduce_sum(float* data, int64_t n) override {
    MPI_Request req;
    TB_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, data, count(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req));
    requests_.push_back(req);
    waited_.push_back(false);
    return static_cast<int>(requests_.size()) - 1;
  }
  void wait(int handle) override {
    Watch w(this, "MPI_Wait(Iallreduce)");
    const auto h = static_cast<size_t>(handle);
    TB_MPI_CHECK(MPI_Wait(&requests_.at(h), MPI_STATUS_IGNORE));  // a request poke() completed is NULL: fine
    waited_.at(h) = true;
    // Slots are recycled only once the caller has waited for every handle it holds.
    if (std::all_of(waited_.begin(), waited_.end(), [](bool b) { return b; })) {
      requests_.clear();
      waited_.clear();
    }
  }
  void poke() override {
    for (MPI_Request& r : requests_) {
      if (r == MPI_REQUEST_NULL) continue;
      int done = 0;
      TB_MPI_CHECK(MPI_Test(&r, &done, MPI_STATUS_IGNORE));
    }
  }

  void allgather(const float* send, int64_t n, float* recv) override {
    Watch w(this, "MPI_Allgather");
    TB_MPI_CHECK(MPI_Allgather(send, count(n), MPI_FLOAT, recv, count(n), MPI_FLOAT, MPI_COMM_WORLD));
  }
  void allgather(const double* send, int64_t n, double* recv) override {
    Watch w(this, "MPI_Allgather");
    TB_MPI_CHECK(MPI_Allgather(send, count(n), MPI_DOUBLE, recv, count(n), MPI_DOUBLE, MPI_COMM_WORLD));
  }

  void broadcast(float* data, int64_t n, int root) override {
    Watch w(this, "MPI_Bcast");
    TB_MPI_CHECK(MPI_Bcast(data, count(n), MPI_FLOAT, root, MPI_COMM_WORLD));
  }
  void broadcast(char* data, int64_t n, int root) override {
    Watch w(this, "MPI_Bcast");
    TB_MPI_CHECK(MPI_Bcast(data, count(n), MPI_CHAR, root, MPI_COMM_WORLD));
  }
  void barrier() override {
    Watch w(this, "MPI_Barrier");
    TB_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
  }

  [[noreturn]] void abort(int code, const std::string& why) override {
    std::fprintf(stderr, "trainbench: rank %d: %s; aborting the job\n", rank_, why.c_str());
    flush_before_abort();
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort does not return; this satisfies [[noreturn]]
  }

 private:
  // Marks the span of one collective for the watchdog.
  struct Watch {
    Watch(MpiCommunicator* c, const char* what) : c_(c) {
      c_->what_ = what;
      c_->since_ = now_s();
    }
    ~Watch() { c_->since_ = 0; }
    MpiCommunicator* c_;
  };

  static int count(int64_t n) {
    if (n > INT32_MAX) throw std::length_error("MPI count over 2^31 elements");
    return static_cast<int>(n);
  }

  void watch() {
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const double since = since_;
      if (since > 0 && now_s() - since > deadline_s_) {
        std::fprintf(stderr,
                     "trainbench: rank %d: %s did not complete within %.0f s (a peer rank died or hung); "
                     "aborting the job\n",
                     rank_, what_.load(), deadline_s_);
        flush_before_abort();
        // MPI_Abort from this thread needs MPI_THREAD_MULTIPLE; without it, exiting
        // is enough: mpirun ends the job when one rank dies without MPI_Finalize.
        if (abort_from_thread_) MPI_Abort(MPI_COMM_WORLD, 3);
        std::_Exit(3);
      }
    }
  }

  int rank_ = 0, size_ = 1, local_rank_ = 0;
  double deadline_s_;
  bool abort_from_thread_;
  std::vector<MPI_Request> requests_;
  std::vector<bool> waited_;
  std::atomic<double> since_{0};
  std::atomic<const char*> what_{""};
  std::atomic<bool> stop_{false};
  std::thread watchdog_;
};

std::mutex g_mutex;
std::shared_ptr<MpiCommunicator> g_world;

// MPI_Init returns once every rank of the job has joined; a rank that never does
// (stopped, hung or killed before it got there) would hold the others in it for ever,
// out of the collective watchdog's reach. The same deadline ends this process, with a
// floor: ranks start seconds apart on a loaded machine or across nodes. The launcher
// then ends the job (a rank exited without MPI_Finalize).
class InitWatch {
 public:
  static constexpr double kFloorS = 30;
  explicit InitWatch(double deadline_s) {
    if (deadline_s <= 0) return;
    const double limit = std::max(deadline_s, kFloorS);
    thread_ = std::thread([this, limit] {
      std::unique_lock<std::mutex> lock(m_);
      if (cv_.wait_for(lock, std::chrono::duration<double>(limit), [this] { return done_; })) return;
      std::fprintf(stderr,
                   "trainbench: pid %d: MPI_Init did not complete within %.0f s (a rank of this job did not start, "
                   "was stopped or hung before joining it); ending this rank\n",
                   static_cast<int>(::getpid()), limit);
      flush_before_abort();
      std::_Exit(3);
    });
  }
  ~InitWatch() {
    {
      std::lock_guard<std::mutex> lock(m_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  InitWatch(const InitWatch&) = delete;
  InitWatch& operator=(const InitWatch&) = delete;

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

std::shared_ptr<Communicator> mpi_world(double deadline_s) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_world) {
    int inited = 0, provided = MPI_THREAD_SINGLE;
    MPI_Initialized(&inited);
    if (!inited) {
      const InitWatch watch(deadline_s);
      TB_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
    } else {
      MPI_Query_thread(&provided);
    }
    g_world = std::make_shared<MpiCommunicator>(deadline_s, provided >= MPI_THREAD_MULTIPLE);
  }
  return g_world;
}

bool mpi_active() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_world != nullptr;
}

void mpi_finalize_if_initialised() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_world) g_world->stop_watchdog();  // callers may still hold the communicator
  g_world.reset();
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (inited && !finalized) MPI_Finalize();
}

}  // namespace tb
