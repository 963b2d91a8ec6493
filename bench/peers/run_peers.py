#!/usr/bin/env python3
"""Adds PyTorch peer rows to a finished suite run: for every entry of the suite
that runs cpu-omp, `trainbench export` the entry's workload into a temporary
folder inside the results folder, train it with bench/peers/pytorch_train.py at
the entry's --threads values (and on CUDA when PyTorch sees a GPU), append the
rows to RESULTS_DIR/results.csv (and curves.csv), and remove the export.

Without an importable torch each entry gets `skipped: python3-torch not
importable (...)` rows instead (pytorch_train.py writes them).

Usage: run_peers.py --suite FILE --results RESULTS_DIR [--trainbench PATH]
                    [--only NAME,...] [--devices auto|cpu|cuda]
Exit codes: 0 every peer row ok or skipped; 1 some peer run failed; 2 bad input.
"""

import argparse
import os
import shlex
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIST_FLAGS = {"--backend", "--backends", "--threads", "--world-sizes"}  # not export flags
NO_VALUE = {"--shuffle", "--drop-last", "--no-overlap", "--deterministic"}


def parse_suite(path):
    """[(name, flag tokens with defaults first)] as harness/suite.cpp reads the file."""
    entries, defaults = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0]
            if ":" not in line:
                continue
            head, rest = line.split(":", 1)
            head = head.strip()
            if not head:
                continue
            if head == "defaults":
                defaults += shlex.split(rest)
            else:
                entries.append((head, defaults + shlex.split(rest)))
    return entries


def split_flags(tokens):
    """-> (export tokens, {list flag: value}); the last value of a repeated flag wins."""
    keep, lists, i = [], {}, 0
    while i < len(tokens):
        tok = tokens[i]
        name, eq, inline = tok.partition("=")
        if name in LIST_FLAGS:
            if eq:
                lists[name] = inline
            else:
                lists[name] = tokens[i + 1] if i + 1 < len(tokens) else ""
                i += 1
        else:
            keep.append(tok)
            if not eq and name not in NO_VALUE and i + 1 < len(tokens):
                keep.append(tokens[i + 1])
                i += 1
        i += 1
    return keep, lists


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", required=True)
    ap.add_argument("--results", required=True, help="the suite's output folder (holds results.csv)")
    ap.add_argument("--trainbench", default=os.environ.get("TB_TRAINBENCH", "build/trainbench"))
    ap.add_argument("--only", help="comma list of entry names (default: every entry running cpu-omp)")
    ap.add_argument("--devices", default="auto")
    ap.add_argument("--python", default=sys.executable, help="interpreter for pytorch_train.py")
    args = ap.parse_args(argv[1:])
    csv_path = os.path.join(args.results, "results.csv")
    for p, what in ((args.suite, "suite file"), (csv_path, "results.csv"), (args.trainbench, "trainbench")):
        if not os.path.isfile(p):
            print(f"run_peers.py: {p}: no such {what}", file=sys.stderr)
            return 2
    only = set(args.only.split(",")) if args.only else None
    rc = 0
    for name, tokens in parse_suite(args.suite):
        flags, lists = split_flags(tokens)
        backends = (lists.get("--backends") or lists.get("--backend") or "cpu-omp").split(",")
        if (only is not None and name not in only) or (only is None and "cpu-omp" not in backends):
            continue
        export_dir = os.path.join(args.results, f".peer-export-{name}")
        shutil.rmtree(export_dir, ignore_errors=True)
        try:
            cmd = [args.trainbench, "export", *flags, "--workload", name, "--out", export_dir]
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL)
            if r.returncode != 0:
                print(f"run_peers.py: {name}: export failed (exit {r.returncode}): {shlex.join(cmd)}",
                      file=sys.stderr)
                rc = max(rc, r.returncode)
                continue
            cmd = [args.python, os.path.join(HERE, "pytorch_train.py"), export_dir,
                   "--results", csv_path, "--threads", lists.get("--threads", "all"),
                   "--devices", args.devices]
            r = subprocess.run(cmd)
            if r.returncode != 0:
                rc = max(rc, 1 if r.returncode == 1 else 2)
        finally:
            shutil.rmtree(export_dir, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
