#!/usr/bin/env python3
"""PyTorch peer: train an exported trainbench workload with PyTorch and append
result rows (backend torch-cpu, torch-cuda, torch-dp, torch-ddp, torch-hogwild) to a
trainbench results.csv (created, with the header reports/load.py reads, when it does not exist).

The export (`trainbench export ... --out DIR`, formats in harness/export.h) fixes
the data, the initial parameters and the row order of every epoch, so PyTorch
trains exactly what the backends train: nn.Linear layers with ReLU between them,
MSELoss / CrossEntropyLoss (mean over the batch), torch.optim.SGD with the same
momentum and weight decay, the same batches (the short last batch kept and
averaged over its size, or dropped with drop_last).

Timing follows the harness (harness/runner.cpp): W untimed warm-up epochs, then R
repetitions, each starting again from the initial parameters with fresh momentum;
a repetition's time is the sum of its E epochs' wall times (time.perf_counter; on
CUDA after torch.cuda.synchronize()). On a GPU each repetition first uploads the
dataset (`.to(device)` of the host tensors, between synchronisations, untimed by the
train time) and reports it as upload_s / upload_gbps, as trainbench's GPU backends
do. After each repetition, untimed: the mean loss (and accuracy) over the whole set
and the sum of the parameters.

Usage:
  pytorch_train.py EXPORT_DIR --results RESULTS.csv [--threads 1,all] [--devices auto]
                   [--warmup W] [--reps R] [--run-id ID] [--save-params FILE]
  pytorch_train.py EXPORT_DIR --results RESULTS.csv --devices hogwild --workers 1,2 [--threads T]
  torchrun --nnodes 1 --rdzv_backend c10d --rdzv_endpoint 127.0.0.1:PORT --nproc_per_node N
           pytorch_train.py EXPORT_DIR --results RESULTS.csv --devices ddp
           [--ddp-backend gloo|nccl] [--threads T] ...
  (PORT: any free local port; run_peers.py picks one per launch)
Exit codes: 0 rows written (ok or skipped); 1 a run failed (its row says why);
2 bad input (one line on stderr, nothing written).

Rows: torch-cpu once per --threads value (torch.set_num_threads); torch-cuda on
GPU 0 with the data resident on the device (when torch.cuda.is_available(), else a
`skipped:` row); torch-dp: torch.nn.DataParallel over every visible GPU, data on
GPU 0 (when torch.cuda.device_count() >= 2, else a `skipped:` row). --devices auto
runs torch-cpu, torch-cuda and torch-dp.

torch-ddp (--devices ddp, one process per rank, launched by torchrun; see
run_ddp): DistributedDataParallel with backend gloo on the CPU (devices "cpu",
T threads per rank) or nccl with one GPU per rank (LOCAL_RANK). Each rank trains
its shard of every global batch, as trainbench's cpu-ddp / cuda-ddp do
(harness/ddp_plan.cpp shard_of); only rank 0 writes rows. nccl with fewer GPUs
than ranks (or not under torchrun at all) writes one `skipped:` row.

torch-hogwild (--devices hogwild, torch_hogwild.py): torch.multiprocessing workers
sharing the model's parameters (Hogwild!), once per --workers value, T threads each.

Without an importable torch every row is `skipped: python3-torch not importable
(...)`.
"""

import argparse
import math
import os
import sys
import time

import numpy as np

# The sibling modules, also when this file is run by path from another folder (by
# torchrun --no_python, or through runpy).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import disturbance  # noqa: E402
from peak_rss import peak_rss_bytes, reset_peak_rss  # noqa: E402
from peer_export import BadInput, load_export, read_data, read_orders, read_params, write_params  # noqa: E402
from peer_rows import (Results, base_row, check_not_diverged, curve_row, fmt_num, identity,  # noqa: E402
                       record_env)
import torch_hogwild  # noqa: E402

EVAL_CHUNK = 4096  # rows per forward pass when measuring the final loss


# ---- training --------------------------------------------------------------------------

