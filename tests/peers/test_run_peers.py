"""`make bench`'s peer step (bench/peers/run_peers.py) on a tiny suite: PyTorch
rows join the suite's results.csv and curves.csv under the suite's run_id, the
report renders them beside cpu-omp, and without torch the rows say why they
were skipped. Also: pytorch_train.py refuses bad input with exit 2 and writes
nothing."""

import os
import subprocess
import sys

import pytest

from peer_helpers import PEERS, REPO, peer, rows, run, torch, trainbench  # noqa: F401, F811 (fixtures used by name)

SUITE = """\
defaults: --epochs 2 --warmup 1 --reps 2 --seed 1
lin: --model linear --layers 16,1 --samples 2000 --batch 128 --lr 0.05 --backends reference,cpu-omp --threads 1,all
mlp: --model mlp --layers 32,48,4 --samples 2000 --batch 100 --lr 0.2 --shuffle --backends reference,cpu-omp --threads 1
ref-only: --model linear --layers 8,1 --samples 500 --batch 50 --backends reference
"""

# Runs pytorch_train.py in an interpreter where `import torch` fails.
NO_TORCH = ("import runpy, sys; sys.modules['torch'] = None; sys.argv = sys.argv[1:]; "
            "runpy.run_path(sys.argv[0], run_name='__main__')")


# A python where `import torch` fails, as on a machine without python3-torch: runs a
# script, `-c CODE` or `-m MODULE` (torch.distributed.run fails there, as it would).
NO_TORCH_PYTHON = """#!{python}
import runpy, sys
sys.modules["torch"] = None
a = sys.argv[1:]
if a[0] == "-c":
    sys.argv = ["-c", *a[2:]]
    exec(compile(a[1], "<string>", "exec"), {{"__name__": "__main__"}})
elif a[0] == "-m":
    sys.argv = a[1:]
    runpy.run_module(a[1], run_name="__main__", alter_sys=True)
else:
    sys.argv = a
    runpy.run_path(a[0], run_name="__main__")
"""


def suite_run(tmp_path, trainbench):
    (tmp_path / "t.suite").write_text(SUITE)
    out = tmp_path / "run"
    run([trainbench, "suite", tmp_path / "t.suite", "--out", out])
    return out


def test_peer_rows_join_the_suite_and_the_report(tmp_path, trainbench, torch):
    out = suite_run(tmp_path, trainbench)
    before = rows(out / "results.csv")
    run([sys.executable, os.path.join(PEERS, "run_peers.py"), "--suite", tmp_path / "t.suite",
         "--results", out, "--trainbench", trainbench])
    after = rows(out / "results.csv")
    assert after[:len(before)] == before  # appended, nothing rewritten
    new = after[len(before):]
    run_id = before[0]["run_id"]
    assert all(r["run_id"] == run_id for r in new)
    cpu = [(r["workload"], r["threads"]) for r in new if r["backend"] == "torch-cpu"]
    assert sorted(set(cpu)) == [("lin", "1"), ("lin", str(len(os.sched_getaffinity(0)))), ("mlp", "1")]
    assert len(cpu) == 2 * 3  # 2 repetitions each; ref-only runs no cpu-omp, so no peer
    assert all(r["status"] == "ok" for r in new if r["backend"] == "torch-cpu")
    # Nothing is uploaded on the CPU: the upload cells stay empty (cpu-omp's too).
    assert all(r["upload_s"] == r["upload_gbps"] == "" for r in after if r["status"] == "ok"
               and r["device_kind"] == "cpu")
    for r in new:
        if r["backend"] == "torch-cuda" and not torch.cuda.is_available():
            assert r["status"].startswith("skipped: torch.cuda.is_available() is False")
    ref = {r["workload"]: float(r["final_loss"]) for r in before if r["backend"] == "reference"}
    for r in new:
        if r["status"] == "ok":
            assert abs(float(r["final_loss"]) - ref[r["workload"]]) <= 1e-3 * abs(ref[r["workload"]])
    curves = [c for c in rows(out / "curves.csv") if c["backend"] == "torch-cpu"]
    assert len(curves) == 2 * 3 * 2  # epochs x configurations x repetitions
    assert not [p for p in os.listdir(out) if p.startswith(".peer-export")]
    run([sys.executable, os.path.join(REPO, "reports", "render.py"), out])
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "torch-cpu" in html


