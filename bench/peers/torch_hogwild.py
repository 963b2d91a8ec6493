"""torch-hogwild: the PyTorch peer of trainbench's cpu-hogwild, as pytorch/examples'
mnist_hogwild trains: torch.multiprocessing with the spawn start method (as the example
sets it), model.share_memory(), N worker processes each running the training loop with
its own torch.optim.SGD (its own momentum) on the shared parameters, without locks.

What differs from the example, on purpose (README "Hogwild!"): the example's processes
each iterate the whole dataset every epoch with their own shuffle (N passes per epoch);
here worker w trains batches w, w+N, w+2N, ... of the exported order of every epoch,
as cpu-hogwild does, so the workers together make one pass and rows compare with every
other backend's. Epochs are synchronised (the parent releases the workers, then waits
for all of them): train_time_s is the sum over epochs of the time from the release to
the last worker's end; phases are the mean over workers of each worker's sums.

Called by pytorch_train.py (`--devices hogwild --workers N`); `lib` is that module (its
model helpers and record_repetition). A worker that raises, exits or is killed ends the
configuration at once with a `failed:` row (the others are killed); so does one that ran
fewer than its batches of an epoch (check_shares).
"""

import math
import os
import time

from peak_rss import peak_rss_bytes, reset_peak_rss

POLL_S = 0.05
STATS = 7  # per worker: loss_sum, steps, nonfinite_step, transfer, forward, backward, optimizer
EXIT = -1


