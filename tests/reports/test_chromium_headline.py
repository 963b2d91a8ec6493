"""The first screen in headless Chromium: the per-workload headline, the "no GPU ran"
sentence and the headline speedups lie within the top 1000 px of a 1280 px wide window.

How: a copy of the report gets a script at the end of <body> that measures, for each
needle text, the bottom edge (px from the top of the page) of the first text node
holding it, and writes {needle: bottom} into a <pre id="tb-geometry">; --dump-dom
returns the page after the script ran. The report itself has no script; only the
measured copy does. A screenshot of the same first screen is kept in
tests/reports/artifacts/ for a person to look at. Skipped without Chromium.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
from html import unescape

import matplotlib.image
import pytest

import fixture_data as fx
import render

ARTIFACTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "artifacts")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--disable-dev-shm-usage"]
SCREEN = (1280, 1000)
WHY = "skipped: no CUDA device (cudaGetDeviceCount: no CUDA-capable device is detected)"

MEASURE = """<script>
(function () {
  var needles = %s, out = {};
  var walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  var texts = [];
  for (var n = walk.nextNode(); n; n = walk.nextNode()) {
    if (n.parentNode.nodeName !== "SCRIPT") texts.push(n);   // not this script's own needles
  }
  needles.forEach(function (needle) {
    out[needle] = null;
    for (var i = 0; i < texts.length; i++) {
      var idx = texts[i].data.indexOf(needle);
      if (idx < 0) continue;
      var r = document.createRange();
      r.setStart(texts[i], idx);
      r.setEnd(texts[i], idx + needle.length);
      var box = r.getBoundingClientRect();
      out[needle] = box.bottom + window.scrollY;
      break;
    }
  });
  var pre = document.createElement("pre");
  pre.id = "tb-geometry";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(autouse=True)
def _need_chromium():
    if _chromium() is None:
        pytest.skip("chromium not installed (cmake/install-deps.sh report installs it)")


def _run_chromium(*args):
    with tempfile.TemporaryDirectory(prefix="tb-chromium-") as profile:
        p = subprocess.run([_chromium(), *FLAGS, f"--user-data-dir={profile}",
                            f"--window-size={SCREEN[0]},{SCREEN[1]}", *args],
                           capture_output=True, text=True, timeout=90)
    assert p.returncode == 0, p.stderr[-2000:]
    return p


def geometry(report, needles):
    """{needle: bottom edge in px from the page top, or None when not on the page}."""
    with open(report, encoding="utf-8") as f:
        html = f.read()
    measured = report[:-5] + "-measured.html"
    with open(measured, "w", encoding="utf-8") as f:
        f.write(html.replace("</body>", MEASURE % json.dumps(needles) + "</body>"))
    dom = _run_chromium("--dump-dom", "file://" + measured).stdout
    m = re.search(r'<pre id="tb-geometry">(.*?)</pre>', dom, re.S)
    assert m, "the measuring script did not run"
    return json.loads(unescape(m.group(1)))


def _report(folder, name):
    os.makedirs(ARTIFACTS, exist_ok=True)
    out = os.path.join(ARTIFACTS, name)
    assert render.main([str(folder), "-o", out]) == 0
    return out


def _screenshot(report, name):
    shot = os.path.join(ARTIFACTS, name)
    if os.path.exists(shot):
        os.remove(shot)
    _run_chromium(f"--screenshot={shot}", "file://" + report)
    img = matplotlib.image.imread(shot)
    assert img.shape[:2] == (SCREEN[1], SCREEN[0])
    assert (img[..., :3] < 0.95).any(axis=2).mean() > 0.03     # not a blank page


def test_cpu_box_first_screen_says_no_gpu_ran(tmp_path, monkeypatch):
    # `make bench` on a CPU box: 30 GPU configurations skipped for one reason.
    many = [(w, b, ws, ",".join(map(str, range(ws))), 4, WHY)
            for w in (fx.LINEAR, fx.MLP) for b in ("cuda", "cuda-dp", "cuda-ddp")
            for ws in (1, 2, 3, 4, 8)]
    monkeypatch.setitem(fx.NOT_RUN, "cpubox", fx.NOT_RUN["cpubox"] + many)
    report = _report(fx.write_run(tmp_path / "cpu", "cpubox"), "headline-cpu.html")
    top = geometry(report, ["No GPU ran: this report compares CPU backends only.",
                            "fastest CPU (the speedup baseline)", fx.MLP,
                            "cpu-ddp ×2 (4 thr)", "40 k samples/s", "Skipped (33, by reason)",
                            "Machine"])
    for needle, bottom in top.items():
        assert bottom is not None, f"{needle!r} not on the page"
        assert bottom <= SCREEN[1], f"{needle!r} ends at {bottom:.0f} px, below the first screen"
    _screenshot(report, "headline-cpu.png")


def test_gpu_box_first_screen_shows_speedups(tmp_path):
    report = _report(fx.write_run(tmp_path / "gpu", "gpubox"), "headline-gpu.html")
    top = geometry(report, ["fastest single GPU", "fastest multi-GPU", "25.00×", "90.00×",
                            "90.0%", "77.78×", "87.5%", "✓ all 8 checked match",
                            "No GPU ran"])
    assert top.pop("No GPU ran") is None
    for needle, bottom in top.items():
        assert bottom is not None, f"{needle!r} not on the page"
        assert bottom <= SCREEN[1], f"{needle!r} ends at {bottom:.0f} px, below the first screen"
    _screenshot(report, "headline-gpu.png")


def test_the_check_fails_when_the_headline_is_pushed_down(tmp_path):
    """The measurement itself: 1500 px of padding above the headline moves it off screen."""
    report = _report(fx.write_run(tmp_path / "gpu", "gpubox"), "headline-pushed.html")
    with open(report, encoding="utf-8") as f:
        html = f.read()
    with open(report, "w", encoding="utf-8") as f:
        f.write(html.replace('<section class="headline"',
                             '<div style="height:1500px"></div><section class="headline"', 1))
    assert geometry(report, ["25.00×"])["25.00×"] > SCREEN[1]


# Sections other report modules add (reports/dp_ddp.py; reports/efficiency_page.py with
# its roofline plot, drawn when env.json holds measured ceilings, fx.GPU_CEILINGS): the
# GPU fixture shows them, and the headline still comes first and fits the first screen.
@pytest.mark.parametrize("section_id", ["dp-vs-ddp", "efficiency"])
def test_added_sections_stay_below_the_headline(tmp_path, section_id):
    folder = fx.write_run(tmp_path / "gpu", "gpubox", env_update={"ceilings": fx.GPU_CEILINGS})
    report = _report(folder, f"headline-{section_id}.html")
    with open(report, encoding="utf-8") as f:
        html = f.read()
    assert f'id="{section_id}"' in html
    if section_id == "efficiency":
        assert "Roofline of" in html    # the roofline plot of the fixture's GPUs
    assert html.index('class="results glance"') < html.index(f'id="{section_id}"')
    assert geometry(report, ["90.00×"])["90.00×"] <= SCREEN[1]