def build_model(torch, layers, flat):
    """nn.Sequential(Linear, ReLU, ..., Linear) holding the flat parameters (W_l then b_l)."""
    mods = []
    for i in range(len(layers) - 1):
        lin = torch.nn.Linear(layers[i], layers[i + 1])
        mods.append(lin)
        if i + 2 < len(layers):
            mods.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*mods)
    load_flat(torch, model, flat)
    return model


def linears(model):
    return [m for m in model if hasattr(m, "weight")]


def load_flat(torch, model, flat):
    off = 0
    with torch.no_grad():
        for lin in linears(model):
            for p in (lin.weight, lin.bias):
                k = p.numel()
                p.copy_(torch.from_numpy(flat[off:off + k]).view_as(p))
                off += k
    if off != flat.size:
        raise BadInput(f"params.bin holds {flat.size} values, the model needs {off}")


def flat_params(model):
    return np.concatenate([p.detach().cpu().numpy().ravel()
                           for lin in linears(model) for p in (lin.weight, lin.bias)])


class Trainer:
    """One workload on one device; train_epoch mirrors harness/cpu_trainer_base.cpp."""

    def __init__(self, torch, w, task, x, y, orders, init, device, dp_ids=None):
        self.torch, self.w, self.device = torch, w, device
        self.cuda = device.type == "cuda"
        self.x_host = torch.from_numpy(x)
        if task == "classification":
            self.y_host = torch.from_numpy(y.astype(np.int64))
            self.loss_fn = torch.nn.CrossEntropyLoss()
        else:
            self.y_host = torch.from_numpy(y)
            self.loss_fn = torch.nn.MSELoss()
        self.x, self.y = self.x_host, self.y_host
        self.upload()
        self.classification = task == "classification"
        self.orders = None if orders is None else [torch.from_numpy(o).to(device) for o in orders]
        self.init = init
        self.model = build_model(torch, w["layers"], init).to(device)
        # torch-dp: DataParallel scatters each batch in torch.chunk pieces over the
        # GPUs, gathers the outputs on GPU 0 and takes the (global-batch mean) loss
        # there, and sums the replicas' gradients onto GPU 0's parameters.
        self.net = self.model if not dp_ids else torch.nn.DataParallel(self.model, device_ids=dp_ids)
        self.reset()

    def upload(self):
        """The dataset to the device from pageable host memory, as trainbench's
        prepare_repetition does before each repetition's timed epochs: (seconds, bytes)
        between two synchronisations, or None on the CPU (nothing moves)."""
        if not self.cuda:
            return None
        self.x = self.y = None  # the previous copy is freed first: the peak holds one
        self.sync()
        t0 = time.perf_counter()
        self.x = self.x_host.to(self.device)
        self.y = self.y_host.to(self.device)
        self.sync()
        seconds = time.perf_counter() - t0
        nbytes = (self.x_host.element_size() * self.x_host.nelement()
                  + self.y_host.element_size() * self.y_host.nelement())
        return seconds, nbytes

    def reset(self):
        """Initial parameters and a fresh optimizer (zero momentum), as set_params does."""
        load_flat(self.torch, self.model, self.init)
        self.opt = self.torch.optim.SGD(self.model.parameters(), lr=self.w["lr"],
                                        momentum=self.w["momentum"],
                                        weight_decay=self.w["weight_decay"])
        self.phases = dict(transfer_s=0.0, forward_s=0.0, backward_s=0.0, optimizer_s=0.0)

    def sgd_step(self, order, r0, r1, loss_fn, scale=None):
        """One SGD step on rows [r0, r1) of the epoch (positions in `order`, or the rows
        themselves without one): loss_fn(output, target), times `scale` when given,
        backward, optimizer step. Adds the step's transfer / forward / backward /
        optimizer times to self.phases (on the CPU only: per-phase clocks on CUDA would
        need a device sync per phase) and returns the loss tensor."""
        pc = time.perf_counter
        t0 = pc()
        if order is None:
            xb, yb = self.x[r0:r1], self.y[r0:r1]
        else:
            idx = order[r0:r1]
            xb, yb = self.x.index_select(0, idx), self.y.index_select(0, idx)
        t1 = pc()
        loss = loss_fn(self.net(xb), yb)
        if scale is not None:
            loss = loss * scale
        t2 = pc()
        loss.backward()  # under DDP this includes the bucketed all-reduce, overlapped with it
        t3 = pc()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        t4 = pc()
        if not self.cuda:
            ph = self.phases
            ph["transfer_s"] += t1 - t0
            ph["forward_s"] += t2 - t1
            ph["backward_s"] += t3 - t2
            ph["optimizer_s"] += t4 - t3
        return loss

    def train_epoch(self, epoch):
        """One epoch over the batches of `epoch`'s order; returns (mean step loss, first
        non-finite step or -1)."""
        torch = self.torch
        B, rows = self.w["batch"], self.w["rows_per_epoch"]
        order = None if self.orders is None else self.orders[epoch % len(self.orders)]
        losses = []
        for s in range(self.w["batches_per_epoch"]):
            b0 = s * B
            loss = self.sgd_step(order, b0, min(b0 + B, rows), self.loss_fn)
            if self.cuda:
                losses.append(loss.detach())
            else:
                v = loss.item()
                if not math.isfinite(v):
                    return 0.0, s
                losses.append(v)
        if self.cuda:
            losses = torch.stack(losses).double().cpu().tolist()  # one sync per epoch
            for s, v in enumerate(losses):
                if not math.isfinite(v):
                    return 0.0, s
        return (sum(losses) / len(losses) if losses else 0.0), -1

    def evaluate(self):
        """Mean loss over every row (MSE: mean over outputs too) and accuracy; untimed."""
        torch = self.torch
        n, total, hits = self.x.shape[0], 0.0, 0
        with torch.no_grad():
            for r0 in range(0, n, EVAL_CHUNK):
                out = self.model(self.x[r0:r0 + EVAL_CHUNK])
                t = self.y[r0:r0 + EVAL_CHUNK]
                if self.classification:
                    total += torch.nn.functional.cross_entropy(out, t, reduction="sum").double().item()
                    hits += int((out.argmax(dim=1) == t).sum().item())
                else:
                    total += ((out - t).double() ** 2).sum().item() / out.shape[1]
        return total / n, (hits / n if self.classification else None)

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()


