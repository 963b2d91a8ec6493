"""Two runs are never merged silently (issue #13, item 4): a folder whose rows carry more
than one run_id (hand-merged), or whose env.json is of another run, is named as such in
the report (which runs, each one's environment or that it has none) and refused by
compare.py (exit 7) unless --allow-mixed-runs; folders merged on purpose
(`make report RUN="a b"`) are listed run by run in the headline."""

import csv
import json
import os
import re

import compare
import fixture_data as fx
import render

OTHER = "20261121-120000-gpubox"          # the run the hand-merged rows came from
NEW_RUN = "20261123-020000-gpubox"


def _hand_merge(folder, n=10, rid=OTHER):
    """The first n rows of results.csv re-labelled as another run's (reference and cpu-omp
    of the linear workload): what `cat a/results.csv b/results.csv` leaves behind."""
    path = os.path.join(folder, "results.csv")
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows[:n]:
        r["run_id"] = rid
    fx.write_csv(path, fx.RESULT_COLUMNS, rows)
    return folder


def _render(folder, *more, capsys=None):
    out = os.path.join(folder, "report.html")
    assert render.main([folder, *more, "-o", out]) == 0
    with open(out, encoding="utf-8") as f:
        return f.read()


def _headline(html):
    return html[html.index('<section class="headline">'):html.index("</section>")]


def _text(html):
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


def test_a_single_run_has_no_runs_notice(gpu_run, capsys):
    html = _render(gpu_run)
    assert "runs merged" not in html and "Several runs" not in html
    assert capsys.readouterr().err == ""


def test_a_hand_merged_folder_is_named_in_the_report(gpu_run, capsys):
    _hand_merge(gpu_run)
    html = _render(gpu_run)
    head = _text(_headline(html))
    assert "Several runs mixed in one folder (2 runs)" in head
    assert (f"run {OTHER} from {gpu_run} (results.csv: 10 rows); no environment capture for this "
            f"run ({gpu_run}/env.json is of run {fx.run_id('gpubox')})") in head
    assert (f"run {fx.run_id('gpubox')} from {gpu_run} (results.csv: 56 rows, curves.csv: 325 rows, "
            "env.json); environment: env.json — host gpubox · Intel(R) Xeon(R) Platinum 8480+ · "
            "4× NVIDIA H100 80GB HBM3 · driver 580.65.06 · Release build · commit 0123456789ab") in head
    assert f'href="#env-{fx.run_id("gpubox")}"' in html and f'id="env-{fx.run_id("gpubox")}"' in html
    env = _text(html[html.index('id="environment"'):])
    assert f"also holds rows of run(s) {OTHER}, whose environment is not captured here" in env
    # The rows stay apart: the tables label them by run (one host, two runs).
    assert html.count(f">{OTHER}<") >= 2
    err = capsys.readouterr().err
    assert err.startswith(f"render.py: warning: {gpu_run}: holds 2 runs: {OTHER} (results.csv: 10 rows)")


def test_an_env_json_of_another_run_is_named(gpu_run, capsys):
    with open(os.path.join(gpu_run, "env.json"), encoding="utf-8") as f:
        env = json.load(f)
    env["run_id"] = OTHER
    with open(os.path.join(gpu_run, "env.json"), "w", encoding="utf-8") as f:
        json.dump(env, f)
    head = _text(_headline(_render(gpu_run)))
    assert "Several runs mixed in one folder (2 runs)" in head
    assert f"run {fx.run_id('gpubox')} from {gpu_run} (results.csv: 66 rows, curves.csv: 325 rows); " \
           f"no environment capture for this run ({gpu_run}/env.json is of run {OTHER})" in head
    assert f"run {OTHER} from {gpu_run} (env.json); environment: env.json" in head


