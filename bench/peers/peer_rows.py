"""What the PyTorch peer (pytorch_train.py) writes beside its training: whole rows
appended to a trainbench results.csv (and the matching curves.csv) in CSV schema 2
(reports/schema.json: the columns trainbench's own rows have, the peers' traits
included: implementation pytorch, so reports tell peers from trainbench's backends
without their names), in the file's own header order and number format; the
identity (run_id, timestamp, host) the rows share; and the environment facts
(torch, BLAS libraries, thread settings) recorded into the env.json beside the
results. A schema-1 results file is refused (README "Schema-1 files").
"""

import csv
import datetime
import json
import os
import platform
import socket
import sys

from peer_export import BadInput
from json_out import write_json

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "reports", "schema.json")
with open(SCHEMA_PATH, encoding="utf-8") as _f:
    _SCHEMA = json.load(_f)
SCHEMA_VERSION = _SCHEMA["schema_version"]
COLUMNS = {c["name"]: c for c in _SCHEMA["results"] + _SCHEMA["curves"]}
RESULT_COLUMNS = [c["name"] for c in _SCHEMA["results"]]
CURVE_COLUMNS = [c["name"] for c in _SCHEMA["curves"]]
CURVE_OWN = ("repetition", "epoch", "train_loss")  # the rest of a curve row comes from its row


# ---- the results CSV -----------------------------------------------------------------

def fmt_num(v):
    return "%.9g" % v  # as harness/result_row.cpp writes numbers


DIVERGED_FACTOR = 2.0  # harness/runner.cpp's kDivergedFactor


def check_not_diverged(final_loss, initial_loss):
    """Raises RuntimeError for a run whose final loss ends above twice the loss before
    training (both over the whole training set): diverged while finite, as
    harness/runner.cpp says."""
    if final_loss > DIVERGED_FACTOR * initial_loss:
        raise RuntimeError(f"diverged: final loss {final_loss:.6g} is over twice the loss before training "
                           f"({initial_loss:.6g}): lower --lr")


def _reader_columns():
    """(RESULT_COLUMNS, CURVE_COLUMNS) of reports/load.py: the header the reports read."""
    reports = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "reports")
    if reports not in sys.path:
        sys.path.insert(0, reports)
    import load  # noqa: PLC0415 (stdlib only)
    return load.RESULT_COLUMNS, load.CURVE_COLUMNS


def _create(path, header):
    """Writes a header-only CSV at PATH unless one is there: whole or not at all (a
    temporary file linked into place), so ranks starting together never see it half."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(_csv_line(header))
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)


class Results:
    """Appends whole rows to a results.csv (and curves.csv) in its own header order. A
    results file that does not exist yet gets the reports' header (and, when it is called
    results.csv, a curves.csv beside it), created with the first row, so bad input found
    before any row leaves nothing behind; its folder must exist."""

    def __init__(self, path):
        self.path = path
        folder = os.path.dirname(os.path.abspath(path))
        curves = os.path.join(folder, "curves.csv")
        named = os.path.basename(path) == "results.csv"
        self.pending = {}  # path -> header, for files created at their first row
        if os.path.exists(path):
            self.header = self._header(path)
            self.last = self._last_row(path)
        else:
            if not os.path.isdir(folder):
                raise BadInput(f"{path}: no folder {folder} to create the results file in")
            self.header, curve_cols = _reader_columns()
            self.pending[path] = self.header
            self.last = {}
            if named and not os.path.exists(curves):
                self.pending[curves] = curve_cols
        self.curves = curves if named and (os.path.isfile(curves) or curves in self.pending) else None
        self.curves_header = (self.pending.get(curves) or self._header(curves, ("epoch", "train_loss"))
                              if self.curves else None)

    @staticmethod
    def _header(path, required=("backend", "status")):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise BadInput(f"{path}: {e.strerror}") from e
        if not data.endswith(b"\n"):
            raise BadInput(f"{path}: no final newline (refusing to append to a truncated file)")
        first, _, rest = data.partition(b"\n")
        header = next(csv.reader([first.decode("utf-8")]))
        if not all(c in header for c in required):
            raise BadInput(f"{path}: not a trainbench results file (header: {first[:60].decode('utf-8')})")
        row = next(csv.reader([rest.split(b"\n", 1)[0].decode("utf-8")]), None) if rest else None
        if header[0] == "schema_version" and row and row[0] != str(SCHEMA_VERSION):
            raise BadInput(f"{path}: CSV schema {row[0]}; the peer appends schema-{SCHEMA_VERSION} rows "
                           "only: re-run the suite with this trainbench (README \"Schema-1 files\")")
        missing = [c for c in (RESULT_COLUMNS if "status" in required else CURVE_COLUMNS)
                   if c not in header and not COLUMNS[c]["nullable"]]
        if missing:
            raise BadInput(f"{path}: header lacks column(s) {', '.join(missing)} of CSV schema "
                           f"{SCHEMA_VERSION} (written by another trainbench?)")
        return header

    @staticmethod
    def _last_row(path):
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
        return rows[-1] if rows else {}

    def _append(self, path, header, values):
        # A nullable column the file predates is left out (added later within the version).
        unknown = [c for c in values if c not in header and not COLUMNS.get(c, {}).get("nullable")]
        if unknown:
            raise BadInput(f"{path}: header lacks column(s) {sorted(unknown)}")
        line = _csv_line([values.get(c, "") for c in header])
        if path in self.pending:  # the first row: the new results file (and curves.csv) appear
            for new, new_header in self.pending.items():
                _create(new, new_header)
            self.pending.clear()
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, line.encode("utf-8"))  # one write per row, as the harness does
        finally:
            os.close(fd)

    def append(self, values):
        self._append(self.path, self.header, values)

    def append_curve(self, values):
        if self.curves:
            self._append(self.curves, self.curves_header, values)


def _csv_line(fields):
    class Line:
        text = ""

        def write(self, s):
            self.text += s
    out = Line()
    csv.writer(out, lineterminator="\n").writerow(fields)
    return out.text


def peer_traits(backend, device):
    """The trait cells of a peer row, as trainbench writes its own backends' (BackendTraits):
    torch-ddp is on the GPU with nccl (devices are GPU ids) and on the CPU with gloo;
    torch-hogwild's workers share one model in shared memory, updating it without locks."""
    gpu = backend in ("torch-cuda", "torch-dp") or (backend == "torch-ddp" and device != "cpu")
    parallelism = {"torch-dp": "dp", "torch-ddp": "ddp", "torch-hogwild": "shm"}.get(backend, "none")
    base = "" if parallelism == "none" else ("torch-cuda" if gpu else "torch-cpu")
    return {"implementation": "pytorch", "device_kind": "gpu" if gpu else "cpu",
            "parallelism": parallelism, "scaling_base": base, "oracle": "false",
            "asynchronous": boolean(backend == "torch-hogwild")}