def settle_allocator(tr, warmup):
    """After the warm-up, one untimed evaluation, as after every repetition. Its large
    tensors raise glibc's dynamic mmap and trim thresholds; without it the first
    repetition, the only one then not preceded by an evaluation, ran torch-cpu 10-20% slower
    than the others (small MLP at 1 thread: 122-133k against 145-150k samples/s; with
    it 149k, as the rest), the repetitions' step allocations still mmapped and trimmed.
    Nothing without a warm-up: the evaluation of the loss before training (run_config)
    already came first, as trainbench's runner does."""
    if warmup > 0:
        tr.evaluate()


def upload_cells(uploaded):
    """upload_s and upload_gbps (bytes / s / 1e9) of Trainer.upload's (seconds, bytes);
    empty where nothing was uploaded (CPU)."""
    if not uploaded or uploaded[0] <= 0:
        return {"upload_s": "", "upload_gbps": ""}
    seconds, nbytes = uploaded
    return {"upload_s": fmt_num(seconds), "upload_gbps": fmt_num(nbytes / seconds / 1e9)}


def run_config(torch, w, data, init, orders, device, threads, args, results, ident, backend,
               dp_ids=None):
    """Warm-up, then R repetitions; appends one row per repetition. Returns False on failure."""
    task, x, y = data
    devname = "cpu" if device.type == "cpu" else str(device.index or 0)
    if dp_ids:
        devname = ",".join(str(i) for i in dp_ids)
    row_threads = threads if device.type == "cpu" else 1
    world = str(len(dp_ids)) if dp_ids else "1"
    base = dict(base_row(w, ident, backend, row_threads, devname, args.warmup), world_size=world)
    torch.set_num_threads(threads)
    label = f"{backend} {w['workload']} t{row_threads}"
    # peak_host_mem_bytes is this configuration's, as trainbench's (harness/runner.cpp): from
    # what is resident now (the data, torch), not the peak of an earlier configuration.
    reset_peak_rss()
    try:
        tr = Trainer(torch, w, task, x, y, orders, init, device, dp_ids)
        if tr.cuda:
            torch.backends.cuda.matmul.allow_tf32 = w.get("precision") == "tf32"
            torch.cuda.reset_peak_memory_stats(device)
        initial_loss = tr.evaluate()[0]  # before any step: a final loss above it has diverged
        for e in range(args.warmup):
            _, bad = tr.train_epoch(e)
            if bad >= 0:
                raise RuntimeError(f"non-finite loss at epoch {e + 1} step {bad + 1} (warm-up)")
        settle_allocator(tr, args.warmup)
        tr.sync()
        first = None  # the first repetition's start: short ones are judged from there
        for rep in range(args.reps):
            tr.reset()
            uploaded = tr.upload()
            curve, train_s = [], 0.0
            before = disturbance.snapshot()
            first = first or before
            for e in range(w["epochs"]):
                t0 = time.perf_counter()
                mean_loss, bad = tr.train_epoch(e)
                tr.sync()
                train_s += time.perf_counter() - t0
                if bad >= 0:
                    raise RuntimeError(f"non-finite loss at epoch {e + 1} step {bad + 1}")
                curve.append(mean_loss)
            # Who else used the CPUs over the same epochs (harness/runner.cpp's figure).
            after = disturbance.snapshot()
            disturbed = disturbance.row_cells(disturbance.judged_from(first, before, after), after)
            loss, acc = tr.evaluate()
            if not math.isfinite(loss):
                raise RuntimeError("non-finite final loss after training")
            check_not_diverged(loss, initial_loss)
            flat = flat_params(tr.model)
            checksum = float(np.sum(flat, dtype=np.float64))
            row = dict(base)
            row.update({
                "repetition": str(rep), "train_time_s": fmt_num(train_s),
                "samples_per_s": fmt_num(w["epochs"] * w["rows_per_epoch"] / train_s),
                **{k: fmt_num(v) for k, v in tr.phases.items()},
                **upload_cells(uploaded),
                "comm_s": fmt_num(0.0), "allreduce_bytes_per_step": "0", "comm_busbw_gbps": "",
                "final_loss": fmt_num(loss), "final_accuracy": "" if acc is None else fmt_num(acc),
                "param_checksum": "%.12g" % checksum,
                "peak_host_mem_bytes": str(peak_rss_bytes()),
                "peak_device_mem_bytes": str(torch.cuda.max_memory_allocated(device) if tr.cuda else 0),
                **disturbed,
                "status": "ok",
            })
            record_repetition(results, row, curve, label, loss,
                              args.save_params if rep + 1 == args.reps else None, flat)
        return True
    except MemoryError:
        why = "out of host memory"
    except (RuntimeError, ValueError) as e:
        why = " ".join(str(e).split()) or type(e).__name__
    row = dict(base, status=f"failed: {why}")
    results.append(row)
    print(f"{label}: failed: {why}", file=sys.stderr)
    return False


