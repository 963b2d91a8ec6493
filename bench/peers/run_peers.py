#!/usr/bin/env python3
"""Adds PyTorch peer rows to a finished suite run: for every entry of the suite
that runs cpu-omp, `trainbench export` the entry's workload into a temporary
folder inside the results folder, train it with bench/peers/pytorch_train.py at
the entry's --threads values (and on CUDA when PyTorch sees a GPU; torch-dp rows,
run or skipped), append the rows to RESULTS_DIR/results.csv (and curves.csv), and
remove the export.

torch-hogwild: every entry that runs cpu-hogwild is also trained by PyTorch's Hogwild!
(torch.multiprocessing workers sharing the model, bench/peers/torch_hogwild.py) at the
entry's --workers (else 2) and the last of its --threads.

torch-ddp: every entry that runs cpu-ddp is also trained by torch
DistributedDataParallel over gloo on the CPU, one process per rank launched with
`torchrun --nnodes 1 --rdzv_backend c10d --rdzv_endpoint 127.0.0.1:PORT
--nproc_per_node N --no_python PYTHON pytorch_train.py ... --devices ddp` (or
`PYTHON -m torch.distributed.run ...` when torchrun is not on PATH), at the entry's
--world-sizes (else 2) and the last of its --threads. PORT is a free local port
picked just before each launch (not --standalone's fixed 29400), so peer runs on
one machine at the same time do not share a rendezvous store. Every
entry that runs cuda-ddp is trained the same way over nccl, one GPU per rank, when
PyTorch sees enough GPUs; otherwise pytorch_train.py writes a `skipped:` torch-ddp
row (no torchrun launch).

Without an importable torch (asked of --python once) nothing is launched under
torchrun: every entry gets `skipped: python3-torch not importable (...)` rows instead
(pytorch_train.py writes them, torch-ddp ones too, at each world size) and the exit
code is 0.

Usage: run_peers.py --suite FILE --results RESULTS_DIR [--trainbench PATH]
                    [--only NAME,...] [--devices auto|cpu|cuda]
Exit codes: 0 every peer row ok or skipped; 1 some peer run failed; 2 bad input.
"""

import argparse
import functools
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
LIST_FLAGS = {"--backend", "--backends", "--threads", "--world-sizes", "--workers"}  # not export flags
NO_VALUE = {"--shuffle", "--drop-last", "--no-overlap", "--deterministic", "--cuda-graph", "--no-ceilings"}


class SuiteError(ValueError):
    """A suite line this script reads differently from trainbench: "FILE:LINE: why"."""


def _words(text):
    """text split at the whitespace C++'s `>>` splits at (str.split() also splits at
    Unicode spaces, which harness/suite_file.cpp keeps inside a word)."""
    return [w for w in re.split(r"[ \t\n\v\f\r]+", text) if w]