def test_without_torch_rows_say_skipped_and_the_report_still_renders(tmp_path, trainbench):
    out = suite_run(tmp_path, trainbench)
    run([trainbench, "export", "--model", "linear", "--layers", "16,1", "--samples", "2000",
         "--batch", "128", "--workload", "lin", "--out", tmp_path / "exp"])
    text = run([sys.executable, "-c", NO_TORCH, os.path.join(PEERS, "pytorch_train.py"),
                tmp_path / "exp", "--results", out / "results.csv", "--threads", "1,2"])
    skipped = [r for r in rows(out / "results.csv") if r["backend"] == "torch-cpu"]
    assert [r["threads"] for r in skipped] == ["1", "2"]
    for r in skipped:
        assert r["status"].startswith("skipped: python3-torch not importable (ModuleNotFoundError: "), r["status"]
        assert r["samples_per_s"] == "" and r["final_loss"] == ""
    assert "skipped: python3-torch not importable" in text
    run([sys.executable, os.path.join(REPO, "reports", "render.py"), out])


def test_run_peers_without_torch_writes_skipped_rows_and_exits_0(tmp_path, trainbench):
    # `make bench` on a machine without PyTorch: no torchrun on PATH, no torch module.
    # Every peer row (torch-cpu, and torch-ddp at each world size) says why it was
    # skipped, and nothing is launched under torch.distributed.run (it used to be: exit 2).
    out = suite_run(tmp_path, trainbench)
    before = rows(out / "results.csv")
    (tmp_path / "peers.suite").write_text(
        "lin: --model linear --layers 16,1 --samples 500 --batch 50 --backends cpu-omp --threads 1\n"
        "ddp: --model linear --layers 8,1 --samples 500 --batch 50 --backends cpu-ddp "
        "--world-sizes 1,2 --threads 1\n")
    (tmp_path / "bin").mkdir()
    python = tmp_path / "bin" / "python-no-torch"
    python.write_text(NO_TORCH_PYTHON.format(python=sys.executable))
    python.chmod(0o755)
    r = subprocess.run([sys.executable, os.path.join(PEERS, "run_peers.py"), "--suite", tmp_path / "peers.suite",
                        "--results", out, "--trainbench", trainbench, "--python", python],
                       env=dict(os.environ, PATH=str(tmp_path / "bin")),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0, r.stdout
    new = rows(out / "results.csv")[len(before):]
    got = sorted((x["workload"], x["backend"], x["world_size"]) for x in new)
    assert got == [("ddp", "torch-ddp", "1"), ("ddp", "torch-ddp", "2"), ("lin", "torch-cpu", "1")], r.stdout
    for x in new:
        assert x["status"].startswith("skipped: python3-torch not importable (ModuleNotFoundError: "), x
    assert "torch.distributed.run" not in r.stdout
    run([sys.executable, os.path.join(REPO, "reports", "render.py"), out])


def test_bad_input_exits_2_and_writes_nothing(tmp_path, trainbench):
    out = suite_run(tmp_path, trainbench)
    csv_path = out / "results.csv"
    original = csv_path.read_bytes()
    run([trainbench, "export", "--model", "linear", "--layers", "16,1", "--samples", "200",
         "--batch", "16", "--out", tmp_path / "exp"])
    truncated = tmp_path / "trunc.csv"
    truncated.write_bytes(original.rstrip(b"\n"))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "workload.json").write_text("{not json")
    for args in ([tmp_path / "missing", "--results", csv_path],
                 [broken, "--results", csv_path],
                 [tmp_path / "exp", "--results", tmp_path / "no-folder" / "results.csv"],
                 [tmp_path / "exp", "--results", tmp_path / "new.csv", "--threads", "0"],
                 [tmp_path / "exp", "--results", truncated],
                 [tmp_path / "exp", "--results", csv_path, "--threads", "0"],
                 [tmp_path / "exp", "--results", csv_path, "--devices", "tpu"]):
        r = subprocess.run([sys.executable, os.path.join(PEERS, "pytorch_train.py"), *map(str, args)],
                           capture_output=True, text=True)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert csv_path.read_bytes() == original
    assert not (tmp_path / "new.csv").exists()  # not even a header-only file


def test_a_missing_results_file_is_created_with_the_reports_header(tmp_path, trainbench):
    sys.path.insert(0, os.path.join(REPO, "reports"))
    import load
    run([trainbench, "export", "--model", "linear", "--layers", "16,1", "--samples", "200",
         "--batch", "16", "--workload", "lin", "--out", tmp_path / "exp"])
    out = tmp_path / "fresh"
    out.mkdir()
    run([sys.executable, "-c", NO_TORCH, os.path.join(PEERS, "pytorch_train.py"),
         tmp_path / "exp", "--results", out / "results.csv", "--threads", "1"])
    with open(out / "results.csv", encoding="utf-8") as f:
        assert f.readline().rstrip("\n").split(",") == load.RESULT_COLUMNS
    with open(out / "curves.csv", encoding="utf-8") as f:
        assert f.readline().rstrip("\n").split(",") == load.CURVE_COLUMNS
    got = rows(out / "results.csv")
    assert [(r["workload"], r["backend"]) for r in got] == [("lin", "torch-cpu")]
    assert got[0]["status"].startswith("skipped: python3-torch not importable")
    assert sorted(os.listdir(out)) == ["curves.csv", "results.csv"]  # no temporary file left