# ---- torch-ddp: DistributedDataParallel, one process per rank (under torchrun) -----------

def record_repetition(results, row, curve, label, loss, params_path, flat):
    """One finished repetition: its row, its per-epoch loss curve (keyed like the row),
    its progress line, and the parameters when params_path is given (the last one)."""
    results.append(row)
    for e, v in enumerate(curve):
        results.append_curve(curve_row(row, e + 1, v))
    print(f"{label} rep {row['repetition']}: ok  {float(row['samples_per_s']):.4g} samples/s  "
          f"final_loss {loss:.6g}", flush=True)
    if params_path:
        write_params(params_path, flat)


def shard_of(rows, rank, world):
    """harness/ddp_plan.cpp shard_of: contiguous rows [begin, end) of a batch of `rows`;
    the first rows % world ranks get one row more."""
    base, rem = divmod(rows, world)
    begin = rank * base + min(rank, rem)
    return begin, begin + base + (1 if rank < rem else 0)


class DdpTrainer(Trainer):
    """Trainer on one rank: the model wrapped in DistributedDataParallel, every global
    batch cut into the ranks' shards."""

    def __init__(self, torch, w, task, x, y, orders, init, device, rank, world):
        super().__init__(torch, w, task, x, y, orders, init, device)
        self.rank, self.world = rank, world
        # Each rank's loss is a sum over its rows (see train_epoch), not a mean.
        self.sum_loss = (torch.nn.CrossEntropyLoss(reduction="sum") if self.classification
                         else torch.nn.MSELoss(reduction="sum"))
        self.per_row = 1 if self.classification else w["layers"][-1]  # MSE also averages outputs
        ids = [device.index] if device.type == "cuda" else None
        # DDP broadcasts rank 0's parameters now; every rank loaded the same init anyway.
        self.net = torch.nn.parallel.DistributedDataParallel(self.model, device_ids=ids)

    def train_epoch(self, epoch):
        """One epoch on this rank's shards; returns (mean over steps of the global-batch
        loss, first non-finite step or -1). The step losses are summed over ranks once,
        after the epoch (one collective per epoch, not per step)."""
        torch = self.torch
        B, rows, world = self.w["batch"], self.w["rows_per_epoch"], self.world
        order = None if self.orders is None else self.orders[epoch % len(self.orders)]
        losses = []
        for s in range(self.w["batches_per_epoch"]):
            b0 = s * B
            count = min(b0 + B, rows) - b0  # the global batch (a short last batch: fewer rows)
            r0, r1 = shard_of(count, self.rank, world)
            # DDP *averages* the ranks' gradients (sum / world). For that average to be
            # the gradient of the global-batch mean loss (1/count) * sum over all rows,
            # each rank's loss is its shard's mean scaled by local_rows * world / count,
            # i.e. its row sum * world / count. This holds for uneven shards too (count
            # not a multiple of world, or a rank with no rows: its sum is 0 and its
            # gradient zero). Summed over ranks and divided by world, these losses are
            # the global-batch mean loss, which is what the curve records.
            loss = self.sgd_step(order, b0 + r0, b0 + r1, self.sum_loss, world / (count * self.per_row))
            losses.append(loss.detach())
        if not losses:
            return 0.0, -1
        total = torch.stack(losses).double()
        torch.distributed.all_reduce(total)  # sum over ranks
        losses = (total / world).cpu().tolist()
        for s, v in enumerate(losses):
            if not math.isfinite(v):
                return 0.0, s
        return sum(losses) / len(losses), -1

    def max_over_ranks(self, values):
        t = self.torch.tensor(values, dtype=self.torch.float64, device=self.device)
        self.torch.distributed.all_reduce(t, op=self.torch.distributed.ReduceOp.MAX)
        return t.cpu().tolist()


