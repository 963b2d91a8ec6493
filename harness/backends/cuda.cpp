// harness/backends/cuda.cpp — `cuda`: one GPU = one CudaModel (cuda_model.h: the math,
// parameters, gradients, optimizer state, activations) + data placement, the GPU twin of
// cpu-omp; with a communicator and the NCCL GradReducer also one rank of cuda-ddp
// (cuda_parallel.h). Shapes: B rows per batch, D in, O out, P parameters.
//
// Every buffer is allocated in the constructor (no allocation and no host sync inside
// a step: the loss of each step is accumulated on the device and read once per epoch).
// Data placement: `device` uploads the dataset before each repetition's timed epochs
// (prepare_repetition, its own columns) and gathers/reads batches on the device; `host` registers the
// host dataset as pinned, mapped memory and a copy stream stages batch s+1 into one
// of two device buffers while batch s computes (double buffering, ordered by events;
// the buffers: cuda_staging.h).
// Timing: CUDA events recorded in-stream at each phase boundary of the steps that
// phase_sample.h picks (a fixed pool, at most kMaxTimedSteps steps per epoch; none with
// --phase-timing off), read in take_phase_times(), which the runner calls after its
// stopwatch stops: nothing is read inside the timed epoch. --cuda-graph captures
// forward+loss+backward+update of a full batch once per input address and replays it
// (CudaModel::graphed_step; per-phase split then not measured).
#include <memory>
#include <stdexcept>
#include <string>

#include "harness/backend.h"
#include "harness/host_info.h"
#include "kernels/error.h"

#if defined(TB_HAVE_CUDA_BACKEND)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/backend.h"
#include "harness/backends/cuda_model.h"
#include "harness/backends/cuda_parallel.h"
#include "harness/backends/cuda_staging.h"
#include "harness/backends/device_memory.h"
#include "harness/backends/cuda_upload.h"
#include "harness/backends/phase_sample.h"
#include "harness/ddp_plan.h"
#include "harness/fault_plan.h"
#include "harness/host_info.h"
#include "harness/rank_data.h"
#include "harness/backends/step_losses.h"
#include "harness/backends/transfer_schedule.h"
#include "kernels/cuda/check.h"

namespace tb {
namespace {

// --cuda-graph with unshuffled resident data: one graph per step up to this many
// steps per epoch (each an eager step, a capture and an instantiation in the first
// epoch, and device memory for its nodes that no GPU run has measured yet), else a copy
// of each batch into one staging buffer and one graph.
constexpr int64_t kMaxStepGraphs = 1024;

// Phase boundaries of one step: [0] start, [1] batch ready, [2] forward+loss done,
// [3] backward done, [4] gradients reduced (data-parallel ranks), [5] update done.
constexpr int kMarks = 6;

// The model: activations and deltas for a batch (this rank's shard fits) or an evaluation chunk.
CudaModelSize cuda_model_size(const Dataset& data, const RunConfig& cfg) {
  const int64_t rows = std::max(cfg.batch, std::min(kEvalChunk, data.n));
  return CudaModelSize{rows, rows, false};
}

}  // namespace

int64_t cuda_trainer_device_bytes(const Dataset& data, const RunConfig& cfg) {
  const int64_t max_rows = std::max(cfg.batch, std::min(kEvalChunk, data.n));
  int64_t floats = 2 * max_rows * (data.d + data.o);  // the staging buffers
  if (cfg.data_on_device()) floats += data.held_rows() * (data.d + data.o);
  return CudaModel::device_bytes(cfg.model, cuda_model_size(data, cfg)) + floats * 4 + data.n * 8;
}

namespace {

class CudaTrainer final : public Trainer {
 public:
  CudaTrainer(const Dataset& data, const RunConfig& cfg, CudaParallel parallel)
      : data_(data), cfg_(cfg), sgd_(sgd_of(cfg)), par_(std::move(parallel)) {
    if (par_.world) {
      rank_ = par_.world->rank();
      world_size_ = par_.world->size();
    }
    if (world_size_ > 1) fault_ = fault_from_env();
    fault_.at_setup(rank_);
    devices_ = std::to_string(cfg.device);
    char bus[32] = {};  // context-free: names the device, makes no context
    TB_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, cfg.device));
    bus_ids_ = pci_bus_normal(bus);
    if (world_size_ > 1) {  // cuda-ddp's row names every rank's GPU (a collective: all ranks construct)
      // (GPU, 32-bit hash of the hostname, PCI bus id as a number): all exact in a double.
      const uint32_t host = static_cast<uint32_t>(std::hash<std::string>{}(host_info().hostname));
      const double mine[3] = {static_cast<double>(cfg.device), static_cast<double>(host), pci_bus_key(bus_ids_)};
      std::vector<double> all(static_cast<size_t>(3 * world_size_));
      par_.world->allgather(mine, 3, all.data());
      std::vector<int> device;
      std::vector<uint32_t> node;
      std::vector<std::string> buses;
      for (int r = 0; r < world_size_; ++r) {
        device.push_back(static_cast<int>(all[static_cast<size_t>(3 * r)]));
        node.push_back(static_cast<uint32_t>(all[static_cast<size_t>(3 * r + 1)]));
        buses.push_back(pci_bus_text(all[static_cast<size_t>(3 * r + 2)]));
      }
      devices_ = rank_devices(device, node);
      bus_ids_ = rank_bus_ids(buses, node);
    }
    if (cfg.cuda_graph && par_.reducer) {  // any world size, 1 included
      throw Error("--cuda-graph: not supported with cuda-ddp (the NCCL reduction is not captured)");
    }
    try {
      acquire();
    } catch (...) {
      release();  // a constructor that throws gets no destructor call
      cuda::set_expected_device_bytes(0);
      throw;
    }
  }

