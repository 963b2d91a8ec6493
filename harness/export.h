// harness/export.h — `trainbench export`: a workload's data, initial parameters and
// batch order on disk, so an outside trainer (bench/peers/pytorch_train.py) can train
// exactly what the backends train. Nothing is trained. Shapes: N rows, D features,
// O outputs (regression targets per row, or classes); E epochs.
//
// DIR/ holds (every integer and float little-endian; each binary file starts with a
// 64-byte header: an 8-byte magic, int64 version = 1, then int64 fields, zero-padded):
//
//   data.bin     magic "TBDATA\0\0"; version; task (0 regression, 1 classification);
//                N; D; O; 2 reserved int64 (0). At byte 64: X, N x D float32 row-major;
//                then regression: Y, N x O float32 row-major; classification: N int32
//                labels in [0, O).
//   params.bin   the initial parameters in harness/params_file.h's format ("TBPARAM1",
//                int64 count, float32 values): layer l = W_l (out x in) then b_l.
//   orders.bin   only with --shuffle: magic "TBORDER\0"; version; E; N; 4 reserved.
//                At byte 64: E x N int64, row e = the permutation epoch e visits
//                (datasets/shuffle.h). Without it every epoch visits rows 0..N-1.
//   workload.json  model, layers, task, n, d, o, batch, lr, momentum, weight_decay,
//                epochs, warmup, reps, threads, shuffle, drop_last, seed, workload name,
//                dataset description, rows/batches per epoch, the loss, the files.
//
// numpy: h = np.fromfile(p, '<i8', count=8); X = np.fromfile(p, '<f4', count=n*d,
// offset=64).reshape(n, d); Y = np.fromfile(p, '<f4', count=n*o, offset=64+4*n*d).
// Epoch e of a run (warm-up epoch w of the harness) uses order e mod E (w mod E).
#pragma once

#include <string>
#include <vector>

#include "datasets/dataset.h"
#include "harness/run_config.h"

namespace tb {

inline constexpr int kExportVersion = 1;

// Writes DIR (which must not exist, or be an empty folder) for configuration c over
// data: everything goes into a temporary sibling folder first, renamed to DIR at the
// end, so DIR appears complete or not at all. Throws UsageError when DIR is taken,
// std::runtime_error when writing fails (the temporary folder is removed).
void export_workload(const RunConfig& c, const Dataset& data, const std::string& dir);

// `trainbench export` flag handling: the `run` flags (without --backend/--save-params),
// --out DIR required. Returns the exit code; throws UsageError/DataError on bad input.
int cmd_export(const std::vector<std::string>& args);

}  // namespace tb
