// harness/backends/cuda_dp.cpp — `cuda-dp`: one process, G replica slots (--devices,
// GPU ids, repeats allowed: 0,0 runs two replicas on one GPU), torch.nn.DataParallel
// semantics. Every slot is a CudaModel (cuda_model.h: stream, cuBLAS handle, buffers,
// the math); slot 0's is the master ("GPU 0": parameters, gradients, optimizer state).
// This file is the DataParallel part around them. Shapes: B rows, D in, O out, P params.
//
// Per step of a global batch of B rows:
//   (1) replicate: faithful — before every forward, copy the full parameter buffer
//       from slot 0 to the replica of each slot the step uses (DataParallel's
//       replicate); persistent — replicas live across steps and, after the update,
//       the updated parameters are broadcast to every slot (idle ones too); both
//       through ncclBroadcast or peer copies, by the rule of (6). The bytes
//       per step are the same when every slot is used; the cost differs in where it
//       falls: faithful's copy shares the [batch, scattered] interval with the input
//       scatter and touches only the replicas in use, persistent's is an interval of
//       its own after the update, so replication shows alone. Neither overlaps
//       compute: the next forward needs the parameters either way;
//   (2) split the batch with torch.chunk's rule (dp_plan.h): ceil(B/G) rows per
//       chunk, possibly fewer chunks than slots; chunk k is copied to slot k;
//   (3) forward on every used slot concurrently, each on its own stream;
//   (4) gather the outputs on GPU 0 and compute the loss and dZ (scaled for the
//       global batch) there; (5) scatter the dZ chunks back, backward everywhere;
//   (6) sum the gradients onto slot 0: slots sharing a GPU add into that GPU's first
//       slot with tb::cuda::add_inplace, then GPUs reduce onto GPU 0 with ncclReduce
//       over a single-process communicator (ncclCommInitAll), or peer copies + add
//       when NCCL is absent, a pair lacks peer access, or a GPU idles this step;
//   (7) SGD on slot 0 only.
// Enqueued from the host thread without blocking; each phase ends with a barrier on
// slot 0's stream (it waits for every slot's event) where a timing event is recorded,
// so the phases are exclusive and add up to the step: transfer_s = batch gather +
// replication + scatter/gather copies, forward_s = forward + loss, backward_s,
// comm_s = gradient reduction, optimizer_s. One host synchronisation per epoch. The
// marks double as the ordering events between the streams, so every step records them:
// the steps phase_sample.h picks (at most kMaxTimedSteps per epoch) into a fixed pool of
// timing events read in take_phase_times() — after the runner's stopwatch stops — the
// others (and every step with --phase-timing off) into one set without timing. The
// dataset is uploaded in prepare_repetition(), before the timed epochs.
// Shapes: B rows, c = ceil(B/G) rows per chunk, D in, O out, P parameters.
// The slots and their stream ordering: cuda_dp_slots.h; (1) and (6): cuda_dp_comm.h.
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/backend.h"
#include "harness/backends/cuda_dp_plan.h"
#include "harness/host_info.h"
#include "kernels/error.h"

#if defined(TB_HAVE_CUDA_BACKEND)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "harness/backend.h"
#include "harness/backends/cuda_dp_comm.h"
#include "harness/backends/cuda_dp_slots.h"
#include "harness/backends/cuda_upload.h"
#include "harness/backends/device_memory.h"
#include "harness/backends/cuda_dp_plan.h"
#include "harness/backends/phase_sample.h"
#include "harness/ddp_plan.h"
#include "harness/host_info.h"
#include "harness/backends/step_losses.h"
#include "kernels/cuda/check.h"