  ~CudaTrainer() override {
    release();
    cuda::set_expected_device_bytes(0);
  }

 private:
  // The constructor's work: the model (stream, cuBLAS handle, buffers), the copy
  // stream, events, batch staging, device and pinned memory, host registrations — each
  // recorded in a member as soon as it exists, for release().
  void acquire() {
    const Dataset& data = data_;
    const RunConfig& cfg = cfg_;
    TB_CUDA_CHECK(cudaSetDevice(cfg.device));
    meter_.start(cfg.device, par_.device_free_at_start);  // cuda-ddp: read before its NCCL communicator
    const int64_t D = data.d, O = data.o, n = data.n;
    const bool cls = data.task == Task::kClassification;
    max_rows_ = std::max(cfg.batch, std::min(kEvalChunk, n));
    check_memory_fits();

    model_ = std::make_unique<CudaModel>(cfg.model, cfg.device, model_size(), cfg.precision == "tf32");
    compute_ = model_->stream();
    DeviceArena& arena = model_->arena();
    TB_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
    staging_.acquire(arena, max_rows_, D, O, cls);
    order_ = arena.alloc<int64_t>(n);
    max_steps_ = (n + cfg.batch - 1) / cfg.batch;
    step_loss_ = arena.alloc<double>(max_steps_);
    if (cfg.cuda_graph) step_next_ = arena.alloc<unsigned long long>(1);
    TB_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&step_loss_host_),
                                 sizeof(double) * static_cast<size_t>(max_steps_)));

    if (cfg.data_on_device()) {  // the rows this process holds (a DDP rank: its rows, rank_data.h)
      const int64_t held = data.held_rows();
      xd_ = arena.alloc<float>(held * D);
      if (cls) ld_ = arena.alloc<int32_t>(held);
      else yd_ = arena.alloc<float>(held * O);
    } else {
      // Pinned + mapped: the copy stream reads batches straight from host memory.
      register_host(data.x.data(), data.x.size() * sizeof(float), &xd_);
      if (cls) register_host(data.labels.data(), data.labels.size() * sizeof(int32_t), &ld_);
      else register_host(data.y.data(), data.y.size() * sizeof(float), &yd_);
    }
    if (par_.reducer) par_.reducer->bind(GradBuffer{model_->grads(), compute_}, model_->layout());
    // The phase events: a fixed pool, however many steps an epoch has (phase_sample.h).
    if (cfg.phase_timing) marks_.resize(static_cast<size_t>(kMaxTimedSteps * kMarks));
    for (cudaEvent_t& e : marks_) TB_CUDA_CHECK(cudaEventCreate(&e));
    TB_CUDA_CHECK(cudaEventCreate(&upload_start_));
    TB_CUDA_CHECK(cudaEventCreate(&upload_end_));
    meter_.sample();  // what setup took beyond the arena: cuBLAS, the runtime's own
  }

  // Everything acquire() got, however far it went; the model last (it frees the memory).
  void release() noexcept {
    cudaSetDevice(cfg_.device);
    // After an error mid-epoch, queued work may still read the mapped host data or
    // write the pinned loss buffer: drain both streams before releasing them.
    if (copy_) TB_CUDA_WARN(cudaStreamSynchronize(copy_));
    if (compute_) TB_CUDA_WARN(cudaStreamSynchronize(compute_));
    for (cudaEvent_t e : marks_) {
      if (e) TB_CUDA_WARN(cudaEventDestroy(e));
    }
    staging_.release();
    if (upload_start_) TB_CUDA_WARN(cudaEventDestroy(upload_start_));
    if (upload_end_) TB_CUDA_WARN(cudaEventDestroy(upload_end_));
    for (void* p : registered_) TB_CUDA_WARN(cudaHostUnregister(p));
    if (step_loss_host_) TB_CUDA_WARN(cudaFreeHost(step_loss_host_));
    if (copy_) TB_CUDA_WARN(cudaStreamDestroy(copy_));
    model_.reset();
    compute_ = copy_ = nullptr;
  }

 public:
  void set_params(const std::vector<float>& params_in) override {
    TB_CUDA_CHECK(cudaSetDevice(cfg_.device));
    std::vector<float> params = params_in;
    if (par_.world) par_.world->broadcast(params.data(), static_cast<int64_t>(params.size()), 0);  // rank 0's wins
    model_->set_params(params);
    TB_CUDA_CHECK(cudaStreamSynchronize(compute_));
    needs_upload_ = cfg_.data_on_device();  // each repetition starts by uploading its data
  }

  std::vector<float> params() const override { return model_->read_params(); }

  // Device placement: the dataset to the device, once per repetition, before the timed
  // epochs (from pageable memory, as tensor.to("cuda") of an unpinned tensor).
  UploadFigures prepare_repetition() override {
    if (!needs_upload_) return {};
    TB_CUDA_CHECK(cudaSetDevice(cfg_.device));
    needs_upload_ = false;
    return upload_dataset(data_, xd_, yd_, ld_, compute_, upload_start_, upload_end_);
  }

  std::string precision() const override { return cfg_.precision; }
  std::string devices() const override { return devices_; }
  std::vector<int> gpus() const override { return {cfg_.device}; }
  std::string gpu_bus_ids() const override { return bus_ids_; }
  // The arena, or more where cudaMemGetInfo saw more go (cuBLAS, NCCL, graph executables):
  // read after training, outside the timed epochs.
  int64_t peak_device_mem_bytes() const override {
    meter_.sample();
    return std::max(model_->arena().held_bytes(), meter_.most_bytes());
  }
  int64_t allreduce_bytes_per_step() const override { return par_.reducer ? par_.reducer->bytes_per_step() : 0; }
  double allreduce_busy_s() const override { return last_busy_s_; }
  int64_t allreduce_steps() const override { return last_busy_steps_; }

  // Reads the last epoch's phase events and reduction times (after the runner's
  // stopwatch has stopped), then hands over and resets the accumulators.
  PhaseTimes take_phase_times() override {
    collect_epoch_timing();
    PhaseTimes t = phases_;
    phases_ = PhaseTimes{};
    last_busy_s_ = busy_s_;
    last_busy_steps_ = busy_steps_;
    busy_s_ = 0;
    busy_steps_ = 0;
    return t;
  }

  EpochResult train_epoch(const EpochPlan& plan, const StepCallback& on_step) override {
    TB_CUDA_CHECK(cudaSetDevice(cfg_.device));
    // A caller that is not the runner (tests) may skip prepare_repetition() and
    // take_phase_times() between epochs: both happen here then, inside its epoch.
    collect_epoch_timing();
    if (needs_upload_) prepare_repetition();
    sample_ = PhaseSample(plan.num_batches);
    graphed_in_epoch_ = 0;
    // The epoch's visiting order (indices of held rows), for the gathers when a
    // step's rows are not consecutive (shuffled) — one small copy.
    host_order_ = plan.order->data();
    const bool shuffled = !shards_in_place(*plan.order, plan.batch, plan.num_batches, plan.rows, rank_, world_size_);
    if (shuffled) {  // on the stream that gathers: copy (host placement) or compute
      TB_CUDA_CHECK(cudaMemcpyAsync(order_, plan.order->data(), plan.order->size() * sizeof(int64_t),
                                    cudaMemcpyHostToDevice, cfg_.data_on_device() ? compute_ : copy_));
    }
    TB_CUDA_CHECK(cudaMemsetAsync(step_loss_, 0, sizeof(double) * static_cast<size_t>(plan.num_batches), compute_));
    if (step_next_) TB_CUDA_CHECK(cudaMemsetAsync(step_next_, 0, sizeof(unsigned long long), compute_));
    if (par_.reducer) par_.reducer->begin_epoch(plan.num_batches);
    // Global batch s has rows_of(s) rows; this rank trains its shard of them.
    auto rows_of = [&](int64_t step) { return std::min(plan.batch, plan.rows - step * plan.batch); };
    auto shard = [&](int64_t step) {
      const Shard sh = shard_of(rows_of(step), rank_, world_size_);
      return std::pair<int64_t, int64_t>{step * plan.batch + sh.begin, sh.end - sh.begin};
    };
    if (cfg_.data_on_device()) {
      for (int64_t s = 0; s < plan.num_batches; ++s) {
        maybe_inject_fault(s);
        cudaEvent_t* mk = marks_of(s);
        const auto [begin, local] = shard(s);
        mark(mk, 0);
        const Batch b = local > 0 ? device_batch(plan, begin, local, shuffled) : Batch{};
        mark(mk, 1);
        train_step(b, local, rows_of(s), plan.batch, s);
      }
    } else {
      // Host placement: the double-buffer schedule (harness/backends/transfer_schedule.h).
      TB_CUDA_CHECK(cudaEventRecord(staging_.consumed(0), compute_));
      TB_CUDA_CHECK(cudaEventRecord(staging_.consumed(1), compute_));
      for (const StagingOp& op : double_buffer_schedule(plan.num_batches)) {
        cudaEvent_t* mk = marks_of(op.step);
        switch (op.kind) {
          case StagingOp::kCopyWaitsConsumed:
            TB_CUDA_CHECK(cudaStreamWaitEvent(copy_, staging_.consumed(op.buffer), 0));
            break;
          case StagingOp::kCopyFills: {
            const auto [begin, local] = shard(op.step);
            if (local > 0) fill(op.buffer, begin, local, shuffled, copy_);
            break;
          }
          case StagingOp::kCopyRecordsStaged:
            TB_CUDA_CHECK(cudaEventRecord(staging_.staged(op.buffer), copy_));
            break;
          case StagingOp::kComputeWaitsStaged:  // the wait is what transfer costs the step
            mark(mk, 0);
            TB_CUDA_CHECK(cudaStreamWaitEvent(compute_, staging_.staged(op.buffer), 0));
            mark(mk, 1);
            break;
          case StagingOp::kComputeTrains:
            maybe_inject_fault(op.step);
            train_step(staging_.batch(op.buffer), shard(op.step).second, rows_of(op.step), plan.batch, op.step);
            break;
          case StagingOp::kComputeRecordsConsumed:
            TB_CUDA_CHECK(cudaEventRecord(staging_.consumed(op.buffer), compute_));
            break;
        }
      }
    }
    for (int64_t s : nan_steps_) {  // TB_FAULT kind=nan (test only): all-ones bytes are a NaN double
      TB_CUDA_CHECK(cudaMemsetAsync(step_loss_ + s, 0xFF, sizeof(double), compute_));
    }
    nan_steps_.clear();
    // The epoch's one synchronisation: the per-step losses. Its phase events and
    // reduction times are read later, in take_phase_times().
    TB_CUDA_CHECK(cudaMemcpyAsync(step_loss_host_, step_loss_, sizeof(double) * static_cast<size_t>(plan.num_batches),
                                  cudaMemcpyDeviceToHost, compute_));
    TB_CUDA_CHECK(cudaStreamSynchronize(compute_));
    timing_pending_ = true;
    pending_batch_ = plan.batch;
    pending_rows_ = plan.rows;
    // Every rank sees the global step losses, so all stop at the same non-finite step.
    if (par_.world) par_.world->allreduce_sum(step_loss_host_, plan.num_batches);

    return epoch_result_from_sums(step_loss_host_, plan, model_->loss_per_row(), on_step);
  }

  EvalResult evaluate() override {
    TB_CUDA_CHECK(cudaSetDevice(cfg_.device));
    if (needs_upload_) prepare_repetition();
    // Each rank evaluates its rows (rank_data.h): one range of held rows when unshuffled.
    double loss_sum = 0;
    int64_t hits = 0;
    model_->evaluate_rows(contiguous(0), eval_ranges(data_, cfg_.batch, rank_, world_size_), &loss_sum, &hits);
    if (par_.world) {
      double sums[2] = {loss_sum, static_cast<double>(hits)};
      par_.world->allreduce_sum(sums, 2);
      loss_sum = sums[0];
      hits = static_cast<int64_t>(sums[1]);
    }
    EvalResult e;
    e.loss = loss_sum / (static_cast<double>(data_.n) * model_->loss_per_row());
    if (data_.task == Task::kClassification) e.accuracy = static_cast<double>(hits) / static_cast<double>(data_.n);
    return e;
  }

 private:
  using Batch = DeviceBatch;

  CudaModelSize model_size() const { return cuda_model_size(data_, cfg_); }

  // Bytes the constructor will allocate; refuses early with the numbers when they cannot fit.
  void check_memory_fits() const {
    const int64_t bytes = cuda_trainer_device_bytes(data_, cfg_);
    cuda::set_expected_device_bytes(bytes);  // the "needs" of any out-of-memory error that follows
    const int64_t free_b = DeviceMemoryMeter::free_now();
    if (bytes > free_b) throw DeviceOutOfMemory(cuda::device_oom_text(bytes, free_b) + ": refused before allocating");
  }

  template <class T>
  void register_host(const T* host, size_t bytes, T** device_view) {
    // A DDP rank can hold no rows at all (a global batch smaller than the world):
    // nothing to register (CUDA refuses 0 bytes), and nothing will be read.
    if (bytes == 0) return;
    void* p = const_cast<T*>(host);
    TB_CUDA_CHECK(cudaHostRegister(p, bytes, cudaHostRegisterMapped));
    registered_.push_back(p);
    void* dev = nullptr;
    TB_CUDA_CHECK(cudaHostGetDevicePointer(&dev, p, 0));
    *device_view = static_cast<T*>(dev);
  }

  // Held rows from r0 on, read in place from the (device or mapped) dataset.
  Batch contiguous(int64_t r0) const { return rows_from(xd_, yd_, ld_, r0, data_.d, data_.o); }

  // Writes the rows at order positions [begin, begin + count) into staging buffer i
  // on `stream`: a gather (shuffled) or one copy of consecutive rows.
  void fill(int i, int64_t begin, int64_t count, bool shuffled, cudaStream_t stream) {
    const int64_t r0 = shuffled ? 0 : host_order_[begin];
    staging_.fill(i, Batch{xd_, yd_, ld_}, order_ + begin, r0, count, shuffled, stream);
  }

  // Device placement: a batch is read in place when unshuffled, else gathered on
  // the device into staging buffer 0. A graphed step reads in place too (a graph per
  // input address: one per step, so no copy precedes the replay) unless the epoch has
  // more than kMaxStepGraphs full batches: then every step's rows are first copied into
  // buffer 0, one graph for all.
  Batch device_batch(const EpochPlan& plan, int64_t begin, int64_t count, bool shuffled) {
    const bool graphed = cfg_.cuda_graph && count == plan.batch;
    if (!shuffled && (!graphed || plan.num_batches <= kMaxStepGraphs)) return contiguous(host_order_[begin]);
    fill(0, begin, count, shuffled, compute_);
    return staging_.batch(0);
  }

  // Forward + loss + backward (+ gradient reduction) + update of step s on this
  // rank's `count` rows of a global batch of `global` rows (marks 2..5 after it);
  // replayed from a graph for full batches with --cuda-graph (one GPU only).
  void train_step(const Batch& b, int64_t count, int64_t global, int64_t full_batch, int64_t s) {
    cudaEvent_t* mk = marks_of(s);
    CudaModel& m = *model_;
    if (cfg_.cuda_graph && count == full_batch) {
      // The graph writes its loss into slot *step_next_ (zeroed per epoch) and advances
      // it: that is slot s because the graphed steps are the epoch's full batches, which
      // all come before its one short batch.
      if (graphed_in_epoch_ != s) throw std::logic_error("cuda: a graphed step after an eager one in an epoch");
      ++graphed_in_epoch_;
      m.graphed_step(b, count, sgd_, step_loss_, step_next_);
      return;  // marks 2..5 not recorded: one launch, no phases inside it
    }
    if (count > 0 && m.has_fused_step()) {
      // Linear regression: forward, loss and gradients in one pass over X (so forward_s
      // holds the backward too, as on cpu-omp); its one layer goes to the reducer after.
      m.fused_step(b, count, global, step_loss_ + s);
      mark(mk, 2);
      if (par_.reducer) par_.reducer->layer_ready(s, 0);
    } else if (count > 0) {
      m.forward(b.x, count);
      m.loss(b, count, global, m.delta(), step_loss_ + s, nullptr);
      mark(mk, 2);
      // A data-parallel rank hands each finished layer to the reducer.
      if (par_.reducer) m.backward(b.x, count, [this, s](int layer) { par_.reducer->layer_ready(s, layer); });
      else m.backward(b.x, count);
    } else {  // an empty shard (global batch smaller than the world) contributes zeros
      TB_CUDA_CHECK(cudaMemsetAsync(m.grads(), 0, static_cast<size_t>(m.layout().total) * sizeof(float), compute_));
      mark(mk, 2);
      if (par_.reducer) {
        for (int l = cfg_.model.num_layers() - 1; l >= 0; --l) par_.reducer->layer_ready(s, l);
      }
    }
    mark(mk, 3);
    if (par_.reducer) par_.reducer->finish(s);
    mark(mk, 4);
    m.update(sgd_);
    mark(mk, 5);
  }

  // Test-only faults for data-parallel ranks (TB_FAULT, ddp_plan.h) before step s of the
  // epoch. `nan`: this rank's loss of that step and every later one becomes NaN (written
  // after the epoch's steps, before the losses are read; other ranks learn it through the
  // epoch's loss all-reduce).
  void maybe_inject_fault(int64_t s) {
    ++steps_;
    fault_.before_step(rank_, steps_);
    if (fault_.nan_at(rank_, steps_)) nan_steps_.push_back(s);
  }

  // Step s's phase events, or null when it is not timed (phase_sample.h; --phase-timing off).
  cudaEvent_t* marks_of(int64_t s) {
    const int64_t slot = marks_.empty() ? -1 : sample_.slot(s);
    return slot < 0 ? nullptr : &marks_[static_cast<size_t>(slot * kMarks)];
  }
  void mark(cudaEvent_t* mk, int k) {
    if (mk) TB_CUDA_CHECK(cudaEventRecord(mk[k], compute_));
  }

  // After the epoch (its synchronisation is done, the stopwatch stopped): the timed
  // steps' phase intervals, each times the steps it stands for, and the reducer's time
  // inside all-reduces. A graphed step is one launch: only its batch staging is
  // attributed; the rest shows as "other" in reports.
  void collect_epoch_timing() {
    if (!timing_pending_) return;
    timing_pending_ = false;
    TB_CUDA_CHECK(cudaSetDevice(cfg_.device));
    for (int64_t j = 0; !marks_.empty() && j < sample_.timed(); ++j) {
      const cudaEvent_t* mk = &marks_[static_cast<size_t>(j * kMarks)];
      const int64_t s = sample_.step_of(j);
      const double w = sample_.weight(j) * 1e-3;  // ms -> s, times the steps it stands for
      const int64_t count = std::min(pending_batch_, pending_rows_ - s * pending_batch_);
      const bool graphed = cfg_.cuda_graph && count == pending_batch_;
      float ms[kMarks - 1] = {};
      for (int k = 0; k + 1 < (graphed ? 2 : kMarks); ++k) {
        TB_CUDA_CHECK(cudaEventElapsedTime(&ms[k], mk[k], mk[k + 1]));
      }
      phases_.transfer_s += ms[0] * w;
      if (graphed) continue;
      phases_.forward_s += ms[1] * w;
      phases_.backward_s += ms[2] * w;
      phases_.comm_s += ms[3] * w;  // exposed: what the update waited for the reduction
      phases_.optimizer_s += ms[4] * w;
    }
    if (par_.reducer) {
      busy_s_ += par_.reducer->epoch_busy_seconds();
      busy_steps_ += sample_.steps();
    }
  }

  const Dataset& data_;
  RunConfig cfg_;
  Sgd sgd_;
  int64_t max_rows_ = 0, max_steps_ = 0;
  std::unique_ptr<CudaModel> model_;  // this GPU's model; its arena holds every device buffer below
  cudaStream_t compute_ = nullptr;    // the model's stream
  cudaStream_t copy_ = nullptr;       // host placement: stages batches
  BatchStaging staging_;  // two batch buffers and their staged/consumed events
  float* xd_ = nullptr;     // dataset X on the device, or the mapped view of the host copy
  float* yd_ = nullptr;
  int32_t* ld_ = nullptr;
  int64_t* order_ = nullptr;            // the epoch's order on the device (gathers)
  const int64_t* host_order_ = nullptr;  // the same on the host, for the current epoch
  double* step_loss_ = nullptr;       // [max_steps_] per-step loss sums
  unsigned long long* step_next_ = nullptr;  // --cuda-graph: the slot the next graphed step's loss goes to
  int64_t graphed_in_epoch_ = 0;             // graphed steps issued this epoch (host side)
  double* step_loss_host_ = nullptr;  // their pinned readback
  cudaEvent_t upload_start_ = nullptr, upload_end_ = nullptr;
  std::vector<cudaEvent_t> marks_;  // [slot * kMarks + mark], kMaxTimedSteps slots; empty: phases off
  PhaseSample sample_;              // the current (or last) epoch's timed steps
  bool timing_pending_ = false;     // an epoch ended whose events collect_epoch_timing() has not read
  int64_t pending_batch_ = 0, pending_rows_ = 0;  // that epoch's plan
  std::vector<void*> registered_;
  std::string devices_;  // the devices column: this GPU, or every rank's (rank_devices)
  std::string bus_ids_;  // the gpu_bus_ids column: the same GPUs by PCI bus id (rank_bus_ids)
  bool needs_upload_ = false;
  PhaseTimes phases_;
  mutable DeviceMemoryMeter meter_;  // sampled by the const peak_device_mem_bytes()
  CudaParallel par_;
  int rank_ = 0, world_size_ = 1;
  Fault fault_;  // set in the constructor for data-parallel ranks
  std::vector<int64_t> nan_steps_;  // this epoch's steps whose loss the nan fault poisons
  int64_t steps_ = 0;
  double busy_s_ = 0, last_busy_s_ = 0;
  int64_t busy_steps_ = 0, last_busy_steps_ = 0;
};

}  // namespace

