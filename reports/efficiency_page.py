"""The report's "Hardware efficiency" section: the measured ceilings of each run, a table
of every configuration's FLOPs, bytes, achieved rates and % of its roofline, and one
roofline figure per device. The figures come from efficiency.analyse(); this module only
lays them out (page.py calls section_html()).
"""

import math
from html import escape as esc

import roofline
from efficiency import analyse, ceilings_of, spec_sheet


def num(v, unit=""):
    """4 significant digits with thousands separators: '1,211,392', '309.8', '0.0123';
    from 1e15 on in exponent form ('2.5e+20'); "–" for none or a non-finite value."""
    if v is None or not math.isfinite(v):
        return "–"
    text = f"{v:.4g}" if abs(v) >= 1e15 else f"{v:,.0f}" if abs(v) >= 1e4 else f"{v:,.4g}"
    return f"{text} {unit}".rstrip()


def percent(e):
    if e.over:
        return '<td class="warn wrap">ceiling under-measured</td>'
    if e.fraction is None:
        return '<td class="num">–</td>'
    return f'<td class="num">{100.0 * e.fraction:.1f}%</td>'


def _ceilings_table(summary):
    rows = []
    for run in summary.runs:
        c, why = ceilings_of(run.env)
        host = (run.env.get("host") or {}) if isinstance(run.env.get("host"), dict) else {}
        where = f"run {run.run_id}"
        if c is None:
            rows.append(f"<tr><td>{esc(where)}</td><td>CPU {esc(str(host.get('cpu_model') or '?'))}</td>"
                        f'<td class="muted wrap" colspan="5">{esc(why)}</td></tr>')
            continue
        cpu = c.get("cpu") or {}
        rows.append(
            f"<tr><td>{esc(where)} on {esc(str(c.get('host', '?')))}</td>"
            f"<td>CPU {esc(str(host.get('cpu_model') or '?'))} ({esc(str(cpu.get('isa', '?')))} FMA, "
            f"{esc(str(cpu.get('threads', '?')))} threads)</td>"
            f'<td class="num">{num(cpu.get("fma_gflops_1core"))} / {num(cpu.get("fma_gflops_all"))}</td>'
            f'<td class="num">{num(cpu.get("triad_gbs_1core"))} / {num(cpu.get("triad_gbs"))}</td>'
            f'<td class="num">–</td><td class="muted">not tabled</td>'
            f'<td class="num">{num(cpu.get("duration_s"), "s")}</td></tr>')
        for g in c.get("gpus") or []:
            name = str(g.get("name", "?"))
            spec = spec_sheet(name)
            spec_text = ("unknown" if spec is None else
                         f"{spec[0]}: FP32 {num(spec[1])}, TF32 {num(spec[2])} GFLOP/s, {num(spec[3])} GB/s")
            if g.get("unavailable"):
                rows.append(f"<tr><td>{esc(where)}</td><td>GPU {g.get('index')} {esc(name)}</td>"
                            f'<td class="muted wrap" colspan="4">not measured: {esc(str(g["unavailable"]))}</td>'
                            f"<td>{esc(spec_text)}</td></tr>")
                continue
            rows.append(
                f"<tr><td>{esc(where)}</td><td>GPU {g.get('index')} {esc(name)}</td>"
                f'<td class="num">SGEMM {num(g.get("sgemm_gflops"))} / TF32 {num(g.get("tf32_gflops"))}</td>'
                f'<td class="num">{num(g.get("d2d_gbs"))}</td>'
                f'<td class="num">{num(g.get("gemm_n"))}</td>'
                f"<td class=\"wrap\">{esc(spec_text)}</td>"
                f'<td class="num">{num(g.get("duration_s"), "s")}</td></tr>')
        if not c.get("gpus") and c.get("gpu_reason"):
            rows.append(f"<tr><td>{esc(where)}</td><td>GPUs</td>"
                        f'<td class="muted wrap" colspan="5">none measured: {esc(str(c["gpu_reason"]))}</td></tr>')
    head = ("<tr><th>run</th><th>device</th><th>compute GFLOP/s (CPU: 1 core / all; GPU: SGEMM / TF32)</th>"
            "<th>memory GB/s (CPU triad: 1 core / all; GPU: device-to-device copy)</th>"
            "<th>GEMM n</th><th>spec sheet (dense, for context)</th><th>measured in</th></tr>")
    return f'<div class="scroll"><table class="results">{head}{"".join(rows)}</table></div>'


def _config_table(analysis):
    head = ("<tr><th>workload</th><th>configuration</th><th>FLOP per sample</th><th>bytes per sample</th>"
            "<th>intensity FLOP/B</th><th>achieved GFLOP/s</th><th>achieved GB/s</th>"
            "<th>compute ceiling GFLOP/s</th><th>memory ceiling GB/s</th><th>roofline GFLOP/s (bound)</th>"
            "<th>% of roofline</th><th>note</th></tr>")
    rows = []
    for w, g, e in analysis:
        roof = "–" if e.roof_gflops is None else f"{num(e.roof_gflops)} ({e.bound})"
        rows.append(
            f"<tr><td>{esc(w.name)}</td><td>{esc(g.label(w.multi_host))}</td>"
            f'<td class="num">{num(e.flops)}</td><td class="num">{num(e.bytes)}</td>'
            f'<td class="num">{num(e.intensity)}</td><td class="num">{num(e.gflops)}</td>'
            f'<td class="num">{num(e.gbs)}</td><td class="num">{num(e.peak_gflops)}</td>'
            f'<td class="num">{num(e.peak_gbs)}</td><td class="num">{esc(roof)}</td>'
            f"{percent(e)}<td class=\"muted wrap\">{esc(e.note)}</td></tr>")
    return f'<div class="scroll"><table class="results">{head}{"".join(rows)}</table></div>'


def section_html(summary, figure):
    """The whole section; `figure(png, alt)` is page.py's figure markup."""
    analysis = analyse(summary)
    if not analysis:
        return ""
    parts = ['<section id="efficiency"><h2>Hardware efficiency</h2>',
             "<p>How close each configuration came to this machine: model FLOPs and a lower bound on "
             "bytes per sample (formulas below), the achieved rates at the median samples/s, and the "
             "ceilings trainbench measured at the start of the run (env.json <code>ceilings</code>). "
             "% of roofline is never above 100%: a row faster than its measured ceiling says "
             "so instead.</p>",
             "<h3>Measured ceilings</h3>", _ceilings_table(summary),
             "<h3>Per configuration</h3>", _config_table(analysis)]
    for device, png in roofline.roofline_plots(analysis):
        parts.append(figure(png, f"Roofline of {device}: achieved GFLOP/s against arithmetic intensity "
                                 "(FLOP/byte), log-log, with the measured ceilings"))
    parts.append("</section>")
    return "".join(parts)
