"""Read and validate one trainbench result folder (results.csv, curves.csv, env.json).

Why: the report and the CI gate must never draw conclusions from a file they
misread. Every problem becomes an InputError whose message names the file (and
line/column) and says what is wrong; the CLIs print that one line and exit 2.

Input contract: CSV schema 2, whose columns (name, type, role, unit, nullable)
come from reports/schema.json, written by `trainbench schema --json` from the
harness's one table (harness/result_schema.cpp):
  results.csv  one row per repetition; status is "ok", "skipped: <why>" or
               "failed: <why>". Columns are read by name: a column this reader
               does not know is ignored, a nullable one missing from the file
               (added to the schema after the file was written) reads as empty.
  curves.csv   per-epoch training loss with the configuration's columns
               (optional file: without it the report has no loss-curve plot); a
               loss, here or as results.csv's final_loss, is never negative.
  env.json     environment capture; only schema_version and run_id are
               required, every other field is shown when present; the fields the
               reports read must have their JSON type (env_schema.py).
Schema-1 files (before the knob and trait columns) are refused with one line
saying what to do (README "Schema-1 files").
"""

import csv
import io
import json
import math
import os
from dataclasses import dataclass, field

import env_schema

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schema.json")
with open(SCHEMA_PATH, encoding="utf-8") as _f:
    SCHEMA = json.load(_f)
SCHEMA_VERSION = SCHEMA["schema_version"]

RESULT_COLUMNS = [c["name"] for c in SCHEMA["results"]]
CURVE_COLUMNS = [c["name"] for c in SCHEMA["curves"]]
COLUMN = {c["name"]: c for c in SCHEMA["results"] + SCHEMA["curves"]}  # name, type, role, unit, ...
UNITS = {name: c["unit"] for name, c in COLUMN.items()}                   # "" where none


def columns_with(*roles, table="results"):
    return [c["name"] for c in SCHEMA[table] if c["role"] in roles]


# A configuration's identity (reports group repetitions by these cells), what was
# trained (the oracle's row with the same cells is the reference), the phases.
CONFIG_COLUMNS = columns_with("workload", "setup", "knob")
WORKLOAD_COLUMNS = columns_with("workload")
KNOB_COLUMNS = columns_with("knob")
TRAIT_COLUMNS = columns_with("trait")
PHASE_COLUMNS = columns_with("phase")
# Checks beyond the types: an ok row's timings and sizes are positive; its phase times and
# the other measured seconds, joules and rates are finite and not negative (0 is a phase
# that took no time: transfer_s on the CPU), else they would be plotted as bars below 0
# or off the axis.
POSITIVE_COLUMNS = ["train_time_s", "samples_per_s", "epochs", "world_size"]
NON_NEGATIVE_COLUMNS = PHASE_COLUMNS + ["upload_s", "upload_gbps", "comm_busbw_gbps",
                                        "time_to_target_s", "gpu_energy_j"]
# The losses are MSE or cross-entropy: never negative, in results.csv (final_loss) as in
# curves.csv (train_loss). Nor infinite or NaN: trainbench (since its first commit) and the
# peers write a run whose loss is not finite as `failed: non-finite ...`, without a curve,
# so an ok row's or a curve's inf or NaN was edited in or corrupted (the report showed
# "inf", or "nan" as a loss mismatch, as if a backend had measured it). A failed row's loss
# is not read.
NOT_A_LOSS = "MSE and cross-entropy losses are never negative"
NOT_MEASURED = "trainbench writes a run whose loss is not finite as 'failed: ...', without a curve"


def _refuse_impossible_loss(raw, col, where):
    if raw[col] < 0:  # -inf too
        raise InputError(f"{where}, column '{col}': {raw[col]} is negative ({NOT_A_LOSS})")
    if math.isinf(raw[col]):
        raise InputError(f"{where}, column '{col}': {raw[col]} is infinite ({NOT_MEASURED})")
    if math.isnan(raw[col]):
        raise InputError(f"{where}, column '{col}': {raw[col]} is not a number ({NOT_MEASURED})")


INT64_LIMIT = 2 ** 63   # the harness writes 64-bit integers; a longer one is no measurement

SCHEMA_1_ADVICE = ("CSV schema 1, written by a trainbench before the knob and trait columns; "
                   "this report reads schema 2 only: re-run the configurations with this "
                   "trainbench, or render the folder with the reports/ of commit a80ca68 "
                   "(README \"Schema-1 files\")")