def test_a_corrupt_export_exits_2_and_writes_nothing(tmp_path, trainbench, torch):
    out = suite_run(tmp_path, trainbench)
    csv_path = out / "results.csv"
    original = csv_path.read_bytes()
    run([trainbench, "export", "--model", "linear", "--layers", "16,1", "--samples", "200",
         "--batch", "16", "--out", tmp_path / "exp"])
    (tmp_path / "exp" / "data.bin").write_bytes(b"TBDATA\0\0" + b"\0" * 56)  # version 0, no rows
    peer(tmp_path / "exp", "--results", csv_path, "--devices", "cpu", expect=2)
    assert csv_path.read_bytes() == original


def test_run_peers_reads_included_suites_as_the_harness_does(tmp_path):
    # `include: FILE` (relative to the including file) brings FILE's entries with
    # FILE's own defaults, as harness/suite.cpp parses it.
    sys.path.insert(0, PEERS)
    import run_peers
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "base.suite").write_text("defaults: --epochs 5\na: --model linear --layers 8,1\n")
    (tmp_path / "top.suite").write_text("defaults: --epochs 2\ninclude: sub/base.suite  # comment\n"
                                        "b: --model linear --layers 8,1\n")
    got = run_peers.parse_suite(str(tmp_path / "top.suite"))
    assert got == [("a", ["--epochs", "5", "--model", "linear", "--layers", "8,1"]),
                   ("b", ["--epochs", "2", "--model", "linear", "--layers", "8,1"])]


def test_an_entry_overriding_its_defaults_reaches_trainbench_with_each_flag_once(tmp_path, trainbench):
    # parse_suite puts the defaults first; trainbench refuses a flag given twice, so the
    # entry's value replaces the default's (as harness/suite_file.cpp reads the line).
    sys.path.insert(0, PEERS)
    try:
        import run_peers  # noqa: PLC0415
    finally:
        sys.path.remove(PEERS)
    (tmp_path / "o.suite").write_text("defaults: --epochs 2 --reps 3 --shuffle --seed 1\n"
                                      "e: --model linear --layers 8,1 --samples 64 --batch 16 --epochs 1 "
                                      "--backends cpu-omp --threads 1 --seed=4 --cuda-graph\n")
    [(name, tokens)] = run_peers.parse_suite(str(tmp_path / "o.suite"))
    flags, lists = run_peers.split_flags(tokens)
    assert flags == ["--epochs", "1", "--reps", "3", "--shuffle", "--seed=4", "--model", "linear",
                     "--layers", "8,1", "--samples", "64", "--batch", "16", "--cuda-graph"]
    assert lists == {"--backends": "cpu-omp", "--threads": "1"}
    mine = run_peers.without(flags, "--reps", "--cuda-graph")
    assert mine == ["--epochs", "1", "--shuffle", "--seed=4", "--model", "linear", "--layers", "8,1",
                    "--samples", "64", "--batch", "16"]
    run([trainbench, "export", *mine, "--workload", name, "--out", tmp_path / "x"])
    run([trainbench, "run", *mine, "--reps", "1", "--no-ceilings", "--out", tmp_path / "r.csv"])
    assert [r["epochs"] + "/" + r["seed"] for r in rows(tmp_path / "r.csv")] == ["1/4"]