def worker(rank, n, threads, model, x, y, orders, w, classification, cmd, stop, go, done, stats, errors,
           parent):
    """One worker process (spawned): wait for a command, train its batches of that epoch."""
    import torch  # noqa: PLC0415 (a fresh interpreter)
    torch.set_num_threads(threads)
    loss_fn = torch.nn.CrossEntropyLoss() if classification else torch.nn.MSELoss()
    B, rows, nb = w["batch"], w["rows_per_epoch"], w["batches_per_epoch"]
    opt, pc = None, time.perf_counter
    try:
        while True:
            while not go[rank].acquire(timeout=0.2):
                if os.getppid() != parent:
                    return  # the parent died: nothing to report to
            epoch, reset = cmd[0], cmd[1]
            if epoch == EXIT:
                return
            if opt is None or reset:  # a new repetition: fresh momentum, as torch-cpu's reset()
                opt = torch.optim.SGD(model.parameters(), lr=w["lr"], momentum=w["momentum"],
                                      weight_decay=w["weight_decay"])
            order = None if orders is None else orders[epoch % len(orders)]
            s_loss, steps, bad, ph = 0.0, 0, -1, [0.0, 0.0, 0.0, 0.0]
            for s in range(rank, nb, n):
                if stop.value:
                    break
                r0, r1 = s * B, min(s * B + B, rows)
                t0 = pc()
                if order is None:
                    xb, yb = x[r0:r1], y[r0:r1]
                else:
                    idx = order[r0:r1]
                    xb, yb = x.index_select(0, idx), y.index_select(0, idx)
                t1 = pc()
                loss = loss_fn(model(xb), yb)
                t2 = pc()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                t3 = pc()
                opt.step()  # in place on the shared parameters, no lock
                t4 = pc()
                for i, d in enumerate((t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                    ph[i] += d
                v = loss.item()
                if not math.isfinite(v):
                    bad = s
                    stop.value = 1
                    break
                s_loss += v
                steps += 1
            stats[rank * STATS:(rank + 1) * STATS] = [s_loss, steps, bad, *ph]
            done.release()
    except BaseException as e:  # noqa: BLE001 (reported to the parent, then this worker ends)
        text = " ".join(f"{type(e).__name__}: {e}".split()).encode("utf-8", "replace")[:400]
        errors[rank * 512:rank * 512 + len(text)] = text
        raise SystemExit(1) from None


class Workers:
    """N spawned workers sharing `model`, driven one epoch at a time."""

    def __init__(self, torch, model, x, y, orders, w, classification, threads, n):
        ctx = torch.multiprocessing.get_context("spawn")
        self.n = n
        self.cmd = ctx.Array("q", 2, lock=False)
        self.stop = ctx.Value("i", 0, lock=False)
        self.go = [ctx.Semaphore(0) for _ in range(n)]
        self.done = ctx.Semaphore(0)
        self.stats = ctx.Array("d", STATS * n, lock=False)
        self.errors = ctx.Array("c", 512 * n, lock=False)
        self.procs = [ctx.Process(target=worker, daemon=True,
                                  args=(r, n, threads, model, x, y, orders, w, classification, self.cmd,
                                        self.stop, self.go, self.done, self.stats, self.errors, os.getpid()))
                      for r in range(n)]
        for p in self.procs:
            p.start()

    def epoch(self, e, reset):
        """Releases every worker on epoch e, waits for all; returns per-worker stats lists."""
        self.cmd[0], self.cmd[1], self.stop.value = e, 1 if reset else 0, 0
        for g in self.go:
            g.release()
        got = 0
        while got < self.n:
            if self.done.acquire(timeout=POLL_S):
                got += 1
                continue
            for r, p in enumerate(self.procs):
                if p.exitcode is not None:
                    msg = bytes(self.errors[r * 512:(r + 1) * 512]).rstrip(b"\0").decode("utf-8", "replace")
                    why = f"failed: {msg}" if msg else (
                        f"was killed by signal {-p.exitcode}" if p.exitcode < 0 else f"exited with status {p.exitcode}")
                    raise RuntimeError(f"torch-hogwild: worker {r} of {self.n} {why}")
        return [list(self.stats[r * STATS:(r + 1) * STATS]) for r in range(self.n)]

    def close(self, kill=False):
        if not kill:
            self.cmd[0] = EXIT
            for g in self.go:
                g.release()
            for p in self.procs:
                p.join(timeout=5)
        for p in self.procs:
            if p.is_alive():
                p.kill()
                p.join()


def check_shares(stats, nb, n, e):
    """Every worker ran each of its batches (rank, rank + n, ...) of epoch e: a worker that
    returned early would leave the shared model trained on part of the data, an `ok` row
    with a worse loss."""
    for r, s in enumerate(stats):
        want = len(range(r, nb, n))
        if int(s[1]) != want:
            raise RuntimeError(f"worker {r} of {n} ran {int(s[1])} of its {want} steps in epoch {e + 1}")


def run_hogwild(lib, torch, w, data, init, orders, threads, n, args, results, ident):
    """One torch-hogwild configuration: warm-up, then R repetitions; a row each."""
    task, x, y = data
    classification = task == "classification"
    base = dict(lib.base_row(w, ident, "torch-hogwild", threads, "cpu", args.warmup),
                world_size=str(n), workers=str(n))
    label = f"torch-hogwild {w['workload']} n{n} t{threads}"
    torch.set_num_threads(threads)
    # The parent's peak from here (its shared copies of the data below included), as
    # run_config's: not an earlier --workers value's nor torch's import.
    reset_peak_rss()
    # The data and the orders in shared memory once (the workers map them, as the example's
    # processes share the dataset object); the model's parameters too (share_memory()).
    xt = torch.from_numpy(x).clone().share_memory_()
    yt = torch.from_numpy(y.astype("int64") if classification else y).clone().share_memory_()
    ot = None if orders is None else [torch.from_numpy(o).clone().share_memory_() for o in orders]
    model = lib.build_model(torch, w["layers"], init)
    model.share_memory()
    workers = None
    try:
        initial_loss = evaluate(torch, model, xt, yt, classification)[0]  # over twice it at the end: diverged
        workers = Workers(torch, model, xt, yt, ot, w, classification, threads, n)
        for e in range(args.warmup):
            stats = workers.epoch(e, reset=e == 0)
            if any(s[2] >= 0 for s in stats):
                raise RuntimeError(f"non-finite loss at epoch {e + 1} step "
                                   f"{int(min(s[2] for s in stats if s[2] >= 0)) + 1} (warm-up)")
            check_shares(stats, w["batches_per_epoch"], n, e)
        for rep in range(args.reps):
            lib.load_flat(torch, model, init)  # the workers wait: the parameters are the parent's to set
            curve, train_s, phases = [], 0.0, [0.0] * 4
            for e in range(w["epochs"]):
                t0 = time.perf_counter()
                stats = workers.epoch(e, reset=e == 0)
                train_s += time.perf_counter() - t0
                if any(s[2] >= 0 for s in stats):
                    raise RuntimeError(f"non-finite loss at epoch {e + 1} step "
                                       f"{int(min(s[2] for s in stats if s[2] >= 0)) + 1}")
                check_shares(stats, w["batches_per_epoch"], n, e)
                steps = sum(s[1] for s in stats)
                curve.append(sum(s[0] for s in stats) / steps if steps else 0.0)
                for i in range(4):
                    phases[i] += sum(s[3 + i] for s in stats) / n
            loss, acc = evaluate(torch, model, xt, yt, classification)
            if not math.isfinite(loss):
                raise RuntimeError("non-finite final loss after training")
            lib.check_not_diverged(loss, initial_loss)
            flat = lib.flat_params(model)
            row = dict(base)
            row.update({
                "repetition": str(rep), "train_time_s": lib.fmt_num(train_s),
                "samples_per_s": lib.fmt_num(w["epochs"] * w["rows_per_epoch"] / train_s),
                "transfer_s": lib.fmt_num(phases[0]), "forward_s": lib.fmt_num(phases[1]),
                "backward_s": lib.fmt_num(phases[2]), "optimizer_s": lib.fmt_num(phases[3]),
                "comm_s": lib.fmt_num(0.0), "allreduce_bytes_per_step": "0", "comm_busbw_gbps": "",
                "final_loss": lib.fmt_num(loss), "final_accuracy": "" if acc is None else lib.fmt_num(acc),
                "param_checksum": "%.12g" % float(flat.sum(dtype="float64")),
                "peak_host_mem_bytes": str(peak_rss_bytes()),  # the parent's, as cpu-hogwild's
                "peak_device_mem_bytes": "0", "status": "ok",
            })
            lib.record_repetition(results, row, curve, label, loss,
                                  args.save_params if rep + 1 == args.reps else None, flat)
        workers.close()
        return True
    except MemoryError:
        why = "out of host memory"
    except (RuntimeError, ValueError, OSError) as e:
        why = " ".join(str(e).split()) or type(e).__name__
    if workers is not None:
        workers.close(kill=True)
    results.append(dict(base, status=f"failed: {why}"))
    print(f"{label}: failed: {why}", flush=True)
    return False


def evaluate(torch, model, x, y, classification, chunk=4096):
    """Mean loss over every row (MSE: mean over outputs too) and accuracy, in the parent."""
    n, total, hits = x.shape[0], 0.0, 0
    with torch.no_grad():
        for r0 in range(0, n, chunk):
            out, t = model(x[r0:r0 + chunk]), y[r0:r0 + chunk]
            if classification:
                total += torch.nn.functional.cross_entropy(out, t, reduction="sum").double().item()
                hits += int((out.argmax(dim=1) == t).sum().item())
            else:
                total += ((out - t).double() ** 2).sum().item() / out.shape[1]
    return total / n, (hits / n if classification else None)