def ddp_context(torch, ddp_backend, world):
    """(rank, world, local_rank) from torchrun's environment, or a skip reason."""
    if not torch.distributed.is_available():
        return None, f"torch.distributed is not available in torch {torch.__version__}"
    if ddp_backend == "gloo" and not torch.distributed.is_gloo_available():
        return None, f"torch {torch.__version__} was built without gloo"
    if ddp_backend == "nccl":
        if not torch.distributed.is_nccl_available():
            return None, f"torch {torch.__version__} was built without NCCL (CUDA {torch.version.cuda or 'none'})"
        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if gpus < world:
            return None, (f"torch-ddp over NCCL needs {world} GPUs (one per rank), torch sees {gpus} "
                          f"(torch {torch.__version__}, built with CUDA {torch.version.cuda or 'none'})")
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        return None, "not launched by torchrun (RANK / WORLD_SIZE unset)"
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    return (rank, world, int(os.environ.get("LOCAL_RANK", rank))), None


def run_ddp(torch, w, data, init, orders, threads, args, results, ident):
    """One torch-ddp configuration on this rank. Rank 0 appends the rows; the rows' times
    and phases are the maximum over ranks, as trainbench's cpu-ddp reports them."""
    world_arg = int(os.environ.get("WORLD_SIZE", "0")) or args.world_size or 1
    ctx, why = ddp_context(torch, args.ddp_backend, world_arg)
    if ctx is None:
        devs = "cpu" if args.ddp_backend == "gloo" else ",".join(str(i) for i in range(world_arg))
        if int(os.environ.get("RANK", "0")) == 0:
            row = dict(base_row(w, ident, "torch-ddp", threads if args.ddp_backend == "gloo" else 1, devs,
                                args.warmup), world_size=str(world_arg), status=f"skipped: {why}")
            results.append(row)
            print(f"torch-ddp {w['workload']} n{world_arg}: skipped: {why}")
        return True
    rank, world, local = ctx
    cuda = args.ddp_backend == "nccl"
    device = torch.device("cuda", local) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    torch.set_num_threads(threads)
    dist = torch.distributed
    dist.init_process_group(args.ddp_backend)
    devname = ",".join(str(i) for i in range(world)) if cuda else "cpu"
    row_threads = 1 if cuda else threads
    base = dict(base_row(w, ident, "torch-ddp", row_threads, devname, args.warmup), world_size=str(world))
    label = f"torch-ddp {w['workload']} n{world} t{row_threads}"
    task, x, y = data
    reset_peak_rss()  # rank 0's peak_host_mem_bytes from here, as run_config's
    try:
        tr = DdpTrainer(torch, w, task, x, y, orders, init, device, rank, world)
        initial_loss = tr.evaluate()[0] if rank == 0 else None  # rank 0 alone evaluates (below)
        for e in range(args.warmup):
            _, bad = tr.train_epoch(e)
            if bad >= 0:
                raise RuntimeError(f"non-finite loss at epoch {e + 1} step {bad + 1} (warm-up)")
        settle_allocator(tr, args.warmup)
        for rep in range(args.reps):
            tr.reset()
            uploaded = tr.upload()
            # The slowest rank's upload: its seconds and (max of the negated rate) its rate.
            up = tr.max_over_ranks([uploaded[0], -uploaded[1] / max(uploaded[0], 1e-12)]) if uploaded else None
            curve, train_s = [], 0.0
            for e in range(w["epochs"]):
                tr.sync()
                dist.barrier()  # every rank starts the epoch together
                t0 = time.perf_counter()
                mean_loss, bad = tr.train_epoch(e)  # ends in a collective: all ranks are done
                tr.sync()
                train_s += time.perf_counter() - t0
                if bad >= 0:
                    raise RuntimeError(f"non-finite loss at epoch {e + 1} step {bad + 1}")
                curve.append(mean_loss)
            ph = tr.phases
            times = tr.max_over_ranks([train_s, ph["transfer_s"], ph["forward_s"],
                                       ph["backward_s"], ph["optimizer_s"]])
            train_s = times[0]
            flat = flat_params(tr.model)
            # DDP keeps the replicas identical; check it (max |rank's params - rank 0's|).
            ref = torch.from_numpy(flat.copy()).to(device)
            dist.broadcast(ref, 0)
            diff = tr.max_over_ranks([float((torch.from_numpy(flat).to(device) - ref).abs().max())])[0]
            if diff != 0.0:
                raise RuntimeError(f"ranks ended with different parameters (max diff {diff:.3g})")
            if rank != 0:
                continue
            loss, acc = tr.evaluate()
            if not math.isfinite(loss):
                raise RuntimeError("non-finite final loss after training")
            check_not_diverged(loss, initial_loss)
            checksum = float(np.sum(flat, dtype=np.float64))
            row = dict(base)
            row.update({
                "repetition": str(rep), "train_time_s": fmt_num(train_s),
                "samples_per_s": fmt_num(w["epochs"] * w["rows_per_epoch"] / train_s),
                "transfer_s": fmt_num(times[1]), "forward_s": fmt_num(times[2]),
                # backward_s includes DDP's gradient all-reduce (overlapped, not separable
                # from outside torch), so comm_s is 0 like every unmeasured phase.
                "backward_s": fmt_num(times[3]), "optimizer_s": fmt_num(times[4]), "comm_s": fmt_num(0.0),
                **upload_cells((up[0], -up[1] * up[0]) if up else None),
                "allreduce_bytes_per_step": str(4 * flat.size if world > 1 else 0),
                "comm_busbw_gbps": "",
                "final_loss": fmt_num(loss), "final_accuracy": "" if acc is None else fmt_num(acc),
                "param_checksum": "%.12g" % checksum,
                "peak_host_mem_bytes": str(peak_rss_bytes()),
                "peak_device_mem_bytes": str(torch.cuda.max_memory_allocated(device) if cuda else 0),
                "status": "ok",
            })
            if cuda:  # no per-phase clocks on the GPU (see Trainer.sgd_step)
                for k in ("transfer_s", "forward_s", "backward_s", "optimizer_s"):
                    row[k] = ""
            record_repetition(results, row, curve, label, loss,
                              args.save_params if rep + 1 == args.reps else None, flat)
        dist.barrier()
        # No destroy_process_group() and no normal interpreter exit: with torch 1.13's gloo,
        # tearing down DDP's Reducer joins a gloo worker thread that waits for the GIL the
        # tearing-down thread holds (seen hanging here). Every row and file is written.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    except MemoryError:
        why = "out of host memory"
    except (RuntimeError, ValueError) as e:
        why = " ".join(str(e).split()) or type(e).__name__
    if rank == 0:
        results.append(dict(base, status=f"failed: {why}"))
    print(f"{label} rank {rank}: failed: {why}", file=sys.stderr, flush=True)
    # The other ranks may be blocked in a collective: leave now, torchrun ends the rest.
    os._exit(1)