namespace tb {
namespace {

using cuda_dp::device_copy;
using cuda_dp::Slot;
using cuda_dp::SlotComm;
using cuda_dp::Slots;

// Timing events of a step, recorded on slot 0's stream at each phase boundary.
enum Mark {
  kStart,           // -> batch rows gathered on GPU 0 (transfer)
  kBatch,           // -> faithful replication + input chunks scattered (transfer)
  kScattered,       // -> forward on every slot (forward)
  kForward,         // -> outputs gathered on GPU 0 (transfer)
  kGathered,        // -> loss and dZ on GPU 0 (forward)
  kLoss,            // -> dZ chunks scattered (transfer)
  kGradsScattered,  // -> backward on every slot (backward)
  kBackward,        // -> gradients summed onto slot 0 (comm)
  kReduced,         // -> SGD update on slot 0 (optimizer)
  kUpdated,         // -> persistent: updated parameters broadcast (transfer)
  kBroadcast,
  kMarks
};
enum class Phase { kTransfer, kForward, kBackward, kComm, kOptimizer };
constexpr Phase kPhaseAfter[kMarks - 1] = {Phase::kTransfer, Phase::kTransfer, Phase::kForward, Phase::kTransfer,
                                           Phase::kForward,  Phase::kTransfer, Phase::kBackward, Phase::kComm,
                                           Phase::kOptimizer, Phase::kTransfer};

class CudaDpTrainer final : public Trainer {
 public:
  CudaDpTrainer(const Dataset& data, const RunConfig& cfg, std::vector<int> slots)
      : data_(data), cfg_(cfg), sgd_(sgd_of(cfg)), layout_(make_layout(cfg.model)), slot_ids_(std::move(slots)) {
    const int G = static_cast<int>(slot_ids_.size());
    const int64_t D = data.d, O = data.o, n = data.n, P = layout_.total;
    const bool cls = data.task == Task::kClassification;
    chunk_rows_ = max_chunk_rows(cfg.batch, G);
    master_rows_ = std::max(cfg.batch, std::min(kEvalChunk, n));
    max_steps_ = (n + cfg.batch - 1) / cfg.batch;
    std::vector<int> metered;  // each GPU's free memory before anything of ours
    for (int dev : slot_ids_) {
      if (std::find(metered.begin(), metered.end(), dev) != metered.end()) continue;
      metered.push_back(dev);
      meter_.start(dev);
    }

    for (int k = 0; k < G; ++k) {
      slots_.add(slot_ids_[static_cast<size_t>(k)], cfg.model, cfg.precision == "tf32",
                 {.act_rows = k == 0 ? master_rows_ : chunk_rows_, .chunk_rows = chunk_rows_, .d = D,
                  .master = k == 0});
    }

    // GPU 0's extras beside the master model: the batch, the full dZ, the dataset, losses.
    Slot& s0 = slots_[0];
    DeviceArena& arena = s0.model.arena();
    slots_.on(0);
    dz_full_ = arena.alloc<float>(cfg.batch * O);
    xb_ = arena.alloc<float>(cfg.batch * D);
    if (cls) lb_ = arena.alloc<int32_t>(cfg.batch);
    else yb_ = arena.alloc<float>(cfg.batch * O);
    xd_ = arena.alloc<float>(n * D);
    if (cls) ld_ = arena.alloc<int32_t>(n);
    else yd_ = arena.alloc<float>(n * O);
    order_ = arena.alloc<int64_t>(n);
    step_loss_ = arena.alloc<double>(max_steps_);
    host_.device = s0.device;
    TB_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&host_.step_loss),
                                 sizeof(double) * static_cast<size_t>(max_steps_)));
    // [slot * kMarks + mark] timing events (a fixed pool, phase_sample.h; none with
    // --phase-timing off), then upload start/end and params set; then one set of
    // ordering-only marks for the untimed steps.
    timed_events_ = cfg.phase_timing ? kMaxTimedSteps * kMarks : 0;
    host_.events.resize(static_cast<size_t>(timed_events_ + 3));
    for (cudaEvent_t& e : host_.events) TB_CUDA_CHECK(cudaEventCreate(&e));
    upload_start_ = host_.events[static_cast<size_t>(timed_events_)];
    upload_end_ = host_.events[static_cast<size_t>(timed_events_ + 1)];
    params_set_ = host_.events[static_cast<size_t>(timed_events_ + 2)];
    for (int k = 0; k < kMarks; ++k) {
      host_.events.push_back(nullptr);
      TB_CUDA_CHECK(cudaEventCreateWithFlags(&host_.events.back(), cudaEventDisableTiming));
    }