def peer_knobs(backend):
    """The knob cells that say what a peer ran with; empty (not applicable) otherwise."""
    if backend == "torch-cuda":
        return {"data_placement": "device"}  # the dataset is moved to the GPU before timing
    if backend == "torch-ddp":
        return {"bucket_mb": "25", "overlap": "true"}  # DistributedDataParallel's defaults
    return {}


def boolean(v):
    return "true" if v else "false"


def base_row(w, ident, backend, threads, device, warmup):
    """The cells every row of one peer configuration shares (schema 2), status and
    measurements aside."""
    return {
        "schema_version": str(SCHEMA_VERSION), "run_id": ident["run_id"], "timestamp": ident["timestamp"],
        "host": ident["host"], "workload": w["workload"], "backend": backend, "model": w["model"],
        "layers": ",".join(str(v) for v in w["layers"]), "dataset": w["dataset"], "task": w["task"],
        "n_samples": str(w["n"]), "batch_size": str(w["batch"]), "epochs": str(w["epochs"]),
        "warmup": str(warmup), "lr": fmt_num(w["lr"]), "momentum": fmt_num(w["momentum"]),
        "weight_decay": fmt_num(w["weight_decay"]), "seed": str(w["seed"]),
        "shuffle": boolean(w["shuffle"]), "drop_last": boolean(w["drop_last"]),
        "precision": w.get("precision", "fp32"), "world_size": "1",
        "devices": device, "threads": str(threads), **peer_knobs(backend),
        **peer_traits(backend, device), "repetition": "0",
    }


def curve_row(row, epoch, train_loss):
    """A curves.csv row of repetition row["repetition"]: the row's configuration cells."""
    out = {c: row[c] for c in CURVE_COLUMNS if c in row and c not in CURVE_OWN}
    out.update(repetition=row["repetition"], epoch=str(epoch), train_loss=fmt_num(train_loss))
    return out


# ---- provenance --------------------------------------------------------------------------

def loaded_blas():
    """Shared BLAS/OpenMP libraries mapped into this process (which OpenBLAS build torch got)."""
    libs = set()
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            for line in f:
                path = line.split()[-1]
                name = os.path.basename(path)
                if any(k in name for k in ("blas", "lapack", "gomp", "iomp", "mkl")):
                    libs.add(os.path.realpath(path))
    except OSError:
        pass
    return sorted(libs)


def record_env(results_path, torch, threads, argv):
    """Adds a "peer_torch" entry to the env.json beside the results (if there is one)."""
    folder = os.path.dirname(os.path.abspath(results_path))
    cands = [os.path.join(folder, "env.json"), results_path + ".env.json"]
    path = next((p for p in cands if os.path.isfile(p)), None)
    if path is None:
        return
    with open(path, encoding="utf-8") as f:
        env = json.load(f)
    info = {
        "torch": torch.__version__ if torch else None,
        "python": platform.python_version(),
        "threads": threads,
        "cuda_available": bool(torch and torch.cuda.is_available()),
        "libraries": loaded_blas(),
        "LD_LIBRARY_PATH": os.environ.get("LD_LIBRARY_PATH", ""),
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE", ""),
        "OPENBLAS_L2_SIZE": os.environ.get("OPENBLAS_L2_SIZE", ""),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", ""),
        "command_line": " ".join(argv),
    }
    if torch:
        config = torch.__config__.show()
        info["cpu_capability"] = next((l.split(":", 1)[1].strip() for l in config.splitlines()
                                       if "CPU capability usage" in l), "")
        info["blas_info"] = next((f.split("=", 1)[1] for f in config.replace(",", " ").split()
                                  if f.startswith("BLAS_INFO=")), "")
        info["mkldnn"] = bool(torch.backends.mkldnn.is_available())
    env["peer_torch"] = info  # the last peer run into this folder
    write_json(path, env)


def identity(results):
    last = results.last
    now = datetime.datetime.now(datetime.timezone.utc)
    host = last.get("host") or socket.gethostname()
    return {"run_id": last.get("run_id") or now.strftime("%Y%m%d-%H%M%S-") + f"{host}-{os.getpid()}",
            "timestamp": now.strftime("%Y-%m-%dT%H:%M:%SZ"), "host": host}