def parse_threads(text):
    out = []
    for t in text.split(","):
        if t == "all":
            out.append(len(os.sched_getaffinity(0)))
        elif t.isdigit() and int(t) >= 1:
            out.append(int(t))
        else:
            raise BadInput(f"--threads: invalid value '{t}' (expected integers >= 1 or 'all', e.g. 1,all)")
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("export_dir", help="folder written by `trainbench export`")
    ap.add_argument("--results", required=True,
                    help="trainbench results CSV to append to (created with the reports' header "
                         "when absent; its folder must exist)")
    ap.add_argument("--threads", help="torch-cpu thread counts, e.g. 1,all (default: the export's)")
    ap.add_argument("--devices", default="auto",
                    help="cpu, cuda, dp, ddp, hogwild, or auto (cpu, plus cuda and dp: a row each, ok "
                         "or skipped; default). ddp runs under torchrun (one process per rank)")
    ap.add_argument("--workers", default="2",
                    help="--devices hogwild: worker processes, a list such as 1,2 (default 2)")
    ap.add_argument("--ddp-backend", default="gloo", choices=("gloo", "nccl"),
                    help="--devices ddp: gloo on the CPU (default) or nccl, one GPU per rank")
    ap.add_argument("--world-size", type=int,
                    help="--devices ddp: the world size a skipped row names when not under torchrun")
    ap.add_argument("--warmup", type=int, help="untimed warm-up epochs (default: the export's)")
    ap.add_argument("--reps", type=int, help="timed repetitions (default: the export's)")
    ap.add_argument("--run-id", help="run_id for the rows (default: the last row's, else a new one)")
    ap.add_argument("--save-params", help="write the last repetition's parameters (TBPARAM1)")
    args = ap.parse_args(argv[1:])
    try:
        w = load_export(args.export_dir)
        results = Results(args.results)
        if args.devices not in ("auto", "cpu", "cuda", "dp", "ddp", "hogwild"):
            raise BadInput(f"--devices: invalid value '{args.devices}' (allowed: auto, cpu, cuda, dp, ddp, hogwild)")
        workers = [int(v) for v in args.workers.split(",") if v.isdigit() and 1 <= int(v) <= 4096]
        if not workers or len(workers) != len(args.workers.split(",")):
            raise BadInput(f"--workers: invalid value '{args.workers}' (expected integers 1..4096, e.g. 1,2)")
        if args.world_size is not None and args.world_size < 1:
            raise BadInput("--world-size must be >= 1")
        threads = parse_threads(args.threads) if args.threads else [int(w["threads"])]
        args.warmup = w["warmup"] if args.warmup is None else args.warmup
        args.reps = w["reps"] if args.reps is None else args.reps
        if args.warmup < 0 or args.reps < 1:
            raise BadInput("--warmup must be >= 0 and --reps >= 1")
        ident = identity(results)
        if args.run_id:
            ident["run_id"] = args.run_id
        try:
            import torch  # noqa: PLC0415 (optional dependency: rows say skipped without it)
        except Exception as e:  # ImportError, or a broken install raising anything else
            if "KeyboardInterrupt" in str(e):  # Ctrl-C during torch's C++ start-up arrives as a RuntimeError
                raise KeyboardInterrupt from e
            why = f"skipped: python3-torch not importable ({type(e).__name__}: {' '.join(str(e).split())})"
            if args.devices == "ddp":
                if os.environ.get("RANK", "0") == "0":
                    world = args.world_size or int(os.environ.get("WORLD_SIZE", "1"))
                    results.append(dict(base_row(w, ident, "torch-ddp", threads[-1], "cpu", args.warmup),
                                        world_size=str(world), status=why))
                    print(f"torch-ddp {w['workload']}: {why}")
                return 0
            if args.devices == "hogwild":
                for n in workers:
                    results.append(dict(base_row(w, ident, "torch-hogwild", threads[-1], "cpu", args.warmup),
                                        world_size=str(n), workers=str(n), status=why))
                print(f"torch-hogwild {w['workload']}: {why}")
                return 0
            for t in threads:
                results.append(dict(base_row(w, ident, "torch-cpu", t, "cpu", args.warmup), status=why))
            print(f"torch-cpu {w['workload']}: {why}")
            return 0
        data = read_data(os.path.join(args.export_dir, "data.bin"), shared=args.devices == "ddp")
        if data[1].shape[1] != w["d"] or data[0] != w["task"]:
            raise BadInput(f"{args.export_dir}/data.bin does not match workload.json")
        init = read_params(os.path.join(args.export_dir, "params.bin"))
        layers = w["layers"]
        need = sum(layers[i] * layers[i + 1] + layers[i + 1] for i in range(len(layers) - 1))
        if init.size != need:
            raise BadInput(f"{args.export_dir}/params.bin holds {init.size} values, layers {layers} need {need}")
        orders = None
        if w["shuffle"]:
            orders = read_orders(os.path.join(args.export_dir, "orders.bin"), w["n"])
    except BadInput as e:
        print(f"pytorch_train.py: {e}", file=sys.stderr)
        return 2

    if args.devices == "ddp":
        return 0 if run_ddp(torch, w, data, init, orders, threads[-1], args, results, ident) else 1
    record_env(args.results, torch, threads, argv)
    ok = True
    if args.devices == "hogwild":
        for n in workers:
            ok &= torch_hogwild.run_hogwild(sys.modules[__name__], torch, w, data, init, orders, threads[-1], n,
                                            args, results, ident)
        return 0 if ok else 1
    if args.devices in ("auto", "cpu"):
        for t in threads:
            ok &= run_config(torch, w, data, init, orders, torch.device("cpu"), t, args, results,
                             ident, "torch-cpu")
    if args.devices in ("auto", "cuda"):
        if torch.cuda.is_available():
            ok &= run_config(torch, w, data, init, orders, torch.device("cuda", 0), threads[-1], args,
                             results, ident, "torch-cuda")
        else:
            why = ("skipped: torch.cuda.is_available() is False (torch "
                   f"{torch.__version__}, built with CUDA {torch.version.cuda or 'none'})")
            results.append(dict(base_row(w, ident, "torch-cuda", 1, "0", args.warmup), status=why))
            print(f"torch-cuda {w['workload']}: {why}")
    if args.devices in ("auto", "dp"):
        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if gpus >= 2:
            ok &= run_config(torch, w, data, init, orders, torch.device("cuda", 0), threads[-1], args,
                             results, ident, "torch-dp", dp_ids=list(range(gpus)))
        else:
            why = (f"skipped: torch.nn.DataParallel needs 2 GPUs, torch sees {gpus} (torch "
                   f"{torch.__version__}, built with CUDA {torch.version.cuda or 'none'})")
            results.append(dict(base_row(w, ident, "torch-dp", 1, "", args.warmup), status=why))
            print(f"torch-dp {w['workload']}: {why}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
