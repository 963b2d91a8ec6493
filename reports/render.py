#!/usr/bin/env python3
"""Render one self-contained HTML report from one or more trainbench result folders.

Usage: reports/render.py RESULT_DIR [RESULT_DIR ...] [-o OUT.html] [--title TEXT]
Default output: <first RESULT_DIR>/report.html, and beside it summary.json (every derived
figure the report shows; OUT.summary.json for another name, README "summary.json").
Several folders (say a CPU box
and a GPU box) merge into one report; rows keep their run and host.

Exit status: 0 written; 2 bad input (one line on stderr naming the file and the
problem, and no report file is created or replaced): a missing or malformed file,
bytes that are not UTF-8 (the line and byte named), an unknown schema.
Several runs in one report (folders merged on purpose, or one folder holding rows of
several run ids) are never merged silently: the headline names each run, its folder
and its environment; a folder mixing runs is also warned about on stderr.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import derive  # noqa: E402
import headline  # noqa: E402
import page  # noqa: E402
import summary_json  # noqa: E402
from load import InputError, load_runs, printable  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result_dirs", nargs="+", metavar="RESULT_DIR")
    ap.add_argument("-o", "--output", help="report path (default: RESULT_DIR/report.html)")
    ap.add_argument("--title", default="trainbench report")
    args = ap.parse_args(argv)
    out = args.output or os.path.join(args.result_dirs[0], "report.html")
    try:
        runs = load_runs(args.result_dirs)
        out_dir = os.path.dirname(os.path.abspath(out))
        if not os.path.isdir(out_dir):
            raise InputError(f"{out}: output folder {out_dir} does not exist")
        # Only an .html name: `-o RESULT_DIR/results.csv` replaced the data with the page.
        if not out.endswith(".html"):
            raise InputError(f"-o {out}: the report's file name must end in .html")
        summary = derive.summarize(runs)
        html = page.render_html(summary, args.title)
        doc = summary_json.build(summary)
        # Both or neither: a summary.json that cannot be written must not leave a new page
        # beside an old summary.
        page.write_all_atomic([(out, printable(html)),
                               (summary_json.path_beside(out), summary_json.text_of(doc))])
    except InputError as e:
        print(f"render.py: error: {printable(str(e))}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"render.py: error: {printable(e.filename or out)}: cannot write the report "
              f"({e.strerror}); no file replaced", file=sys.stderr)
        return 2
    for run in runs:
        mixed = run.mixed_runs()
        if mixed:
            print(f"render.py: warning: {printable(mixed)}: shown as separate runs in the report "
                  "(one folder should hold one run)", file=sys.stderr)
    disturbed, total, _, _, _ = headline.disturbed_counts(summary)
    if disturbed:
        print(f"render.py: warning: {disturbed} of {total} configuration(s) ran on a disturbed "
              "machine (other processes or the hypervisor took more than 5% of the CPU time; "
              "marked ⚠ disturbed in the report): re-run them on a quiet machine", file=sys.stderr)
    print(f"render.py: wrote {printable(out)} and {printable(summary_json.path_beside(out))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
