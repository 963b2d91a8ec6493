#!/usr/bin/env python3
"""Keep a finished run in the repository: copy a result folder to
docs/results/<device>-<date>/ with a README naming the machine, so measured numbers
are committed deliberately (results/ itself is never committed).

Usage: reports/record.py RESULT_DIR [--dest docs/results] [--note TEXT]
The folder name is the run's device and its date: the first GPU's name
("nvidia-h100-80gb-hbm3", with "x4" when there are four of them) or, without
GPUs, the CPU model and "cpu". A second run of the same device and date goes to
<device>-<date>-2 (then -3, ...); the same run twice is refused. The README lists
the GPUs, driver, CPU, cores, memory, commit and command line from env.json, and
how to render the report again.

Exit status: 0 recorded; 2 bad input (one line on stderr; nothing is written): the
folder lacks results.csv or env.json, either cannot be read as the reports read
them (render.py's checks), the run was made from a dirty tree, it is recorded
already (a record with its run_id), or a record in its place cannot be read (its
env.json missing, unreadable or without a run_id: the line names it and why).
"""

import argparse
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from load import InputError, _read_text, load_run, printable  # noqa: E402

FILES = ["results.csv", "curves.csv", "env.json", "log.txt", "report.html", "microbench-cpu.json",
         "microbench_cuda.json", "gpu_targets.md"]
REQUIRED = ["results.csv", "env.json"]
DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[T ]|$)")   # the harness's ISO 8601 timestamp