std::unique_ptr<Trainer> make_cuda_trainer(const Dataset& data, const RunConfig& cfg, CudaParallel parallel) {
  return std::make_unique<CudaTrainer>(data, cfg, std::move(parallel));
}

}  // namespace tb
#endif  // TB_HAVE_CUDA_BACKEND

namespace tb {
namespace {

class CudaBackend final : public Backend {
 public:
  std::string name() const override { return "cuda"; }
  std::string description() const override { return "1 GPU, cuBLAS GEMMs + fused kernels"; }
  BackendTraits traits() const override {
    BackendTraits t;
    t.device = DeviceKind::kGpu;
    t.knobs = kKnobTf32 | kKnobCudaGraph | kKnobHostPlacement | kKnobDevice | kKnobNoPhaseTiming;
    return t;
  }
  Availability availability() const override { return availability_for(RunConfig{}); }
  // A GPU, then code for it: our kernel probed on the GPU the run will use (a context
  // there, which the run makes anyway). A --device out of range is make_trainer's error.
  Availability availability_for(const RunConfig& c) const override {
    const GpuInventory g = gpu_inventory(FreeMemory::kNotRead);
    if (!g.usable) return {false, g.reason};
    if (c.device >= 0 && c.device < static_cast<int>(g.gpus.size())) {
      if (const std::string why = gpu_code_problem(c.device); !why.empty()) return {false, why};
    }
    return {true, ""};
  }
  std::unique_ptr<Trainer> make_trainer(const Dataset& data, const RunConfig& cfg, Job&) const override {
    const GpuInventory g = gpu_inventory(FreeMemory::kNotRead);
    if (cfg.device < 0 || cfg.device >= static_cast<int>(g.gpus.size())) {
      throw Error("--device: " + std::to_string(cfg.device) + " is not a visible GPU (found " +
                  std::to_string(g.gpus.size()) + ")");
    }
#if defined(TB_HAVE_CUDA_BACKEND)
    return make_cuda_trainer(data, cfg, CudaParallel{});
#else
    (void)data;
    throw std::logic_error("cuda: " + g.reason);  // availability() said so first
#endif
  }
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaBackend>(); }

}  // namespace tb