def printable(text):
    """Text as a UTF-8 terminal or report can show it: a path's bytes that are not UTF-8
    (kept by Python as surrogates) become \\udcXX escapes instead of an encoding error."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class InputError(Exception):
    """A result file that cannot be used; str() is the one line shown to the user."""


@dataclass
class Run:
    """One result folder: typed result rows, curve rows and the env.json dict."""
    path: str
    rows: list            # typed dicts keyed by RESULT_COLUMNS (+ "state", "reason", "line")
    curves: list          # dicts keyed by CURVE_COLUMNS
    env: dict
    has_curves: bool = True
    notes: list = field(default_factory=list)

    @property
    def run_id(self):
        return self.env.get("run_id") or (self.rows[0]["run_id"] if self.rows else "?")

    @property
    def run_ids(self):
        """Every run id the folder holds (its results rows', curves rows' and env.json's),
        in that order; more than one means the folder mixes runs (README "Reading a report")."""
        return list(self.run_id_sources())

    def run_id_sources(self):
        """{run id: ["results.csv: 40 rows", "curves.csv: 200 rows", "env.json"]}."""
        out = {}
        for name, rows in (("results.csv", self.rows), ("curves.csv", self.curves)):
            counts = {}
            for r in rows:
                counts[r["run_id"]] = counts.get(r["run_id"], 0) + 1
            for rid, n in counts.items():
                out.setdefault(rid, []).append(f"{name}: {n} row{'s' if n != 1 else ''}")
        rid = self.env.get("run_id")
        if rid:
            out.setdefault(str(rid), []).append("env.json")
        return out

    def mixed_runs(self):
        """None for a folder of one run, else one line saying which runs it mixes."""
        sources = self.run_id_sources()
        if len(sources) < 2:
            return None
        held = "; ".join(f"{rid} ({', '.join(where)})" for rid, where in sources.items())
        return f"{self.path}: holds {len(sources)} runs: {held}"


def _parse(text, where, col):
    """One cell by its schema type; "" is None (the callers decide whether it may be)."""
    kind = COLUMN[col]["type"]
    if text == "" or kind == "string":
        return None if text == "" else text
    if kind == "int":
        try:
            v = int(text)
        except ValueError:
            raise InputError(f"{where}, column '{col}': '{text}' is not an integer") from None
        # A 400-digit integer divided by anything raises OverflowError (memory in GiB).
        if not -INT64_LIMIT <= v < INT64_LIMIT:
            raise InputError(f"{where}, column '{col}': {text} is outside the 64-bit range")
        return v
    if kind == "float":
        try:
            return float(text)
        except ValueError:
            raise InputError(f"{where}, column '{col}': '{text}' is not a number") from None
    if text in ("true", "false"):
        return text == "true"
    raise InputError(f"{where}, column '{col}': '{text}' is not true or false")


def _read_text(path):
    """The file's text, strictly UTF-8 (a leading byte-order mark is dropped); a file that
    is not is an InputError naming the line and byte, never a traceback."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})") from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise InputError(f"{path}: line {line}, byte {column}: not UTF-8 text "
                         f"(0x{data[e.start]:02x}: {e.reason}; trainbench writes UTF-8: "
                         "was the file converted or edited in another encoding?)") from None


def _read_csv(path, columns, what, allow_no_rows=False):
    """Yield (line_number, dict of raw strings keyed by `columns`) after checking the header."""
    if not os.path.isfile(path):
        raise InputError(f"{path}: missing ({what} is required in a result folder)")
    text = _read_text(path)
    if not text.strip():
        raise InputError(f"{path}: empty file (expected a header and at least one row)")
    # newline="": only \n and \r end a record (str.splitlines would also split a quoted
    # cell at U+0085 or U+2028, valid characters in a UTF-8 workload name).
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [h.strip() for h in next(reader)]
        records = [(reader.line_num, r) for r in reader if r]
    except csv.Error as e:
        raise InputError(f"{path}: line {reader.line_num}: not CSV ({e})") from None
    # The schema version explains a different header best, so check it first.
    if header and header[0] == "schema_version":
        for line, rec in records:
            version = rec[0].strip() if rec else ""
            if version == "1":
                raise InputError(f"{path}: {SCHEMA_1_ADVICE}")
            if version != str(SCHEMA_VERSION):
                raise InputError(f"{path}: line {line}: unknown schema_version '{rec[0]}' "
                                 f"(this report reads version {SCHEMA_VERSION})")
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes:
        raise InputError(f"{path}: header repeats column(s) {', '.join(dupes)}")
    for col in columns:
        if col not in header and not COLUMN[col]["nullable"]:
            raise InputError(f"{path}: header lacks column '{col}' of CSV schema {SCHEMA_VERSION} "
                             "(reports/schema.json)")
    if not records and not allow_no_rows:
        raise InputError(f"{path}: header only, no rows")
    for line, rec in records:
        if len(rec) != len(header):
            raise InputError(f"{path}: line {line}: expected {len(header)} fields, "
                             f"found {len(rec)}")
        cells = dict(zip(header, (v.strip() for v in rec)))
        yield line, {c: cells.get(c, "") for c in columns}


