// harness/result_row.cpp — formatting ResultRow and CurvePoint as CSV fields.
#include "harness/result_row.h"

#include <cstdio>

namespace tb {
namespace {

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

std::vector<std::string> results_header() {
  return {"schema_version", "run_id", "timestamp", "host", "workload", "backend", "model", "layers", "dataset",
          "task", "n_samples", "batch_size", "epochs", "lr", "momentum", "weight_decay", "seed", "precision",
          "world_size", "devices", "threads", "repetition", "train_time_s", "samples_per_s", "forward_s",
          "backward_s", "optimizer_s", "transfer_s", "comm_s", "allreduce_bytes_per_step", "comm_busbw_gbps", "final_loss", "final_accuracy", "param_checksum",
          "peak_host_mem_bytes", "peak_device_mem_bytes", "status"};
}

std::vector<std::string> result_fields(const ResultRow& r) {
  const RunConfig& c = r.config;
  std::vector<std::string> f = {std::to_string(kSchemaVersion), r.run_id, r.timestamp, r.host, c.workload,
                                c.backend, model_name(c.model.kind), layers_to_string(c.model.layers),
                                r.dataset_desc, task_name(c.data.task), std::to_string(c.data.n),
                                std::to_string(c.batch), std::to_string(c.epochs), num(c.lr), num(c.momentum),
                                num(c.weight_decay), std::to_string(c.seed), r.precision,
                                std::to_string(r.world_size), r.devices, std::to_string(c.threads),
                                std::to_string(r.repetition)};
  if (r.has_metrics) {
    for (double v : {r.train_time_s, r.samples_per_s, r.forward_s, r.backward_s, r.optimizer_s, r.transfer_s,
                     r.comm_s}) {
      f.push_back(num(v));
    }
    f.push_back(std::to_string(r.allreduce_bytes_per_step));
    f.push_back(r.comm_busbw_gbps < 0 ? "" : num(r.comm_busbw_gbps));
    f.push_back(num(r.final_loss));
    f.push_back(r.final_accuracy < 0 ? "" : num(r.final_accuracy));
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.12g", r.param_checksum);
    f.push_back(buf);
    f.push_back(std::to_string(r.peak_host_mem_bytes));
    f.push_back(std::to_string(r.peak_device_mem_bytes));
  } else {
    f.insert(f.end(), 14, "");
  }
  f.push_back(r.status);
  return f;
}

std::vector<std::string> curves_header() {
  return {"schema_version", "run_id", "workload", "backend", "world_size", "devices", "threads", "repetition",
          "epoch", "train_loss"};
}

std::vector<std::string> curve_fields(const ResultRow& r, const CurvePoint& p) {
  return {std::to_string(kSchemaVersion), r.run_id, r.config.workload, r.config.backend,
          std::to_string(r.world_size), r.devices, std::to_string(r.config.threads), std::to_string(p.repetition),
          std::to_string(p.epoch), num(p.train_loss)};
}

}  // namespace tb
