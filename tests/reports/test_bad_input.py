"""Bad input: one clear line naming the file and the problem, exit 2, no report written."""

import csv
import io
import json
import os
import subprocess
import sys

import pytest

import compare
import fixture_data as fx
import render
from conftest import REPORTS
from load import CURVE_COLUMNS, RESULT_COLUMNS


def _replace_line(path, n, fn):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    lines[n] = fn(lines[n])
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def _write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _edit_env(folder, **fields):
    path = os.path.join(folder, "env.json")
    with open(path, encoding="utf-8") as f:
        env = json.load(f)
    env.update(fields)
    _write(path, json.dumps(env))


def _set_field(col, value, columns=RESULT_COLUMNS):
    """A line rewriter that sets one results.csv (or, with CURVE_COLUMNS, curves.csv)
    column, keeping the CSV quoting."""
    idx = columns.index(col)

    def fn(line):
        rec = next(csv.reader([line]))
        rec[idx] = value
        buf = io.StringIO()
        csv.writer(buf, lineterminator="").writerow(rec)
        return buf.getvalue()
    return fn


CASES = {
    "missing results.csv": (lambda d: os.remove(f"{d}/results.csv"), "results.csv: missing"),
    "empty results.csv": (lambda d: _write(f"{d}/results.csv", ""), "results.csv: empty file"),
    "header only": (lambda d: _write(f"{d}/results.csv", ",".join(RESULT_COLUMNS) + "\n"),
                    "results.csv: header only"),
    "wrong header": (lambda d: _replace_line(f"{d}/results.csv", 0,
                                             lambda h: h.replace("samples_per_s", "throughput")),
                     "results.csv: header lacks column 'samples_per_s' of CSV schema 2"),
    "non-numeric metric": (lambda d: _replace_line(f"{d}/results.csv", 1,
                                                   _set_field("samples_per_s", "fast")),
                           "line 2, column 'samples_per_s': 'fast' is not a number"),
    "empty metric in ok row": (lambda d: _replace_line(f"{d}/results.csv", 1,
                                                       _set_field("final_loss", "")),
                               "column 'final_loss': empty in an ok row"),
    "unknown schema_version": (lambda d: _replace_line(f"{d}/results.csv", 3,
                                                       _set_field("schema_version", "3")),
                               "line 4: unknown schema_version '3'"),
    "schema-1 results.csv": (lambda d: _replace_line(f"{d}/results.csv", 1,
                                                     _set_field("schema_version", "1")),
                             "results.csv: CSV schema 1, written by a trainbench before the knob "
                             "and trait columns; this report reads schema 2 only: re-run"),
    "wrong field count": (lambda d: _replace_line(f"{d}/results.csv", 2, lambda l: l + ",extra"),
                          f"line 3: expected {len(RESULT_COLUMNS)} fields, found {len(RESULT_COLUMNS) + 1}"),
    "bad status": (lambda d: _replace_line(f"{d}/results.csv", 1, _set_field("status", "done")),
                   "column 'status': 'done' is not"),
    "missing env.json": (lambda d: os.remove(f"{d}/env.json"), "env.json: missing"),
    "env.json not JSON": (lambda d: _write(f"{d}/env.json", "{\"schema_version\": 1,"),
                          "env.json: not valid JSON"),
    "env.json schema 3": (lambda d: _write(f"{d}/env.json", json.dumps(
        {"schema_version": 3, "run_id": "x"})), "env.json: unknown schema_version 3"),
    "env.json schema 1": (lambda d: _write(f"{d}/env.json", json.dumps(
        {"schema_version": 1, "run_id": "x"})), "env.json: CSV schema 1"),
    # Fields the reports read must have the type the harness writes (reports/env_schema.py):
    # these raised AttributeError/TypeError deep in the report.
    "env.json run_id a number": (lambda d: _edit_env(d, run_id=12345),
                                 "env.json: run_id is an integer (12345), not a string"),
    "env.json git.dirty a list": (lambda d: _edit_env(d, git={"commit": "abc", "dirty": [1]}),
                                  "env.json: git.dirty is a list ([1]), not true or false"),
    "env.json gpus of strings": (lambda d: _edit_env(d, gpus=["H100"]),
                                 'env.json: gpus[0] is a string ("H100"), not an object'),
    "env.json GPU name a list": (lambda d: _edit_env(d, gpus=[{"index": 0, "name": ["H100"]}]),
                                 'env.json: gpus[0].name is a list (["H100"]), not a string'),
    "env.json host a string": (lambda d: _edit_env(d, host="box"),
                               'env.json: host is a string ("box"), not an object'),
    "env.json timestamp a number": (lambda d: _edit_env(d, timestamp=20261122),
                                    "env.json: timestamp is an integer (20261122), not a string"),
    "curves.csv bad header": (lambda d: _replace_line(f"{d}/curves.csv", 0,
                                                      lambda h: h.replace("train_loss", "loss")),
                              "curves.csv: header lacks column 'train_loss'"),
    "not a boolean": (lambda d: _replace_line(f"{d}/results.csv", 2, _set_field("shuffle", "yes")),
                      "line 3, column 'shuffle': 'yes' is not true or false"),
    # Phase times are plotted as stacked bars: a negative or infinite one was drawn.
    "negative phase time": (lambda d: _replace_line(f"{d}/results.csv", 2, _set_field("forward_s", "-0.5")),
                            "line 3, column 'forward_s': -0.5 must be a finite number and not negative"),
    "infinite phase time": (lambda d: _replace_line(f"{d}/results.csv", 4, _set_field("comm_s", "inf")),
                            "line 5, column 'comm_s': inf must be a finite number and not negative"),
    "nan phase time": (lambda d: _replace_line(f"{d}/results.csv", 4, _set_field("backward_s", "nan")),
                       "line 5, column 'backward_s': nan must be a finite number and not negative"),
    "negative energy": (lambda d: _replace_line(f"{d}/results.csv", 4, _set_field("gpu_energy_j", "-3")),
                        "line 5, column 'gpu_energy_j': -3.0 must be a finite number and not negative"),
    # Losses are MSE or cross-entropy, never negative: a negative one was plotted and
    # checked as if measured.
    "negative final loss": (lambda d: _replace_line(f"{d}/results.csv", 2, _set_field("final_loss", "-0.01")),
                            "results.csv: line 3, column 'final_loss': -0.01 is negative (MSE and "
                            "cross-entropy losses are never negative)"),
    "negative curve loss": (lambda d: _replace_line(f"{d}/curves.csv", 3,
                                                    _set_field("train_loss", "-0.25", CURVE_COLUMNS)),
                            "curves.csv: line 4, column 'train_loss': -0.25 is negative (MSE and "
                            "cross-entropy losses are never negative)"),
    "minus infinite curve loss": (lambda d: _replace_line(f"{d}/curves.csv", 1,
                                                          _set_field("train_loss", "-inf", CURVE_COLUMNS)),
                                  "curves.csv: line 2, column 'train_loss': -inf is negative"),
    # Nor infinite: trainbench writes a run whose loss is not finite as failed, without a
    # curve; an ok row's inf (or a number beyond float64, read as inf) was shown as "inf".
    "infinite final loss": (lambda d: _replace_line(f"{d}/results.csv", 2, _set_field("final_loss", "inf")),
                            "results.csv: line 3, column 'final_loss': inf is infinite (trainbench writes a "
                            "run whose loss is not finite as 'failed: ...', without a curve)"),
    "final loss beyond float64": (lambda d: _replace_line(f"{d}/results.csv", 4,
                                                          _set_field("final_loss", "1e400")),
                                  "results.csv: line 5, column 'final_loss': inf is infinite"),
    "minus infinite final loss": (lambda d: _replace_line(f"{d}/results.csv", 2,
                                                          _set_field("final_loss", "-inf")),
                                  "results.csv: line 3, column 'final_loss': -inf is negative"),
    "infinite curve loss": (lambda d: _replace_line(f"{d}/curves.csv", 3,
                                                    _set_field("train_loss", "inf", CURVE_COLUMNS)),
                            "curves.csv: line 4, column 'train_loss': inf is infinite"),
    # Nor NaN, for the same reason: it was shown as "nan", a loss mismatch, as if measured.
    "nan final loss": (lambda d: _replace_line(f"{d}/results.csv", 3, _set_field("final_loss", "nan")),
                       "results.csv: line 4, column 'final_loss': nan is not a number (trainbench writes a "
                       "run whose loss is not finite as 'failed: ...', without a curve)"),
    "nan curve loss": (lambda d: _replace_line(f"{d}/curves.csv", 2,
                                               _set_field("train_loss", "NaN", CURVE_COLUMNS)),
                       "curves.csv: line 3, column 'train_loss': nan is not a number"),
    "integer beyond 64 bits": (lambda d: _replace_line(f"{d}/results.csv", 2,
                                                       _set_field("peak_host_mem_bytes", "9" * 400)),
                               "line 3, column 'peak_host_mem_bytes': " + "9" * 400
                               + " is outside the 64-bit range"),
    "empty trait in an ok row": (lambda d: _replace_line(f"{d}/results.csv", 1,
                                                         _set_field("device_kind", "")),
                                 "column 'device_kind': empty in an ok row"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_render_rejects_bad_input(case, gpu_run, capsys):
    mutate, message = CASES[case]
    mutate(gpu_run)
    assert render.main([gpu_run]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("render.py: error: ") and gpu_run in err
    assert message in err
    assert not os.path.exists(os.path.join(gpu_run, "report.html"))
    assert not [f for f in os.listdir(gpu_run) if f.endswith(".tmp")]


# A results.csv exactly as trainbench wrote it before schema 2 (a80ca68), one row.
SCHEMA_1_HEADER = (
    "schema_version,run_id,timestamp,host,workload,backend,model,layers,dataset,task,n_samples,"
    "batch_size,epochs,lr,momentum,weight_decay,seed,precision,world_size,devices,threads,repetition,"
    "train_time_s,samples_per_s,forward_s,backward_s,optimizer_s,transfer_s,comm_s,"
    "allreduce_bytes_per_step,comm_busbw_gbps,final_loss,final_accuracy,param_checksum,"
    "peak_host_mem_bytes,peak_device_mem_bytes,status")
SCHEMA_1_ROW = ('1,20261122-013000-box,2026-11-22T01:30:00Z,box,lin,cpu-omp,linear,"8,1",'
                '"synthetic-regression(seed=1,noise=0.1)",regression,300,64,2,0.01,0,0,1,fp32,1,cpu,2,0,'
                "0.001,600000,0.0004,0.0003,0.0001,0,0,0,,0.5,,0.1,1000,0,ok")


def test_a_schema_1_folder_is_refused_with_what_to_do(tmp_path, capsys):
    d = tmp_path / "old"
    d.mkdir()
    _write(d / "results.csv", SCHEMA_1_HEADER + "\n" + SCHEMA_1_ROW + "\n")
    _write(d / "env.json", json.dumps({"schema_version": 1, "run_id": "20261122-013000-box"}))
    assert render.main([str(d)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"render.py: error: {d}/results.csv: CSV schema 1, written by a trainbench before "
                   "the knob and trait columns; this report reads schema 2 only: re-run the "
                   "configurations with this trainbench, or render the folder with the reports/ of "
                   'commit a80ca68 (README "Schema-1 files")')
    assert compare.main([str(d), str(d)]) == 2
    assert "CSV schema 1" in capsys.readouterr().err
    assert not os.path.exists(d / "report.html")


def test_unknown_columns_are_ignored_and_missing_nullable_ones_read_as_empty(gpu_run):
    """Within schema 2 columns are only added, nullable: a newer file (an extra column)
    and an older one (a nullable column it predates) both still read."""
    path = os.path.join(gpu_run, "results.csv")
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    drop = rows[0].index("comm_busbw_gbps")
    rows = [r[:drop] + r[drop + 1:] + (["energy_j"] if i == 0 else ["12.5"]) for i, r in enumerate(rows)]
    with open(path, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    assert render.main([gpu_run]) == 0
    from load import load_run
    run = load_run(gpu_run)
    assert all(r["comm_busbw_gbps"] is None and "energy_j" not in r for r in run.rows)


def test_missing_folder(tmp_path, capsys):
    missing = str(tmp_path / "nope")
    assert render.main([missing]) == 2
    assert capsys.readouterr().err.strip() == f"render.py: error: {missing}: no such result folder"
    assert compare.main([missing, missing]) == 2


def test_bad_second_folder_leaves_existing_report_untouched(cpu_run, gpu_run, capsys):
    out = os.path.join(cpu_run, "report.html")
    _write(out, "previous report")
    os.remove(os.path.join(gpu_run, "env.json"))
    assert render.main([cpu_run, gpu_run]) == 2
    with open(out, encoding="utf-8") as f:
        assert f.read() == "previous report"


def test_compare_rejects_bad_new_run(gpu_run, tmp_path, capsys):
    new = fx.write_run(tmp_path / "new", "gpubox")
    _write(os.path.join(new, "results.csv"), "")
    assert compare.main([gpu_run, new]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"compare.py: error: {new}/results.csv: empty file (expected a header and at least one row)"


def test_cli_exit_status_from_a_real_process(gpu_run):
    os.remove(os.path.join(gpu_run, "env.json"))
    p = subprocess.run([sys.executable, os.path.join(REPORTS, "render.py"), gpu_run],
                       capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stdout == ""
    assert p.stderr.count("\n") == 1 and "env.json: missing" in p.stderr


def test_same_run_twice_is_rejected(gpu_run, tmp_path, capsys):
    out = str(tmp_path / "r.html")
    assert render.main([gpu_run, gpu_run, "-o", out]) == 2
    assert "a run may be given only once" in capsys.readouterr().err
    assert not os.path.exists(out)


def test_an_output_that_is_not_html_is_refused_and_the_data_kept(gpu_run, capsys):
    """-o RESULT_DIR/results.csv replaced the results with the page (exit 0)."""
    data = os.path.join(gpu_run, "results.csv")
    with open(data, encoding="utf-8") as f:
        before = f.read()
    assert render.main([gpu_run, "-o", data]) == 2
    err = capsys.readouterr().err
    assert "must end in .html" in err and err.count("\n") == 1, err
    with open(data, encoding="utf-8") as f:
        assert f.read() == before


def test_a_summary_that_cannot_be_written_replaces_neither_file(gpu_run, tmp_path, capsys):
    """Both files or neither: a folder where rep.summary.json goes used to leave a new
    rep.html beside it, and the message named rep.html."""
    out = tmp_path / "rep.html"
    out.write_text("OLD", encoding="utf-8")
    (tmp_path / "rep.summary.json").mkdir()
    assert render.main([gpu_run, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "rep.summary.json: cannot write the report" in err and "no file replaced" in err, err
    assert out.read_text(encoding="utf-8") == "OLD"
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_a_workload_name_with_dollar_signs_is_plain_text_in_the_plots(tmp_path):
    """matplotlib reads "$...$" as mathtext: an unbalanced one raised (no report at all),
    a balanced one was typeset. trainbench accepts such names."""
    folder = fx.write_run(tmp_path / "dollar", "cpubox")
    path = os.path.join(folder, "results.csv")
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    w = rows[0].index("workload")
    first = rows[1][w]
    for r in rows[1:]:
        if r[w] == first:
            r[w] = "price$\\frac{1}{$"
    with open(path, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    curves = os.path.join(folder, "curves.csv")
    with open(curves, encoding="utf-8", newline="") as f:
        crows = list(csv.reader(f))
    cw = crows[0].index("workload")
    for r in crows[1:]:
        if r[cw] == first:
            r[cw] = "price$\\frac{1}{$"
    with open(curves, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(crows)
    html = fx.render_html(folder)
    assert "price$\\frac{1}{$" in html


# --- bytes that are not UTF-8 (issue #13, item 9): one line naming the file, the line
# and the byte, exit 2, for each file of a result folder and for both tools ----------

def _latin1(path, line, old, new):
    """Replace `old` on line `line` (0-based) by `new` encoded as Latin-1: bytes that are
    not UTF-8, as a spreadsheet saving 'Windows-1252' would write them. Returns the
    1-based byte of the first of them in the line."""
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    assert old.encode() in lines[line]
    lines[line] = lines[line].replace(old.encode(), new.encode("latin-1"), 1)
    with open(path, "wb") as f:
        f.write(b"\n".join(lines))
    return next(i for i, b in enumerate(lines[line]) if b >= 0x80) + 1


NOT_UTF8 = {
    # file: (0-based line, text there, its Latin-1 replacement)
    "results.csv": (3, "gpubox", "gpubox-café"),
    "curves.csv": (7, "linear-64x1-100k", "linéar-64x1-100k"),
    "env.json": (None, "bookworm", "bookwörm-é"),
}


def _corrupt(folder, name):
    line, old, new = NOT_UTF8[name]
    path = os.path.join(folder, name)
    if line is None:
        with open(path, "rb") as f:
            line = next(i for i, l in enumerate(f.read().split(b"\n")) if old.encode() in l)
    return path, line + 1, _latin1(path, line, old, new)


@pytest.mark.parametrize("name", sorted(NOT_UTF8))
@pytest.mark.parametrize("tool", ["render", "compare"])
def test_bytes_that_are_not_utf8_are_one_line_naming_file_and_line(tool, name, gpu_run, tmp_path,
                                                                   capsys):
    path, line, col = _corrupt(gpu_run, name)
    if tool == "render":
        code = render.main([gpu_run])
    else:
        base = fx.write_run(tmp_path / "base", "gpubox", run="20261121-010000-gpubox")
        code = compare.main([base, gpu_run])
    assert code == 2
    captured = capsys.readouterr()
    # Latin-1 é (0xe9) is a UTF-8 lead byte followed by ASCII; ö (0xf6) never starts one.
    byte, reason = ("0xf6", "invalid start byte") if name == "env.json" else \
        ("0xe9", "invalid continuation byte")
    assert captured.err == (f"{tool}.py: error: {path}: line {line}, byte {col}: not UTF-8 text "
                            f"({byte}: {reason}; trainbench writes UTF-8: was the file converted "
                            "or edited in another encoding?)\n")
    assert captured.out == ""
    assert not os.path.exists(os.path.join(gpu_run, "report.html"))


@pytest.mark.parametrize("name", sorted(NOT_UTF8))
def test_not_utf8_from_a_real_process_is_no_traceback(name, gpu_run, tmp_path):
    _corrupt(gpu_run, name)
    base = fx.write_run(tmp_path / "base", "gpubox", run="20261121-010000-gpubox")
    for argv in (["render.py", gpu_run], ["compare.py", base, gpu_run]):
        p = subprocess.run([sys.executable, os.path.join(REPORTS, argv[0]), *argv[1:]],
                           capture_output=True, text=True)
        assert p.returncode == 2, p.stderr
        assert "Traceback" not in p.stderr and p.stderr.count("\n") == 1
        assert f"{name}: line " in p.stderr and "not UTF-8 text" in p.stderr


MORE_CASES = {
    # env.json's "\ud800" escape is valid JSON but no character: it could not be written
    # into the UTF-8 report.
    "env.json lone surrogate": (
        lambda d: _replace_in(f"{d}/env.json", "bookworm", "book\\ud800worm"),
        "env.json: host.os: \\ud800 is an unpaired UTF-16 surrogate, not a character"),
    "env.json nested too deeply": (lambda d: _write(f"{d}/env.json", "[" * 100_000 + "]" * 100_000),
                                   "env.json: not an environment capture (JSON nested too deeply)"),
    # Python reads no integer of more than 4300 digits (a ValueError, not a JSONDecodeError).
    "env.json integer of 5000 digits": (
        lambda d: _replace_in(f"{d}/env.json", '"seed": 1', '"seed": 1' + "0" * 5000),
        "env.json: not an environment capture (Exceeds the limit (4300 digits)"),
    "results.csv cell over the csv module's limit": (
        lambda d: _replace_line(f"{d}/results.csv", 2,
                                lambda l: l.replace("linear-64x1-100k", "x" * 200_000, 1)),
        "results.csv: line 3: not CSV (field larger than field limit (131072))"),
}


def _replace_in(path, old, new):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    _write(path, text.replace(old, new, 1))


def test_an_unreadable_file_is_one_line(gpu_run, capsys, monkeypatch):
    """open() failing (permissions; root can read a chmod 0 file, so simulated)."""
    import load

    def refuse(path, *a, **kw):
        raise PermissionError(13, "Permission denied", path)
    monkeypatch.setattr(load, "open", refuse, raising=False)
    assert render.main([gpu_run]) == 2
    assert capsys.readouterr().err == (f"render.py: error: {gpu_run}/results.csv: cannot read "
                                       "(Permission denied)\n")


@pytest.mark.parametrize("case", sorted(MORE_CASES))
def test_more_undecodable_input(case, gpu_run, capsys):
    mutate, message = MORE_CASES[case]
    mutate(gpu_run)
    assert render.main([gpu_run]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("render.py: error: ")
    assert message in err


def test_a_byte_order_mark_is_accepted(gpu_run, capsys):
    """A spreadsheet saving "CSV UTF-8" starts the file with EF BB BF: still UTF-8."""
    for name in ("results.csv", "curves.csv", "env.json"):
        path = os.path.join(gpu_run, name)
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(b"\xef\xbb\xbf" + data)
    assert render.main([gpu_run]) == 0


def test_a_line_separator_inside_a_quoted_name_is_one_cell(tmp_path, capsys):
    """U+2028 and U+0085 are characters of a UTF-8 workload name, not line ends."""
    name = "lin\u2028ear\u0085x"
    rows, curves = fx.build_rows("gpubox")
    for r in rows + curves:
        if r["workload"] == fx.LINEAR:
            r["workload"] = name
    d = tmp_path / "names"
    d.mkdir()
    fx.write_csv(d / "results.csv", RESULT_COLUMNS, rows)
    fx.write_csv(d / "curves.csv", fx.CURVE_COLUMNS, curves)
    _write(d / "env.json", json.dumps(fx.env_for("gpubox")))
    from load import load_run
    assert {r["workload"] for r in load_run(str(d)).rows} == {name, fx.MLP}


def test_a_folder_name_that_is_not_utf8_still_renders(gpu_run, tmp_path):
    """Python keeps such bytes as surrogates; the report and the message show them escaped."""
    odd = os.path.join(os.fsencode(str(tmp_path)), b"run-\xff")
    os.rename(os.fsencode(gpu_run), odd)
    p = subprocess.run([sys.executable, os.path.join(REPORTS, "render.py"), odd],
                       capture_output=True)
    assert p.returncode == 0, p.stderr
    assert b"run-\\udcff/report.html" in p.stdout
    with open(os.path.join(odd, b"report.html"), "rb") as f:
        f.read().decode("utf-8")
