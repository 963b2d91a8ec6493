// harness/runner.cpp — see runner.h.
#include "harness/runner.h"

#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>

#include "harness/backend.h"
#include "harness/csv_writer.h"
#include "harness/disturbance.h"
#include "harness/gpu_telemetry.h"
#include "harness/host_info.h"
#include "harness/host_memory.h"
#include "harness/interrupt.h"
#include "harness/params_file.h"
#include "harness/rank_data.h"
#include "harness/trace_mark.h"

namespace tb {
namespace {

std::string one_line(std::string s) {
  for (char& ch : s) {
    if (ch == '\n' || ch == '\r') ch = ' ';
  }
  return s;
}

// A run whose final loss ends above this many times its loss before training has diverged
// (bench/peers/peer_rows.py holds the peers to the same rule).
constexpr double kDivergedFactor = 2.0;

// A loss in a message: 6 significant digits (std::to_string prints 1e19 with 20 digits).
std::string fmt_g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

ResultRow base_row(const RunConfig& c, const RunIdentity& id) {
  ResultRow r;
  r.run_id = id.run_id;
  r.timestamp = id.timestamp;
  r.host = id.host;
  r.config = c;
  r.precision = c.precision;
  r.world_size = c.world_size;  // what the configuration asked for (rows that never ran)
  return r;
}

}  // namespace

ResultRow status_row(const RunConfig& c, const RunIdentity& id, const std::string& status) {
  ResultRow r = base_row(c, id);
  if (const Backend* b = find_backend(c.backend)) {
    // A row that never ran on a GPU names none (not "cpu").
    if (b->traits().device == DeviceKind::kGpu) r.devices = "";
    // The descriptive cells as the rows that ran have them, so that reports group the
    // failed row with its configuration (the oracle is float64 whatever --precision says).
    if (b->traits().oracle) r.precision = kOraclePrecision;
  }
  r.dataset_desc = dataset_description(c.data);
  r.status = one_line(status);
  return r;
}

std::string host_memory_status(const RunConfig& c, Job& job) {
  const std::string short_of = host_memory_shortfall(c, job.size(), 1);
  if (job.all_ok(short_of.empty())) return "";
  return "failed: " + (short_of.empty() ? "another rank is out of host memory" : short_of);
}

std::string check_data_fits(const RunConfig& c, const Dataset& data) {
  if (data.d != c.model.in_dim()) {
    return "--layers: the first size must equal the dataset's " + std::to_string(data.d) + " features (got " +
           std::to_string(c.model.in_dim()) + ")";
  }
  if (data.task == Task::kRegression && data.o != c.model.out_dim()) {
    return "--layers: the last size must equal the dataset's " + std::to_string(data.o) + " targets (got " +
           std::to_string(c.model.out_dim()) + ")";
  }
  if (c.batch > data.n) {
    return "--batch: " + std::to_string(c.batch) + " is larger than the dataset's " + std::to_string(data.n) +
           " rows";
  }
  return "";
}

RunOutcome run_configuration(const RunConfig& cfg, const Dataset& data, Job& job, const RunIdentity& id,
                             Progress& progress_in, RowSink& sink) {
  RunOutcome out;
  RunConfig c = cfg;
  c.data.n = data.n;  // file datasets learn their size on load
  if (job.multi_rank()) c.world_size = job.size();  // under `run`, mpirun's -np decides
  const Backend* backend = find_backend(c.backend);
  const BackendTraits traits = backend->traits();
  const auto emit = [&](const ResultRow& row, const std::vector<CurvePoint>& curve) {
    if (job.root()) sink.add(row, curve);
    out.rows.push_back(row);
  };
  const auto status_of = [&](const std::string& status) { return status_row(c, id, status); };
  // Decided before anything is allocated, the same on every rank.
  if (const std::string why = backend->unsupported(c); !why.empty()) {
    emit(status_of("skipped: " + why), {});
    return out;
  }
  // peak_host_mem_bytes is this configuration's: from what is resident now (its data
  // included), not the peak of the ceilings' arrays or of a suite's earlier configurations.
  reset_peak_rss();
  int64_t failed_rep = 0;  // the repetition a failure belongs to (the warm-up's: 0)
  const auto fail = [&](const std::string& why, bool local) {
    progress_in.finish();
    out.failed = true;
    out.local_failure = local;
    out.failure = one_line("failed: " + why);
    ResultRow r = status_of(out.failure);
    r.repetition = failed_rep;
    emit(r, {});
    return out;
  };
  if (data.subset && !traits.multi_process()) {
    return fail("internal: " + c.backend + " was given a rank's subset of the dataset", false);
  }
  try {
    std::unique_ptr<Trainer> trainer = backend->make_trainer(data, c, job);
    Progress silent(false);
    Progress& progress = job.root() ? progress_in : silent;  // one progress line per job, from rank 0

    // Epoch orders are computed once, outside the timed region; every repetition
    // (and every backend) visits the same rows in the same order. A process holding
    // only some rows (harness/rank_data.h) sees them as indices of what it holds.
    std::vector<std::vector<int64_t>> orders = epoch_orders(c, data.n);
    const int64_t n_orders = static_cast<int64_t>(orders.size());
    if (data.subset) {
      for (std::vector<int64_t>& o : orders) to_local_rows(data, &o);
    }
    if (job.multi_rank()) {  // every rank checks, all agree: a rank alone cannot fail while the others wait
      const std::string missing = missing_rows(c, data, orders, job.rank(), job.size());
      if (!missing.empty()) std::fprintf(stderr, "trainbench: internal: %s\n", missing.c_str());
      if (!job.all_ok(missing.empty())) {
        return fail("internal: " + (missing.empty() ? std::string("a rank holds no copy of a row it reads (its message is on stderr)") : missing), false);
      }
    }
    const auto plan_for = [&](int64_t epoch) {
      EpochPlan p;
      p.order = &orders[static_cast<size_t>(epoch % n_orders)];
      p.batch = c.batch;
      p.num_batches = c.batches_per_epoch();
      p.rows = c.rows_per_epoch();
      return p;
    };
    const std::vector<float> init = init_params(c.model, c.seed);
    const std::string label = c.backend + " " + c.workload + " t" + std::to_string(c.threads);

    // NVML telemetry of a GPU run's repetitions (clocks, power, temperature, throttling,
    // energy); inactive without NVML, when every figure stays empty.
    std::unique_ptr<GpuTelemetry> telemetry;
    if (traits.device == DeviceKind::kGpu) telemetry = std::make_unique<GpuTelemetry>(trainer->gpus());

    trainer->set_params(init);
    trainer->prepare_repetition();  // untimed, as for every repetition
    // The loss before any step, as final_loss is evaluated (whole training set, untimed):
    // a run that ends at more than kDivergedFactor times it has diverged, finite or not
    // (lr too large). Not "any rise": a tiny dataset may end a little above its start.
    const double initial_loss = trainer->evaluate().loss;
    for (int64_t w = 0; w < c.warmup; ++w) {
      progress.start(label + " warm-up", c.batches_per_epoch(), c.batch);
      const EpochResult r = trainer->train_epoch(plan_for(w), [&](int64_t s, double loss) {
        progress.step(w + 1, c.warmup, s, c.batches_per_epoch(), loss);
        throw_if_interrupted();
      });
      trainer->take_phase_times();  // read (and discard) the warm-up's timing
      if (r.nonfinite_step >= 0) {
        return fail("non-finite loss at epoch " + std::to_string(w + 1) + " step " +
                    std::to_string(r.nonfinite_step + 1) + " (warm-up)", false);
      }
    }
    progress.finish();

    CpuSnapshot first_rep;  // when the timed repetitions began (disturbance of short ones)
    const std::string kernel = kernel_key();  // ranks sharing it share /proc/stat: their CPU time is its own
    for (int64_t rep = 0; rep < c.reps; ++rep) {
      throw_if_interrupted();
      failed_rep = rep;
      trainer->set_params(init);
      // The dataset's upload (GPU, device placement) happens here, before the stopwatch
      // starts: the timed epochs train on data already in place, as PyTorch's peers do.
      const UploadFigures upload = trainer->prepare_repetition();
      trainer->take_phase_times();  // discard warm-up / previous repetition
      progress.start(label + " rep " + std::to_string(rep + 1) + "/" + std::to_string(c.reps),
                     c.epochs * c.batches_per_epoch(), c.batch);
      double train_s = 0;
      PhaseTimes ph;
      double busy_s = 0;         // this rank's time inside all-reduces, summed over the epochs
      double busy_steps = 0;     // the steps it covers
      std::vector<CurvePoint> curve;
      // The job's own CPU time includes its helper processes' (cpu-hogwild's workers).
      const auto snapshot = [&] {
        CpuSnapshot s = cpu_snapshot();
        s.own_s += trainer->helper_cpu_s();
        return s;
      };
      CpuSnapshot before = snapshot();
      if (rep == 0) first_rep = before;
      if (telemetry) telemetry->begin();
      // Time to target (--target-loss): this clock starts with the first timed epoch and,
      // as MLPerf's does, never pauses: the evaluations after each epoch count until the
      // first one at or below the target. train_time_s (sum of the epochs) excludes them.
      const Stopwatch rep_clock;
      double to_target_s = -1;
      int64_t target_epoch = -1;
      for (int64_t e = 0; e < c.epochs; ++e) {
        trace_mark(kMarkTimedBegin);
        Stopwatch sw;
        const EpochResult r = trainer->train_epoch(plan_for(e), [&](int64_t s, double loss) {
          progress.step(e + 1, c.epochs, s, c.batches_per_epoch(), loss);
          throw_if_interrupted();
        });
        train_s += sw.seconds();
        trace_mark(kMarkTimedEnd);
        // After the stopwatch: GPU trainers read their phase events here, not inside the epoch.
        ph += trainer->take_phase_times();
        busy_s += trainer->allreduce_busy_s();
        busy_steps += static_cast<double>(trainer->allreduce_steps());
        if (r.nonfinite_step >= 0) {
          return fail("non-finite loss at epoch " + std::to_string(e + 1) + " step " +
                      std::to_string(r.nonfinite_step + 1), false);
        }
        curve.push_back({rep, e + 1, r.mean_loss});
        if (c.has_target() && target_epoch < 0) {
          // The same evaluation as final_loss (whole training set; collective on DDP
          // ranks, whose loss is global, so every rank stops evaluating at the same epoch).
          if (trainer->evaluate().loss <= c.target_loss) {
            to_target_s = rep_clock.seconds();
            target_epoch = e + 1;
          }
        }
      }
      // Over the same epochs as train_s (the last epoch has synchronised with its GPUs);
      // with --target-loss the evaluations between them too.
      GpuTelemetrySummary gpu = telemetry ? telemetry->end() : GpuTelemetrySummary{};
      progress.finish();
      if (telemetry) gpu = combine_over_job(gpu, job);  // every rank of a GPU job calls it
      // Who else used the CPUs meanwhile: the job's own CPU time (every rank's on this
      // host) is not a disturbance; each rank judges its host, the job takes the worst.
      const CpuSnapshot after = snapshot();
      // /proc/stat counts in 10 ms ticks, and idle CPUs' ticks are booked late: a short
      // repetition is judged over all timed repetitions so far, or not at all
      // (judged_window). Every rank picks the same window, from the job's shortest spans,
      // so that the own CPU time summed over ranks covers the same interval.
      double neg_spans[2] = {before.wall_s - after.wall_s, first_rep.wall_s - after.wall_s};
      job.max(neg_spans, 2);
      const JudgedWindow window = judged_window(-neg_spans[0], -neg_spans[1]);
      if (window == JudgedWindow::kSinceFirst) before = first_rep;
      const double own_s = job.sum_within(after.own_s - before.own_s, kernel);  // this host's ranks
      const Disturbance dist =
          window == JudgedWindow::kNone ? Disturbance{} : disturbance_between(before, after, own_s);
      double worst[2] = {dist.others_share, dist.steal_share};
      job.max(worst, 2);
      // Job-wide figures: a job is as slow as its slowest rank, and so is each phase.
      // The upload: the slowest rank's seconds and its rate (max of the negated rate = min).
      const double up_rate = upload.seconds > 0 ? static_cast<double>(upload.bytes) / upload.seconds : 0;
      double slowest[10] = {train_s,      ph.transfer_s,  ph.forward_s, ph.backward_s, ph.comm_s,
                            ph.optimizer_s, busy_s, upload.seconds,
                            upload.bytes > 0 ? -up_rate : -std::numeric_limits<double>::infinity(), to_target_s};
      job.max(slowest, 10);
      train_s = slowest[0];
      ph = PhaseTimes{slowest[1], slowest[2], slowest[3], slowest[4], slowest[5]};
      busy_s = slowest[6];
      const EvalResult ev = trainer->evaluate();  // untimed, whole training set
      if (!std::isfinite(ev.loss)) return fail("non-finite final loss after training", false);
      // float64 can carry a diverged run far past what float32 can hold: call it what it is.
      if (ev.loss > std::numeric_limits<float>::max()) {
        return fail("diverged: final loss " + fmt_g(ev.loss) + " exceeds the float32 range", false);
      }
      // Every rank evaluates both losses over the whole set (DDP: collectively), so all agree.
      if (ev.loss > kDivergedFactor * initial_loss) {
        return fail("diverged: final loss " + fmt_g(ev.loss) + " is over twice the loss before training (" +
                    fmt_g(initial_loss) + "): lower --lr", false);
      }
      const std::vector<float> params = trainer->params();
      // Data-parallel ranks must end with identical parameters.
      if (const std::string why = job.params_disagree(params); !why.empty()) return fail(why, false);
      const double checksum = param_checksum(params);
      if (!std::isfinite(checksum)) return fail("non-finite parameters after training", false);
      ResultRow row = base_row(c, id);
      row.dataset_desc = data.description;
      row.precision = trainer->precision();
      row.world_size = job.size() * trainer->replicas();
      row.devices = trainer->devices();
      row.gpu_bus_ids = trainer->gpu_bus_ids();
      row.repetition = rep;
      row.has_metrics = true;
      row.train_time_s = train_s;
      row.samples_per_s = static_cast<double>(c.epochs * c.rows_per_epoch()) / train_s;
      row.forward_s = ph.forward_s;
      row.backward_s = ph.backward_s;
      row.optimizer_s = ph.optimizer_s;
      row.transfer_s = ph.transfer_s;
      row.comm_s = ph.comm_s;
      row.allreduce_bytes_per_step = trainer->allreduce_bytes_per_step();
      if (row.world_size > 1 && busy_s > 0) {
        // busbw = the collective's bus bytes per step (2(n-1)/n x bytes for an all-reduce)
        // x steps / t, t = time inside the gradient collectives.
        row.comm_busbw_gbps = trainer->bus_bytes_per_step(row.world_size) * busy_steps / busy_s / 1e9;
      }
      if (std::isfinite(slowest[8])) {  // some rank uploaded (a DDP rank may hold no rows)
        row.upload_s = slowest[7];
        row.upload_gbps = -slowest[8] / 1e9;
      }
      if (target_epoch > 0) {
        row.time_to_target_s = slowest[9];
        row.target_epoch = target_epoch;
      }
      row.final_loss = ev.loss;
      row.final_accuracy = ev.accuracy;
      row.param_checksum = checksum;
      row.peak_host_mem_bytes = peak_rss_bytes();
      row.peak_device_mem_bytes = trainer->peak_device_mem_bytes();
      row.others_cpu_share = worst[0];
      row.steal_share = worst[1];
      row.gpu = gpu;
      if (rep + 1 == c.reps && !c.save_params.empty() && job.root()) {
        // A params file that cannot be written fails this repetition's row (its folder was
        // checked before training; a full disk can still stop it, which ends the run: 74).
        try {
          write_params_file(c.save_params, params);
        } catch (const OutputError& e) {
          fail(std::string("--save-params: ") + e.what(), true);
          throw;
        } catch (const std::exception& e) {
          return fail(std::string("--save-params: ") + e.what(), true);
        }
      }
      emit(row, curve);
    }
  } catch (const OutputError&) {
    throw;  // results cannot be written: nothing to record a row in (main exits kExitIoError)
  } catch (const Interrupted&) {
    progress_in.finish();
    throw;  // SIGINT/SIGTERM: the finished repetitions' rows are written; the caller exits 128 + signal
  } catch (const std::bad_alloc&) {
    return fail("out of host memory", true);
  } catch (const std::exception& e) {
    return fail(e.what(), true);
  }
  return out;
}

}  // namespace tb
