"""Read and validate one trainbench result folder (results.csv, curves.csv, env.json).

Why: the report and the CI gate must never draw conclusions from a file they
misread. Every problem becomes an InputError whose message names the file (and
line/column) and says what is wrong; the CLIs print that one line and exit 2.

Input contract, schema_version 1 (written by the C++ harness):
  results.csv  one row per repetition, columns RESULT_COLUMNS in that order;
               status is "ok", "skipped: <why>" or "failed: <why>".
  curves.csv   per-epoch training loss, columns CURVE_COLUMNS (optional file:
               without it the report has no loss-curve plot and says so).
  env.json     environment capture; only schema_version and run_id are
               required, every other field is shown when present.
"""

import csv
import json
import math
import os
from dataclasses import dataclass, field

SCHEMA_VERSION = 1

RESULT_COLUMNS = [
    "schema_version", "run_id", "timestamp", "host", "workload", "backend", "model",
    "layers", "dataset", "task", "n_samples", "batch_size", "epochs", "lr", "momentum",
    "weight_decay", "seed", "precision", "world_size", "devices", "threads",
    "repetition", "train_time_s", "samples_per_s", "forward_s", "backward_s",
    "optimizer_s", "transfer_s", "comm_s", "allreduce_bytes_per_step", "comm_busbw_gbps",
    "final_loss", "final_accuracy",
    "param_checksum", "peak_host_mem_bytes", "peak_device_mem_bytes", "status",
]
CURVE_COLUMNS = [
    "schema_version", "run_id", "workload", "backend", "world_size", "devices",
    "threads", "repetition", "epoch", "train_loss",
]

# Column types. "req" columns must parse in every ok row; "opt" ones may be empty.
INT_COLUMNS_REQ = ["n_samples", "batch_size", "epochs", "world_size", "threads", "repetition"]
INT_COLUMNS_OPT = ["seed", "peak_host_mem_bytes", "peak_device_mem_bytes", "allreduce_bytes_per_step"]
FLOAT_COLUMNS_REQ = ["lr", "train_time_s", "samples_per_s", "forward_s", "backward_s",
                     "optimizer_s", "transfer_s", "comm_s", "final_loss", "param_checksum"]
FLOAT_COLUMNS_OPT = ["momentum", "weight_decay", "final_accuracy", "comm_busbw_gbps"]
POSITIVE_COLUMNS = ["train_time_s", "samples_per_s", "epochs", "world_size"]
PHASE_COLUMNS = ["transfer_s", "forward_s", "backward_s", "comm_s", "optimizer_s"]


class InputError(Exception):
    """A result file that cannot be used; str() is the one line shown to the user."""


@dataclass
class Run:
    """One result folder: typed result rows, curve rows and the env.json dict."""
    path: str
    rows: list            # dicts keyed by RESULT_COLUMNS (+ "state", "reason", "line")
    curves: list          # dicts keyed by CURVE_COLUMNS
    env: dict
    has_curves: bool = True
    notes: list = field(default_factory=list)

    @property
    def run_id(self):
        return self.env.get("run_id") or (self.rows[0]["run_id"] if self.rows else "?")


def _parse_int(text, where, col):
    try:
        return int(text)
    except ValueError:
        raise InputError(f"{where}, column '{col}': '{text}' is not an integer") from None


def _parse_float(text, where, col):
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{where}, column '{col}': '{text}' is not a number") from None


def _read_csv(path, columns, what, allow_no_rows=False):
    """Yield (line_number, dict of raw strings) after checking the header."""
    if not os.path.isfile(path):
        raise InputError(f"{path}: missing ({what} is required in a result folder)")
    with open(path, newline="", encoding="utf-8") as f:
        text = f.read()
    if not text.strip():
        raise InputError(f"{path}: empty file (expected a header and at least one row)")
    reader = csv.reader(text.splitlines())
    header = next(reader)
    records = [(reader.line_num, r) for r in reader if r]
    # An unknown schema version explains a different header best, so check it first.
    if header and header[0].strip() == "schema_version":
        for line, rec in records:
            if rec and rec[0].strip() != str(SCHEMA_VERSION):
                raise InputError(f"{path}: line {line}: unknown schema_version '{rec[0]}' "
                                 f"(this report reads version {SCHEMA_VERSION})")
    if [h.strip() for h in header] != columns:
        got = [h.strip() for h in header]
        for i, want in enumerate(columns):
            if i >= len(got) or got[i] != want:
                found = f"'{got[i]}'" if i < len(got) else "nothing"
                raise InputError(f"{path}: header does not match schema {SCHEMA_VERSION}: "
                                 f"column {i + 1} should be '{want}', found {found}")
        raise InputError(f"{path}: header has {len(got)} columns, schema {SCHEMA_VERSION} "
                         f"has {len(columns)} (extra: {', '.join(got[len(columns):])})")
    if not records and not allow_no_rows:
        raise InputError(f"{path}: header only, no rows")
    for line, rec in records:
        if len(rec) != len(columns):
            raise InputError(f"{path}: line {line}: expected {len(columns)} fields, "
                             f"found {len(rec)}")
        yield line, dict(zip(columns, (v.strip() for v in rec)))