def parse_suite(path, depth=0):
    """[(name, flag tokens with defaults first)] as harness/suite.cpp reads the file
    (`include: FILE` relative to this file's folder, with its own defaults). Words are
    split at whitespace with no shell quoting, and a line with ' " or \\ is refused, as
    trainbench refuses it: shlex would have read `--label "a b"` as one word, trainbench
    as two."""
    entries, defaults = [], []
    with open(path, "rb") as f:
        data = f.read()
    # Lines end at \n alone, as std::getline ends them (Python's text mode also ends one at
    # a lone \r, and the two readers' line numbers would part).
    for no, raw in enumerate(data.split(b"\n"), 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise SuiteError(f"{path}:{no}: not valid UTF-8 (byte 0x{raw[e.start]:02X} at offset {e.start})") from None
        line = line.split("#", 1)[0]
        quote = re.search(r"['\"\\]", line)
        if quote:
            raise SuiteError(f"{path}:{no}: quoting is not supported (found {quote.group()}): a suite line is "
                             "split at whitespace, by trainbench and run_peers.py alike; write it without "
                             "quotes or backslashes")
        head_text, colon, rest = line.partition(":")
        head = _words(head_text)
        if not head:
            continue
        if not colon or len(head) != 1:
            raise SuiteError(f"{path}:{no}: expected 'NAME: --flag value ...' or 'defaults: --flag value ...'")
        if head[0] == "include":
            inc = _words(rest)
            if len(inc) != 1:
                raise SuiteError(f"{path}:{no}: include: expected one suite file name")
            if depth >= 8:
                raise SuiteError(f"{path}:{no}: include: more than 8 levels")
            inc_path = os.path.join(os.path.dirname(path), inc[0])
            try:
                entries += parse_suite(inc_path, depth + 1)
            except OSError as e:
                raise SuiteError(f"{path}:{no}: {inc_path}: cannot open suite file: {e.strerror or e}") from None
        elif head[0] == "defaults":
            defaults += _words(rest)
        else:
            entries.append((head[0], defaults + _words(rest)))
    return entries


def _flag_words(tokens):
    """(name, its words, its value) for each flag of a token list, in order."""
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        name, eq, inline = tok.partition("=")
        if eq or name in NO_VALUE or i + 1 >= len(tokens):
            yield name, [tok], inline
        else:
            yield name, tokens[i:i + 2], tokens[i + 1]
            i += 1
        i += 1


def split_flags(tokens):
    """-> (export tokens, {list flag: value}). A flag given again (an entry overriding its
    suite's defaults) replaces the earlier value, as harness/suite_file.cpp reads it: the
    tokens hold each flag once, since trainbench refuses a flag given twice on one line."""
    keep, lists = {}, {}
    for name, words, value in _flag_words(tokens):
        if name in LIST_FLAGS:
            lists[name] = value
        else:
            keep[name] = words  # the first one's place, the last one's value
    return [w for words in keep.values() for w in words], lists


def without(flags, *names):
    """flags less the flags `names` (with their values): those the caller sets itself."""
    return [w for name, words, _ in _flag_words(flags) if name not in names for w in words]


def free_port():
    """A TCP port free on 127.0.0.1 now: the kernel's pick for a socket bound to port 0,
    closed again. (Another process could take it before torchrun binds it; the window is
    the launch's start-up.)"""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launcher(python, nproc):
    """torchrun (Debian's python3-torch installs /usr/bin/torchrun), else the module."""
    torchrun = shutil.which("torchrun")
    head = [torchrun] if torchrun else [python, "-m", "torch.distributed.run"]
    # One node with its own c10d rendezvous store on a free local port. --standalone is
    # the same but always on port 29400: a second launch on the machine then joins the
    # first's store as a client and fails when the first launch exits. A fresh id per
    # launch, as --standalone assigns (torch 1.13 spells these flags with underscores).
    rdzv = ["--nnodes", "1", "--rdzv_backend", "c10d", "--rdzv_endpoint", f"127.0.0.1:{free_port()}",
            "--rdzv_id", str(uuid.uuid4())]
    # `-r 1 -t 1` (ranks' stdout to a log file and tee'd here, prefixed with the rank):
    # torch 1.13's default `-r 0` fails on Python 3.11 (Std.from_str("0") is None because
    # 3.11 no longer iterates an IntFlag's zero member; 'NoneType' object has no attribute 'get').
    return [*head, *rdzv, "--nproc_per_node", str(nproc), "-r", "1", "-t", "1",
            "--no_python", python]


@functools.lru_cache(maxsize=None)
def torch_importable(python):
    """Whether `import torch` works in PYTHON; without it there is no torchrun to launch
    (and none of torch.distributed.run): pytorch_train.py writes skipped rows alone."""
    r = subprocess.run([python, "-c", "import torch"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return r.returncode == 0


@functools.lru_cache(maxsize=None)
def gpu_count(python):
    """GPUs PyTorch sees (0 without torch or CUDA); asked once, only for cuda-ddp entries."""
    code = "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)"
    r = subprocess.run([python, "-c", code], capture_output=True, text=True)
    try:
        return int(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return 0


def omp_threads(t):
    """OMP_NUM_THREADS for a --threads value: a count, as pytorch_train.py reads 'all' (the
    CPUs this process may run on); libgomp and torch reject the word itself."""
    return str(len(os.sched_getaffinity(0))) if t == "all" else t


def peer_runs(args, backends, lists, only):
    """The pytorch_train.py command lines for one suite entry."""
    script = os.path.join(HERE, "pytorch_train.py")
    runs = []
    ddp = {"cpu-ddp", "cuda-ddp"} & set(backends)
    hogwild = "cpu-hogwild" in backends
    if args.devices not in ("ddp", "hogwild") and (
            "cpu-omp" in backends or (only is not None and not ddp and not hogwild)):
        runs.append([args.python, script, "--threads", lists.get("--threads", "all"),
                     "--devices", args.devices])
    if hogwild and args.devices in ("auto", "hogwild"):
        runs.append([args.python, script, "--threads", lists.get("--threads", "all").split(",")[-1],
                     "--devices", "hogwild", "--workers", lists.get("--workers") or "2"])
    if args.devices not in ("auto", "ddp"):
        return runs
    worlds = [int(v) for v in (lists.get("--world-sizes") or "2").split(",") if v.strip().isdigit()]
    threads = ["--threads", lists["--threads"].split(",")[-1]] if "--threads" in lists else []
    if "cpu-ddp" in backends:
        for n in worlds:
            head = launcher(args.python, n) if torch_importable(args.python) else [args.python]
            runs.append([*head, script, *threads, "--devices", "ddp", "--ddp-backend", "gloo",
                         "--world-size", str(n)])
    if "cuda-ddp" in backends:
        for n in worlds:
            head = launcher(args.python, n) if gpu_count(args.python) >= n else [args.python]
            runs.append([*head, script, "--devices", "ddp", "--ddp-backend", "nccl",
                         "--world-size", str(n)])
    return runs


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", required=True)
    ap.add_argument("--results", required=True, help="the suite's output folder (holds results.csv)")
    ap.add_argument("--trainbench", default=os.environ.get("TB_TRAINBENCH", "build/trainbench"))
    ap.add_argument("--only", help="comma list of entry names (default: every entry running "
                                   "cpu-omp, cpu-ddp, cuda-ddp or cpu-hogwild)")
    ap.add_argument("--devices", default="auto",
                    help="auto (default), cpu, cuda, dp (pytorch_train.py's), ddp: torch-ddp only, or "
                         "hogwild: torch-hogwild only")
    ap.add_argument("--python", default=sys.executable, help="interpreter for pytorch_train.py")
    args = ap.parse_args(argv[1:])
    csv_path = os.path.join(args.results, "results.csv")
    for p, what in ((args.suite, "suite file"), (csv_path, "results.csv"), (args.trainbench, "trainbench")):
        if not os.path.isfile(p):
            print(f"run_peers.py: {p}: no such {what}", file=sys.stderr)
            return 2
    only = set(args.only.split(",")) if args.only else None
    try:
        entries = parse_suite(args.suite)
    except (SuiteError, OSError) as e:  # bad input, as trainbench says it: one line, exit 2
        print(f"run_peers.py: {e}", file=sys.stderr)
        return 2
    rc = 0
    for name, tokens in entries:
        flags, lists = split_flags(tokens)
        backends = (lists.get("--backends") or lists.get("--backend") or "cpu-omp").split(",")
        if only is not None and name not in only:
            continue
        runs = peer_runs(args, backends, lists, only)
        if not runs:
            continue
        export_dir = os.path.join(args.results, f".peer-export-{name}")
        shutil.rmtree(export_dir, ignore_errors=True)
        try:
            cmd = [args.trainbench, "export", *without(flags, "--workload"), "--workload", name, "--out", export_dir]
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL)
            if r.returncode != 0:
                print(f"run_peers.py: {name}: export failed (exit {r.returncode}): {shlex.join(cmd)}",
                      file=sys.stderr)
                rc = max(rc, r.returncode)
                continue
            for cmd in runs:
                script = cmd.index(os.path.join(HERE, "pytorch_train.py"))
                cmd = [*cmd[:script + 1], export_dir, "--results", csv_path, *cmd[script + 1:]]
                env = None
                if "--rdzv_endpoint" in cmd:  # the port planned with the entry may be taken by now
                    cmd[cmd.index("--rdzv_endpoint") + 1] = f"127.0.0.1:{free_port()}"
                if "--no_python" in cmd:  # torchrun would set OMP_NUM_THREADS=1 and warn
                    t = cmd[cmd.index("--threads") + 1] if "--threads" in cmd else "1"
                    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", omp_threads(t)))
                r = subprocess.run(cmd, env=env)
                if r.returncode != 0:
                    rc = max(rc, 1 if r.returncode == 1 else 2)
                    if "--no_python" in cmd:  # a rank died; torchrun's exit code is not ours
                        print(f"run_peers.py: {name}: exit {r.returncode}: {shlex.join(cmd)}",
                              file=sys.stderr)
        finally:
            shutil.rmtree(export_dir, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