    comm_.setup(slot_ids_, P);
    meter_.sample();  // cuBLAS handles, NCCL communicators: beyond the arenas
  }

  ~CudaDpTrainer() override {
    for (int k = 0; k < slots_.size(); ++k) {  // every stream idle before communicators and buffers go
      cudaSetDevice(slots_[k].device);
      TB_CUDA_WARN(cudaStreamSynchronize(slots_[k].stream));
    }
  }

  void set_params(const std::vector<float>& params) override {
    Slot& s0 = slots_[0];
    slots_.on(0);
    s0.model.set_params(params);
    // Persistent replicas start from the master copy; faithful ones are copied before every forward.
    if (cfg_.dp_persistent()) {
      TB_CUDA_CHECK(cudaEventRecord(params_set_, s0.stream));
      comm_.broadcast_params(slots_.size(), params_set_);
    }
    slots_.on(0);
    TB_CUDA_CHECK(cudaStreamSynchronize(s0.stream));  // every slot's copy was joined into it
    needs_upload_ = true;  // each repetition starts by uploading its data
  }

  std::vector<float> params() const override { return slots_[0].model.read_params(); }

  // The dataset to GPU 0, once per repetition, before the timed epochs.
  UploadFigures prepare_repetition() override {
    if (!needs_upload_) return {};
    slots_.on(0);
    needs_upload_ = false;
    return upload_dataset(data_, xd_, yd_, ld_, slots_[0].stream, upload_start_, upload_end_);
  }

  std::string precision() const override { return cfg_.precision; }
  std::string devices() const override { return slot_list(slot_ids_); }
  std::vector<int> gpus() const override { return comm_.devices(); }
  // Each slot's GPU by PCI bus id (context-free queries): "0,0" is one GPU twice.
  std::string gpu_bus_ids() const override {
    std::string out;
    for (int dev : slot_ids_) {
      char bus[32] = {};
      if (cudaDeviceGetPCIBusId(bus, sizeof bus, dev) != cudaSuccess) {
        cudaGetLastError();
        std::snprintf(bus, sizeof bus, "?");
      }
      out += (out.empty() ? "" : ",") + pci_bus_normal(bus);
    }
    return out;
  }
  int replicas() const override { return static_cast<int>(slots_.size()); }
  // The busiest GPU: everything the slots on one physical device allocated, or more where
  // cudaMemGetInfo saw more go there (cuBLAS, NCCL, graph executables; read after training).
  int64_t peak_device_mem_bytes() const override {
    int64_t most = 0;
    for (int dev : comm_.devices()) {
      int64_t held = 0;
      for (int k = 0; k < slots_.size(); ++k) {
        if (slots_[k].device == dev) held += slots_[k].model.arena().held_bytes();
      }
      most = std::max(most, held);
    }
    meter_.sample();
    return std::max(most, meter_.most_bytes());
  }

  // Reads the last epoch's phase events (after the runner's stopwatch has stopped).
  PhaseTimes take_phase_times() override {
    collect_epoch_timing();
    const PhaseTimes t = phases_;
    phases_ = PhaseTimes{};
    return t;
  }

  EpochResult train_epoch(const EpochPlan& plan, const StepCallback& on_step) override {
    if (plan.batch > cfg_.batch || plan.num_batches > max_steps_) {
      throw Error("cuda-dp: an epoch of " + std::to_string(plan.num_batches) + " batches of " +
                  std::to_string(plan.batch) + " rows exceeds what the trainer was built for (" +
                  std::to_string(max_steps_) + " of " + std::to_string(cfg_.batch) + ")");
    }
    if (plan.num_batches <= 0) return EpochResult{};
    Slot& s0 = slots_[0];
    slots_.on(0);
    // A caller that is not the runner (tests) may skip prepare_repetition() and
    // take_phase_times() between epochs: both happen here then, inside its epoch.
    collect_epoch_timing();
    if (needs_upload_) prepare_repetition();
    sample_ = PhaseSample(plan.num_batches);
    const bool shuffled = !is_identity_order(*plan.order);
    if (shuffled) {
      TB_CUDA_CHECK(cudaMemcpyAsync(order_, plan.order->data(), plan.order->size() * sizeof(int64_t),
                                    cudaMemcpyHostToDevice, s0.stream));
    }
    TB_CUDA_CHECK(cudaMemsetAsync(step_loss_, 0, sizeof(double) * static_cast<size_t>(plan.num_batches), s0.stream));
    // Chunk plans of the full batch and of the short last one (no host allocation per step).
    auto rows_of = [&](int64_t step) { return std::min(plan.batch, plan.rows - step * plan.batch); };
    const std::vector<Chunk> full = chunk_plan(plan.batch, slots_.size());
    const std::vector<Chunk> last = chunk_plan(rows_of(plan.num_batches - 1), slots_.size());
    for (int64_t s = 0; s < plan.num_batches; ++s) {
      const int64_t rows = rows_of(s);
      train_step(plan, s, rows, rows == plan.batch ? full : last, shuffled);
    }
    // The epoch's one synchronisation: every slot's work was joined into slot 0's stream.
    slots_.on(0);
    TB_CUDA_CHECK(cudaMemcpyAsync(host_.step_loss, step_loss_, sizeof(double) * static_cast<size_t>(plan.num_batches),
                                  cudaMemcpyDeviceToHost, s0.stream));
    TB_CUDA_CHECK(cudaStreamSynchronize(s0.stream));
    timing_pending_ = true;

    return epoch_result_from_sums(host_.step_loss, plan, s0.model.loss_per_row(), on_step);
  }

  // The master model on GPU 0 over the whole set, in chunks (untimed; the same math
  // as a DataParallel forward, whose outputs are gathered on GPU 0 anyway).
  EvalResult evaluate() override {
    Slot& s0 = slots_[0];
    slots_.on(0);
    if (needs_upload_) prepare_repetition();
    double loss_sum = 0;
    int64_t hits = 0;
    s0.model.evaluate_rows(contiguous(0), {Shard{0, data_.n}}, &loss_sum, &hits);
    EvalResult e;
    e.loss = loss_sum / (static_cast<double>(data_.n) * s0.model.loss_per_row());
    if (data_.task == Task::kClassification) e.accuracy = static_cast<double>(hits) / static_cast<double>(data_.n);
    return e;
  }

 private:
  using Batch = DeviceBatch;  // on GPU 0

  // Pinned loss readback and slot 0's events, released even when the constructor throws.
  struct HostSide {
    int device = 0;
    double* step_loss = nullptr;
    std::vector<cudaEvent_t> events;  // timing pool, upload start/end, params set, untimed marks (constructor)
    HostSide() = default;
    HostSide(const HostSide&) = delete;
    HostSide& operator=(const HostSide&) = delete;
    ~HostSide() {
      cudaSetDevice(device);
      for (cudaEvent_t e : events) {
        if (e) TB_CUDA_WARN(cudaEventDestroy(e));
      }
      if (step_loss) TB_CUDA_WARN(cudaFreeHost(step_loss));
    }
  };

  Batch contiguous(int64_t r0) const { return rows_from(xd_, yd_, ld_, r0, data_.d, data_.o); }

  // The batch's rows on GPU 0 (slot 0's stream): in place, or gathered when shuffled.
  Batch batch_on_gpu0(int64_t begin, int64_t rows, bool shuffled) {
    if (!shuffled) return contiguous(begin);
    gather_batch(contiguous(0), order_ + begin, rows, data_.d, data_.o, xb_, yb_, lb_, slots_[0].stream);
    Batch b;
    b.x = xb_;
    b.y = yb_;
    b.labels = lb_;
    return b;
  }

  // One DataParallel step over `rows` rows split into `chunks` (chunk k -> slot k).
  void train_step(const EpochPlan& plan, int64_t s, int64_t rows, const std::vector<Chunk>& chunks, bool shuffled) {
    cudaEvent_t* mk = marks_of(s);
    const int used = static_cast<int>(chunks.size());
    const int64_t D = data_.d, O = data_.o;
    Slot& s0 = slots_[0];

    slots_.on(0);
    TB_CUDA_CHECK(cudaEventRecord(mk[kStart], s0.stream));
    const Batch b = batch_on_gpu0(s * plan.batch, rows, shuffled);
    TB_CUDA_CHECK(cudaEventRecord(mk[kBatch], s0.stream));

    // (1) faithful: replicate the parameters to the slots this step uses.
    if (!cfg_.dp_persistent()) comm_.broadcast_params(used, mk[kBatch]);
    // (2) scatter the input chunks (chunk 0 is read in place on GPU 0).
    for (int k = 1; k < used; ++k) {
      Slot& sl = slots_[k];
      const Chunk& c = chunks[static_cast<size_t>(k)];
      slots_.wait_on(k, mk[kBatch]);
      device_copy(sl.x, sl.device, b.x + c.begin * D, s0.device, static_cast<size_t>(c.count * D) * sizeof(float),
                  sl.stream);
      slots_.record_done(k);
    }
    slots_.barrier(used, mk[kScattered]);

    // (3) forward on every slot: slots k > 0 first, so slot 0's own forward does not
    // hold theirs back behind its wait.
    for (int k = 1; k < used; ++k) {
      Slot& sl = slots_[k];
      slots_.wait_on(k, mk[kScattered]);
      sl.model.forward(sl.x, chunks[static_cast<size_t>(k)].count);
      slots_.record_done(k);
    }
    slots_.on(0);
    s0.model.forward(b.x, chunks[0].count);  // rows [0, c0) of the gathered output, in place
    slots_.barrier(used, mk[kForward]);

    // (4) gather the outputs into slot 0's last activation (B x O) and take the loss there.
    slots_.on(0);
    for (int k = 1; k < used; ++k) {
      const Slot& sl = slots_[k];
      const Chunk& c = chunks[static_cast<size_t>(k)];
      device_copy(s0.model.output() + c.begin * O, s0.device, sl.model.output(), sl.device,
                  static_cast<size_t>(c.count * O) * sizeof(float), s0.stream);
    }
    TB_CUDA_CHECK(cudaEventRecord(mk[kGathered], s0.stream));
    s0.model.loss(b, rows, rows, dz_full_, step_loss_ + s, nullptr);  // dZ scaled for the global batch
    TB_CUDA_CHECK(cudaEventRecord(mk[kLoss], s0.stream));

    // (5) scatter dZ (slot 0 reads rows [0, c0) of dz_full_ in place), then backward.
    for (int k = 1; k < used; ++k) {
      Slot& sl = slots_[k];
      const Chunk& c = chunks[static_cast<size_t>(k)];
      slots_.wait_on(k, mk[kLoss]);
      device_copy(sl.model.delta(), sl.device, dz_full_ + c.begin * O, s0.device,
                  static_cast<size_t>(c.count * O) * sizeof(float), sl.stream);
      slots_.record_done(k);
    }
    slots_.barrier(used, mk[kGradsScattered]);
    for (int k = 1; k < used; ++k) {
      Slot& sl = slots_[k];
      slots_.wait_on(k, mk[kGradsScattered]);
      sl.model.backward(sl.x, chunks[static_cast<size_t>(k)].count);
      slots_.record_done(k);
    }
    slots_.on(0);
    s0.model.backward(b.x, chunks[0].count, {}, dz_full_);
    slots_.barrier(used, mk[kBackward]);

    // (6) sum the gradients onto slot 0; (7) SGD there.
    comm_.reduce_grads(used, mk[kBackward]);
    slots_.on(0);
    TB_CUDA_CHECK(cudaEventRecord(mk[kReduced], s0.stream));
    s0.model.update(sgd_);
    TB_CUDA_CHECK(cudaEventRecord(mk[kUpdated], s0.stream));

    // Persistent: the updated parameters to every replica (idle ones included).
    if (cfg_.dp_persistent()) comm_.broadcast_params(slots_.size(), mk[kUpdated]);
    slots_.on(0);
    TB_CUDA_CHECK(cudaEventRecord(mk[kBroadcast], s0.stream));
  }

  // Step s's marks: its timing slot's events, or the ordering-only set when it is not
  // timed (phase_sample.h; --phase-timing off).
  cudaEvent_t* marks_of(int64_t s) {
    const int64_t slot = timed_events_ > 0 ? sample_.slot(s) : -1;
    const size_t first = slot < 0 ? static_cast<size_t>(timed_events_ + 3) : static_cast<size_t>(slot * kMarks);
    return &host_.events[first];
  }

  // After the epoch (synchronised, the stopwatch stopped): each timed step's intervals
  // between marks into their phases, times the steps that step stands for.
  void collect_epoch_timing() {
    if (!timing_pending_) return;
    timing_pending_ = false;
    slots_.on(0);
    for (int64_t j = 0; timed_events_ > 0 && j < sample_.timed(); ++j) {
      const cudaEvent_t* mk = &host_.events[static_cast<size_t>(j * kMarks)];
      const double w = sample_.weight(j) * 1e-3;  // ms -> s, times the steps it stands for
      for (int k = 0; k + 1 < kMarks; ++k) {
        float ms = 0;
        TB_CUDA_CHECK(cudaEventElapsedTime(&ms, mk[k], mk[k + 1]));
        const double sec = ms * w;
        switch (kPhaseAfter[k]) {
          case Phase::kTransfer: phases_.transfer_s += sec; break;
          case Phase::kForward: phases_.forward_s += sec; break;
          case Phase::kBackward: phases_.backward_s += sec; break;
          case Phase::kComm: phases_.comm_s += sec; break;
          case Phase::kOptimizer: phases_.optimizer_s += sec; break;
        }
      }
    }
  }

  const Dataset& data_;
  RunConfig cfg_;
  Sgd sgd_;
  ParamLayout layout_;
  std::vector<int> slot_ids_;                // GPU of each slot, as --devices gave them
  mutable DeviceMemoryMeter meter_;          // each GPU's free memory; sampled by peak_device_mem_bytes()
  Slots slots_;                              // slot 0 first: the master
  HostSide host_;
  SlotComm comm_{slots_};                    // after slots_ and host_: its communicators are destroyed before them
  int64_t chunk_rows_ = 0, master_rows_ = 0, max_steps_ = 0;
  float* dz_full_ = nullptr;                 // GPU 0: dZ of the gathered batch (B x O)
  float* xb_ = nullptr;                      // GPU 0: a shuffled batch, B x D
  float* yb_ = nullptr;                      //        and its targets (B x O) or labels (B)
  int32_t* lb_ = nullptr;
  float* xd_ = nullptr;                      // GPU 0: the dataset
  float* yd_ = nullptr;
  int32_t* ld_ = nullptr;
  int64_t* order_ = nullptr;                 // GPU 0: the epoch's visiting order
  double* step_loss_ = nullptr;              // GPU 0: per-step loss sums
  cudaEvent_t upload_start_ = nullptr, upload_end_ = nullptr, params_set_ = nullptr;
  bool needs_upload_ = true;
  int64_t timed_events_ = 0;     // host_.events' timing pool: kMaxTimedSteps x kMarks, or 0
  PhaseSample sample_;           // the current (or last) epoch's timed steps
  bool timing_pending_ = false;  // an epoch ended whose events collect_epoch_timing() has not read
  PhaseTimes phases_;
};

}  // namespace
}  // namespace tb
#endif  // TB_HAVE_CUDA_BACKEND