def test_folders_merged_on_purpose_list_each_run_and_its_environment(cpu_run, gpu_run, tmp_path,
                                                                     capsys):
    out = str(tmp_path / "merged.html")
    assert render.main([cpu_run, gpu_run, "-o", out]) == 0
    with open(out, encoding="utf-8") as f:
        head = _text(_headline(f.read()))
    assert "2 runs merged in this report" in head and "Several runs mixed" not in head
    assert (f"run {fx.run_id('cpubox')} from {cpu_run} (results.csv: 39 rows, curves.csv: 175 rows, "
            "env.json); environment: env.json — host cpubox · AMD EPYC 7B13 · no GPU") in head
    assert f"run {fx.run_id('gpubox')} from {gpu_run} (" in head and "4× NVIDIA H100" in head
    assert capsys.readouterr().err == ""   # on purpose: no warning


def test_compare_refuses_a_mixed_base_or_new(gpu_run, tmp_path, capsys):
    new = fx.write_run(tmp_path / "new", "gpubox", run=NEW_RUN)
    _hand_merge(gpu_run)
    message = (f"holds 2 runs: {OTHER} (results.csv: 10 rows); {fx.run_id('gpubox')} (results.csv: "
               "56 rows, curves.csv: 325 rows, env.json); compare takes one run per folder "
               "(--allow-mixed-runs compares it anyway)")
    assert compare.main([gpu_run, new]) == compare.EXIT_MIXED_RUNS == 7
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err == f"compare.py: error: BASE {gpu_run}: {message}\n"
    base = fx.write_run(tmp_path / "base", "gpubox", run="20261120-000000-gpubox")
    assert compare.main([base, gpu_run]) == compare.EXIT_MIXED_RUNS
    assert capsys.readouterr().err == f"compare.py: error: NEW {gpu_run}: {message}\n"


def test_compare_with_allow_mixed_runs_compares_and_warns(gpu_run, tmp_path, capsys):
    new = fx.write_run(tmp_path / "new", "gpubox", run=NEW_RUN)
    _hand_merge(gpu_run)
    assert compare.main([gpu_run, new, "--allow-mixed-runs"]) == 0
    cap = capsys.readouterr()
    assert f"{OTHER} + {fx.run_id('gpubox')} (base) -> {NEW_RUN} (new)" in cap.out
    assert (f"compare.py: warning: BASE {gpu_run}: holds 2 runs: {OTHER}" in cap.err
            and f"compared anyway (--allow-mixed-runs), its env.json describes run "
                f"{fx.run_id('gpubox')} only" in cap.err)


def test_a_configuration_measured_by_two_runs_of_one_folder_is_refused(gpu_run, tmp_path, capsys):
    """Even allowed, a mixed folder cannot say which run's repetitions to judge."""
    new = fx.write_run(tmp_path / "new", "gpubox", run=NEW_RUN)
    _hand_merge(gpu_run, n=2)    # 2 of reference's 5 repetitions from another run
    assert compare.main([gpu_run, new, "--allow-mixed-runs"]) == compare.EXIT_MIXED_RUNS
    err = capsys.readouterr().err
    assert err == (f"compare.py: error: {gpu_run}: runs {OTHER} and {fx.run_id('gpubox')} both "
                   "measured linear-64x1-100k/reference/1/cpu/1; even with --allow-mixed-runs a "
                   "configuration must come from one run\n")


def test_compare_refuses_an_env_json_of_another_run(gpu_run, tmp_path, capsys):
    new = fx.write_run(tmp_path / "new", "gpubox", run=NEW_RUN, env_update={"run_id": OTHER})
    assert compare.main([gpu_run, new]) == compare.EXIT_MIXED_RUNS
    assert capsys.readouterr().err == (
        f"compare.py: error: NEW {new}: holds 2 runs: {NEW_RUN} (results.csv: 66 rows, curves.csv: "
        f"325 rows); {OTHER} (env.json); compare takes one run per folder (--allow-mixed-runs "
        "compares it anyway)\n")