def _type_row(raw, where):
    """Convert one results.csv row in place; ok rows must carry every metric."""
    status = raw["status"]
    if status == "ok":
        raw["state"], raw["reason"] = "ok", ""
    elif status.startswith("skipped:") or status.startswith("failed:"):
        state, _, reason = status.partition(":")
        raw["state"], raw["reason"] = state, reason.strip()
    else:
        raise InputError(f"{where}, column 'status': '{status}' is not 'ok', "
                         "'skipped: <why>' or 'failed: <why>'")
    ok = raw["state"] == "ok"
    for cols, parse, required in ((INT_COLUMNS_REQ, _parse_int, True),
                                  (INT_COLUMNS_OPT, _parse_int, False),
                                  (FLOAT_COLUMNS_REQ, _parse_float, True),
                                  (FLOAT_COLUMNS_OPT, _parse_float, False)):
        for col in cols:
            text = raw[col]
            if text == "":
                if ok and required:
                    raise InputError(f"{where}, column '{col}': empty in an ok row")
                raw[col] = None
            else:
                raw[col] = parse(text, where, col)
    if ok:
        for col in POSITIVE_COLUMNS:
            v = raw[col]
            if not (math.isfinite(v) and v > 0):
                raise InputError(f"{where}, column '{col}': {v} must be a positive number")
        if raw["threads"] < 0 or raw["repetition"] < 0:
            raise InputError(f"{where}: threads and repetition must not be negative")
        acc = raw["final_accuracy"]
        if acc is not None and not (0.0 <= acc <= 1.0):
            raise InputError(f"{where}, column 'final_accuracy': {acc} is not in [0, 1]")
    for col in ("workload", "backend"):
        if not raw[col]:
            raise InputError(f"{where}, column '{col}': empty")
    raw["line"] = where
    return raw


def _load_curves(path):
    rows = []
    # Header only is fine: a run where every backend was skipped has no curves.
    for line, raw in _read_csv(path, CURVE_COLUMNS, "curves.csv", allow_no_rows=True):
        where = f"{path}: line {line}"
        for col in ("world_size", "threads", "repetition", "epoch"):
            raw[col] = _parse_int(raw[col], where, col)
        raw["train_loss"] = _parse_float(raw["train_loss"], where, "train_loss")
        rows.append(raw)
    return rows


def _load_env(path):
    if not os.path.isfile(path):
        raise InputError(f"{path}: missing (the environment capture must sit beside results.csv)")
    try:
        with open(path, encoding="utf-8") as f:
            env = json.load(f)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    if not isinstance(env, dict):
        raise InputError(f"{path}: expected a JSON object at the top level")
    if env.get("schema_version") != SCHEMA_VERSION:
        raise InputError(f"{path}: unknown schema_version {env.get('schema_version')!r} "
                         f"(this report reads version {SCHEMA_VERSION})")
    if not env.get("run_id"):
        raise InputError(f"{path}: no run_id")
    return env


def load_run(result_dir):
    """Load and validate one result folder; raises InputError on any problem."""
    if not os.path.isdir(result_dir):
        raise InputError(f"{result_dir}: no such result folder")
    results_path = os.path.join(result_dir, "results.csv")
    rows = [_type_row(raw, f"{results_path}: line {line}")
            for line, raw in _read_csv(results_path, RESULT_COLUMNS, "results.csv")]
    env = _load_env(os.path.join(result_dir, "env.json"))
    curves_path = os.path.join(result_dir, "curves.csv")
    run = Run(path=result_dir, rows=rows, curves=[], env=env)
    if os.path.exists(curves_path):
        run.curves = _load_curves(curves_path)
    else:
        run.has_curves = False
        run.notes.append(f"{curves_path}: missing, so no loss curves for this run")
    return run


def load_runs(result_dirs):
    """Load several folders (merged reports keep each row's run_id and host)."""
    runs, seen = [], {}
    for d in result_dirs:
        run = load_run(d)
        for rid in {r["run_id"] for r in run.rows}:
            if rid in seen:
                raise InputError(f"{d}: run {rid} is already read from {seen[rid]}; "
                                 "a run may be given only once")
            seen[rid] = d
        runs.append(run)
    return runs