namespace tb {
namespace {

class CudaDpBackend final : public Backend {
 public:
  std::string name() const override { return "cuda-dp"; }
  std::string description() const override {
    return "1 process, N GPUs, torch.nn.DataParallel semantics (replicate, scatter, gather, reduce onto GPU 0)";
  }
  BackendTraits traits() const override {
    BackendTraits t;
    t.device = DeviceKind::kGpu;
    t.parallelism = Parallelism::kDataParallel;
    t.knobs = kKnobTf32 | kKnobDpDevices | kKnobDpMode | kKnobNoPhaseTiming;
    t.scaling_base = "cuda";
    return t;
  }
  // Without --devices the run needs two GPUs; a slot list (even 0,0 on one GPU) runs
  // on the GPUs it names.
  Availability availability() const override { return availability_for(RunConfig{}); }
  Availability availability_for(const RunConfig& c) const override {
    const GpuInventory g = gpu_inventory(FreeMemory::kNotRead);
    // With no GPU at all, the driver's reason.
    if (!g.usable && c.dp_devices.empty()) return {false, "needs 2 GPUs, found 0: " + g.reason};
    if (!g.usable) return {false, g.reason};
    const std::string why = dp_unavailable_reason(static_cast<int>(g.gpus.size()), c.dp_devices);
    if (!why.empty()) return {false, why};
    // Code for every GPU the slots use (all visible ones without --devices).
    std::vector<int> used = c.dp_devices;
    if (used.empty()) {
      for (const GpuInfo& d : g.gpus) used.push_back(d.index);
    }
    std::vector<int> probed;
    for (int dev : used) {
      if (std::find(probed.begin(), probed.end(), dev) != probed.end()) continue;
      probed.push_back(dev);
      if (const std::string code = gpu_code_problem(dev); !code.empty()) return {false, code};
    }
    return {true, ""};
  }
  std::unique_ptr<Trainer> make_trainer(const Dataset& data, const RunConfig& cfg, Job&) const override {
    const GpuInventory g = gpu_inventory(FreeMemory::kNotRead);
    if (!g.usable) throw Error("cuda-dp: " + g.reason);
#if defined(TB_HAVE_CUDA_BACKEND)
    return std::make_unique<CudaDpTrainer>(data, cfg, resolve_slots(cfg.dp_devices, static_cast<int>(g.gpus.size())));
#else
    (void)data;
    throw std::logic_error("cuda-dp: built without CUDA");  // gpu_inventory says so first
#endif
  }
};

}  // namespace

std::unique_ptr<Backend> make_cuda_dp_backend() { return std::make_unique<CudaDpBackend>(); }

}  // namespace tb