# Columns every row needs, whatever its status (a skipped row names its configuration).
ALWAYS_REQUIRED = ["schema_version", "run_id", "workload", "backend", "status"]


def _type_row(raw, where):
    """Convert one results.csv row in place; ok rows must carry every non-nullable cell."""
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
    for col in RESULT_COLUMNS:
        text = raw[col]
        if text == "" and ((ok and not COLUMN[col]["nullable"]) or col in ALWAYS_REQUIRED):
            raise InputError(f"{where}, column '{col}': empty" + (" in an ok row" if ok else ""))
        raw[col] = _parse(text, where, col)
    if ok:
        for col in POSITIVE_COLUMNS:
            v = raw[col]
            if not (math.isfinite(v) and v > 0):
                raise InputError(f"{where}, column '{col}': {v} must be a positive number")
        for col in NON_NEGATIVE_COLUMNS:
            v = raw[col]
            if v is not None and not (math.isfinite(v) and v >= 0):
                raise InputError(f"{where}, column '{col}': {v} must be a finite number "
                                 "and not negative")
        if raw["threads"] < 0 or raw["repetition"] < 0:
            raise InputError(f"{where}: threads and repetition must not be negative")
        _refuse_impossible_loss(raw, "final_loss", where)
        acc = raw["final_accuracy"]
        if acc is not None and not (0.0 <= acc <= 1.0):
            raise InputError(f"{where}, column 'final_accuracy': {acc} is not in [0, 1]")
    raw["line"] = where
    return raw


def _load_curves(path):
    rows = []
    # Header only is fine: a run where every backend was skipped has no curves.
    for line, raw in _read_csv(path, CURVE_COLUMNS, "curves.csv", allow_no_rows=True):
        where = f"{path}: line {line}"
        for col in CURVE_COLUMNS:
            raw[col] = _parse(raw[col], where, col)
        for col in ("run_id", "workload", "backend", "repetition", "epoch", "train_loss"):
            if raw[col] is None:
                raise InputError(f"{where}, column '{col}': empty")
        _refuse_impossible_loss(raw, "train_loss", where)
        rows.append(raw)
    return rows


def _surrogate(value, where=""):
    """(JSON path, character) of the first string holding an unpaired UTF-16 surrogate
    (JSON's "\\ud800" decodes to one: it is no character and cannot be written as UTF-8)."""
    if isinstance(value, str):
        for ch in value:
            if "\ud800" <= ch <= "\udfff":
                return where or "(top level)", ch
    elif isinstance(value, dict):
        for k, v in value.items():
            found = _surrogate(k, where) or _surrogate(v, f"{where}.{k}" if where else str(k))
            if found:
                return found
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found = _surrogate(v, f"{where}[{i}]")
            if found:
                return found
    return None


def _load_env(path):
    if not os.path.isfile(path):
        raise InputError(f"{path}: missing (the environment capture must sit beside results.csv)")
    text = _read_text(path)
    try:
        env = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    except RecursionError:
        raise InputError(f"{path}: not an environment capture (JSON nested too deeply)") from None
    except ValueError as e:
        # Python refuses to read an integer of more than 4300 digits (int_max_str_digits).
        raise InputError(f"{path}: not an environment capture ({e})") from None
    found = _surrogate(env)
    if found:
        raise InputError(f"{path}: {found[0]}: \\u{ord(found[1]):04x} is an unpaired UTF-16 "
                         "surrogate, not a character (not valid Unicode text)")
    if not isinstance(env, dict):
        raise InputError(f"{path}: expected a JSON object at the top level")
    if env.get("schema_version") == 1:
        raise InputError(f"{path}: {SCHEMA_1_ADVICE}")
    if env.get("schema_version") != SCHEMA_VERSION:
        raise InputError(f"{path}: unknown schema_version {env.get('schema_version')!r} "
                         f"(this report reads version {SCHEMA_VERSION})")
    problem = env_schema.check(env)
    if problem:
        raise InputError(f"{path}: {problem}")
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
    bad_ceilings = env_schema.ceilings_problem(env)
    if bad_ceilings:
        run.notes.append(f"{os.path.join(result_dir, 'env.json')}: {bad_ceilings}: the measured "
                         "ceilings are ignored (no % of roofline)")
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