def slug(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def date_of(timestamp):
    """'2026-11-22' of '2026-11-22T01:30:00Z'; 'undated' for anything else, so that a
    hand-edited timestamp ('../../x') never becomes part of a path."""
    m = DATE.match(timestamp or "")
    return m.group(1) if m else "undated"


def cuda_versions(build):
    """'toolkit 13.0.88, runtime 13.0' from env.json's build.cuda_toolkit and cuda_runtime
    (files before them have build.cuda, the runtime); '—' without CUDA."""
    toolkit = build.get("cuda_toolkit")
    runtime = build.get("cuda_runtime") or build.get("cuda")
    parts = [f"toolkit {toolkit}" if toolkit else None, f"runtime {runtime}" if runtime else None]
    return ", ".join(p for p in parts if p) or "—"


def device_of(env):
    """(folder label, one-line description) of the machine a run used."""
    gpus = env.get("gpus") or []
    if gpus:
        name = gpus[0].get("name", "gpu")
        same = all(g.get("name") == name for g in gpus)
        label = slug(name) + (f"-x{len(gpus)}" if len(gpus) > 1 and same else "")
        names = ", ".join(f"GPU {g.get('index', i)}: {g.get('name', '?')}" for i, g in enumerate(gpus))
        return label, names
    cpu = (env.get("host") or {}).get("cpu_model") or "unknown CPU"
    return slug(cpu) + "-cpu", f"no GPU ({env.get('gpu_unavailable_reason') or 'none found'})"


def readme(env, run_dir, note):
    host = env.get("host") or {}
    git = env.get("git") or {}
    build = env.get("build") or {}
    label, gpus = device_of(env)
    mem = host.get("memory_bytes")
    lines = [
        f"# {env.get('run_id', os.path.basename(run_dir))} on {label}",
        "",
        f"- Devices: {gpus}",
        f"- Driver: {env.get('driver') or 'none'}; CUDA {cuda_versions(build)}; NCCL {build.get('nccl') or '—'}",
        f"- CPU: {host.get('cpu_model', '?')}, {host.get('logical_cores', '?')} logical cores"
        + (f", {mem / 2**30:.0f} GiB memory" if isinstance(mem, (int, float)) else ""),
        f"- OS: {host.get('os', '?')}, host {host.get('hostname', '?')}",
        f"- Commit: {git.get('commit', '?')}" + (" (dirty)" if git.get("dirty") else ""),
        f"- Command: `{env.get('command_line', '?')}`",
        f"- Timestamp: {env.get('timestamp', '?')}",
    ]
    if note:
        lines += ["", note]
    lines += ["", "Files: results.csv (one row per repetition; schema in the project README), curves.csv,",
              "env.json, log.txt and report.html as the run wrote them. Render again with",
              "`/usr/bin/python3 reports/render.py <this folder>`.", ""]
    return "\n".join(lines)


def recorded_run_id(dest):
    """The run_id of the record at DEST, read from its env.json. Where that cannot be
    told (no env.json, unreadable, not JSON, no run_id) an InputError names the file and
    why: such a folder may hold this very run, so it is neither passed over for the next
    free name nor called a record of this run."""
    path = os.path.join(dest, "env.json")
    unknown = f"cannot tell which run {dest} holds (fix or move that folder, then record again)"
    if not os.path.isdir(dest):
        raise InputError(f"{dest}: already exists and is not a folder: {unknown}")
    if not os.path.lexists(path):
        raise InputError(f"{path}: missing: {unknown}")
    try:
        env = json.loads(_read_text(path))   # its "cannot read (why)", "not UTF-8 text" lines
    except InputError as e:
        raise InputError(f"{e}: {unknown}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}): "
                         f"{unknown}") from None
    except (ValueError, RecursionError) as e:   # an integer of 5000 digits; nested too deeply
        raise InputError(f"{path}: not readable as JSON ({e}): {unknown}") from None
    if not isinstance(env, dict):
        raise InputError(f"{path}: not a JSON object: {unknown}")
    theirs = env.get("run_id")
    if not isinstance(theirs, str) or not theirs:
        raise InputError(f"{path}: has no run_id (a non-empty string): {unknown}")
    return theirs


def free_dest(base, run_id):
    """BASE, else BASE-2, BASE-3, ...: the first that does not exist. A record there of
    the same run_id means: recorded already; one whose run cannot be read stops too
    (recorded_run_id says why)."""
    for n in range(1, 1000):
        dest = base if n == 1 else f"{base}-{n}"
        if not os.path.lexists(dest):
            return dest
        if recorded_run_id(dest) == run_id:
            raise InputError(f"{dest}: already exists and holds this run "
                             "(remove it, or keep the earlier record)")
    raise InputError(f"{base}: 999 records of this device and date already")


def record(run_dir, dest_root, note=""):
    for f in REQUIRED:
        if not os.path.isfile(os.path.join(run_dir, f)):
            raise InputError(f"{run_dir}: no {f} (is this a trainbench result folder?)")
    # What render.py checks (results.csv parses, env.json's fields have their types): a
    # record is kept to be rendered and compared later, so it must be readable now.
    env = load_run(run_dir).env
    if (env.get("git") or {}).get("dirty"):
        raise InputError(f"{run_dir}: made from a dirty tree (uncommitted changes): rerun from a commit")
    label, _ = device_of(env)
    # Device first, as docs/results/ names its folders (and as the docs link to them);
    # slug and date_of leave only [a-z0-9-], and the check below says so.
    name = f"{label}-{date_of(env.get('timestamp'))}"
    dest = free_dest(os.path.join(dest_root, name), env.get("run_id"))
    if os.path.dirname(os.path.realpath(dest)) != os.path.realpath(dest_root):
        raise InputError(f"{dest}: not a folder directly under --dest {dest_root}")
    os.makedirs(dest_root, exist_ok=True)
    # Built beside the destination and renamed into place: never a half-copied record.
    tmp = tempfile.mkdtemp(prefix=".record-", dir=dest_root)
    try:
        for f in FILES:
            src = os.path.join(run_dir, f)
            if os.path.isfile(src):
                shutil.copy2(src, os.path.join(tmp, f))
        with open(os.path.join(tmp, "README.md"), "w", encoding="utf-8") as f:
            f.write(readme(env, run_dir, note))
        os.rename(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def main(argv=None):
    head, _, rest = __doc__.partition("\n\n")  # the first paragraph, then the details
    ap = argparse.ArgumentParser(description=head, epilog=rest,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("result_dir", metavar="RESULT_DIR")
    ap.add_argument("--dest", default="docs/results", help="where records go (default: docs/results)")
    ap.add_argument("--note", default="", help="a line for the README (what was measured, the load)")
    args = ap.parse_args(argv)
    try:
        dest = record(args.result_dir.rstrip("/"), args.dest, args.note)
    except InputError as e:
        print(f"record.py: error: {printable(str(e))}", file=sys.stderr)
        return 2
    print(f"recorded {args.result_dir} in {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