def test_both_readers_refuse_a_quoted_suite_line_naming_file_and_line(tmp_path, trainbench):
    # shlex read `--target "y z"` as one word and trainbench as two ('"y' and 'z"'): the
    # same file meant different entries to the two readers. Both refuse quotes and
    # backslashes now (exit 2, one line, FILE:LINE), and split the rest alike.
    sys.path.insert(0, PEERS)
    try:
        import run_peers  # noqa: PLC0415
    finally:
        sys.path.remove(PEERS)
    good = "a: --model linear --layers 8,1 --samples 64 --batch 16 --backends cpu-omp --threads 1  # it's a comment\n"
    (tmp_path / "results.csv").write_text("")
    for bad in ['--dataset "csv:x y.csv"', "--seed '3'", "--seed 3\\ 4", '--lr 0.1"']:
        suite = tmp_path / "q.suite"
        suite.write_text(good + "b: --model linear --layers 8,1 --samples 64 --batch 16 " + bad + "\n")
        with pytest.raises(ValueError) as e:  # run_peers.SuiteError
            run_peers.parse_suite(str(suite))
        assert f"{suite}:2: quoting is not supported" in str(e.value), bad
        peers = subprocess.run([sys.executable, os.path.join(PEERS, "run_peers.py"), "--suite", suite,
                                "--results", tmp_path, "--trainbench", trainbench],
                               capture_output=True, text=True)
        assert peers.returncode == 2, (bad, peers.stderr)
        assert peers.stderr.count("\n") == 1 and "q.suite:2: quoting is not supported" in peers.stderr, peers.stderr
        tb = subprocess.run([trainbench, "suite", suite, "--dry-run"], capture_output=True, text=True)
        assert tb.returncode == 2, (bad, tb.stdout, tb.stderr)
        assert tb.stderr.count("\n") == 1 and f"{suite}:2: quoting is not supported" in tb.stderr, tb.stderr
    # Without quotes the readers agree word for word, a quote in a comment included, and
    # a word is split only where trainbench splits it (not at a no-break space).
    suite = tmp_path / "ok.suite"
    suite.write_text(good.replace("--threads 1", "--threads\t1 --target a\u00a0b"))
    assert run_peers.parse_suite(str(suite)) == [
        ("a", ["--model", "linear", "--layers", "8,1", "--samples", "64", "--batch", "16", "--backends", "cpu-omp",
               "--threads", "1", "--target", "a\u00a0b"])]


def test_both_readers_refuse_the_same_malformed_lines_naming_file_and_line(tmp_path, trainbench):
    # run_peers.py skipped a line without a colon, took `my entry:` as a name and
    # `include: a b` as one path where trainbench refuses each; it read a lone \r as a line
    # end (its line numbers then differed); a file not in UTF-8 was a traceback.
    sys.path.insert(0, PEERS)
    try:
        import run_peers  # noqa: PLC0415
    finally:
        sys.path.remove(PEERS)
    good = b"a: --model linear --layers 8,1 --samples 64 --batch 16 --backends cpu-omp --threads 1\n"
    (tmp_path / "results.csv").write_text("")
    cases = {
        "no colon": (b"just words\n", "m.suite:2: expected 'NAME: --flag value ...'"),
        "a name with a space": (b"my entry: --model linear\n", "m.suite:2: expected 'NAME: --flag value ...'"),
        "two include names": (b"include: x.suite y.suite\n", "m.suite:2: include: expected one suite file name"),
        "a lone CR": (b"b: --model linear\r--seed '3'\nc: --x 'y'\n", "m.suite:2: quoting is not supported"),
        "not UTF-8": (b"caf\xe9: --model linear\n", "m.suite:2: "),
        "a missing include": (b"include: nowhere.suite\n",
                              "m.suite:2: " + str(tmp_path / "nowhere.suite") + ": cannot open suite file: No such"),
    }
    for what, (line, must) in cases.items():
        suite = tmp_path / "m.suite"
        suite.write_bytes(good + line)
        with pytest.raises(ValueError) as e:  # run_peers.SuiteError
            run_peers.parse_suite(str(suite))
        assert must in str(e.value), (what, str(e.value))
        peers = subprocess.run([sys.executable, os.path.join(PEERS, "run_peers.py"), "--suite", suite,
                                "--results", tmp_path, "--trainbench", trainbench],
                               capture_output=True, text=True, errors="replace")
        assert peers.returncode == 2, (what, peers.stderr)
        assert peers.stderr.count("\n") == 1 and must in peers.stderr, (what, peers.stderr)
        tb = subprocess.run([trainbench, "suite", suite, "--dry-run"], capture_output=True, text=True,
                            errors="replace")
        assert tb.returncode == 2, (what, tb.stdout, tb.stderr)
        assert tb.stderr.count("\n") == 1 and must in tb.stderr, (what, tb.stderr)


def test_paired_ratio_refuses_a_quoted_suite_in_one_line(tmp_path, trainbench):
    # It parses the suite with run_peers.parse_suite and let SuiteError out as a traceback.
    suite = tmp_path / "q.suite"
    suite.write_text("a: --model linear --layers 8,1 --samples 64 --batch 16 --backends cpu-omp --seed '3'\n")
    r = subprocess.run([sys.executable, os.path.join(PEERS, "paired_ratio.py"), "--suite", suite,
                        "--results", tmp_path, "--trainbench", trainbench, "--only", "a"],
                       capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "q.suite:1: quoting is not supported" in r.stderr, r.stderr
