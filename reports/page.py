"""Assemble the self-contained HTML report and write it atomically.

Why: the report is a CI artifact that must open anywhere, so it is one file with
inline CSS and base64 PNGs, no scripts and no network. The headline answers
"what ran where, what did not, and did every backend learn the same thing"
before any detail. write_atomic() writes beside the target and renames, so a
crash never leaves a half-written report.
"""

import os
import tempfile
from html import escape as esc

import crossover
import dp_ddp
import efficiency
import efficiency_page
import headline
import loss_curves
import microbench
import plots
import tables
import time_to_target
from derive import ASYNC_LOSS_RTOL, FORMULAS, LOSS_RTOL

# Sections of their own modules, after weak scaling: (anchor, title, module); each module
# has section_html(summary, figure) ("" when the runs hold nothing for it), FORMULAS and
# figures(summary) for summary.json.
EXTRA_SECTIONS = [("dp-vs-ddp", "DataParallel vs DDP", dp_ddp),
                  ("time-to-target", "Time to target", time_to_target),
                  ("crossovers", "Crossovers", crossover)]

CSS = """
:root { --bad:#b00020; --badbg:#fde7ea; --warn:#8a5a00; --warnbg:#fff4d6; --good:#1b6e20;
        --muted:#666; --line:#ddd; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif;
       margin: 0 auto; max-width: 1440px; padding: 0.8rem; line-height: 1.4; color: #111; }
h1 { font-size: 1.5rem; margin: 0.2rem 0 0.6rem; }
h2 { font-size: 1.25rem; border-bottom: 2px solid var(--line); padding-bottom: 0.2rem;
     margin-top: 2rem; }
h3 { font-size: 1.05rem; margin-bottom: 0.3rem; }
.headline { border: 1px solid var(--line); border-radius: 6px; padding: 0.6rem 0.9rem;
            background: #fafafa; }
.headline dt { font-weight: bold; margin-top: 0.3rem; }
.headline dd { margin-left: 1rem; }
.verdict { font-weight: bold; padding: 0.3rem 0.5rem; border-radius: 4px; display: inline-block; }
.verdict.good { background: #e6f4e7; }
.verdict.bad { background: var(--badbg); }
.nogpu { font-size: 1.05rem; background: var(--warnbg); border-left: 4px solid var(--warn);
         padding: 0.4rem 0.6rem; margin: 0 0 0.5rem; }
.disturbed { color: var(--warn); font-weight: bold; white-space: nowrap; }
tr.disturbed td { background: var(--warnbg); }
table.glance td { white-space: normal; }
.small { font-size: 0.8rem; }
ul.skipped { margin: 0.2rem 0; padding-left: 1.2rem; }
ul.skipped summary { cursor: pointer; }
.scroll { overflow-x: auto; -webkit-overflow-scrolling: touch; margin: 0.4rem 0 0.8rem; }
table { border-collapse: collapse; font-size: 0.85rem; }
th, td { border: 1px solid var(--line); padding: 0.2rem 0.35rem; vertical-align: top; }
th { background: #f1f3f5; text-align: left; font-weight: 600; }
table.results td, table.status td { white-space: nowrap; }
table.results th { min-width: 4.5em; max-width: 11em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.wrap { white-space: normal; overflow-wrap: anywhere; }
.muted { color: var(--muted); }
.good { color: var(--good); }
.ref { color: var(--muted); font-style: italic; }
.bad, td.bad { color: var(--bad); font-weight: bold; }
td.bad { background: var(--badbg); }
tr.mismatch td { background: var(--badbg); }
.warn, td.warn { color: var(--warn); }
td.warn { background: var(--warnbg); }
ul.notes { margin: 0.2rem 0 0.8rem; padding-left: 1.2rem; font-size: 0.9rem; }
.meta { font-size: 0.9rem; color: #333; }
.setting { font-family: monospace; font-size: 0.85em; }
figure { margin: 0.8rem 0; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
nav ul { columns: 2; font-size: 0.9rem; }
footer { margin-top: 2rem; font-size: 0.8rem; color: var(--muted); }
@media (max-width: 640px) {
  body { padding: 0.4rem; }
  nav ul { columns: 1; }
  table { font-size: 0.8rem; }
}
@media print {
  nav { display: none; }
  body { max-width: none; }
  .scroll { overflow: visible; }
  figure, table, .headline { break-inside: avoid; }
  h2 { break-after: avoid; }
}
"""


_anchor = headline.anchor   # one spelling of a section's id, shared with the headline links


def _env(run, *keys):
    v = run.env
    for k in keys:
        if not isinstance(v, dict) or k not in v:
            return None
        v = v[k]
    return v


def _machines(summary):
    items = []
    for run in summary.runs:
        host = _env(run, "host", "hostname") or (run.rows[0]["host"] if run.rows else "?")
        parts = [f"<b>{esc(str(host))}</b>"]
        cpu = _env(run, "host", "cpu_model")
        cores = _env(run, "host", "logical_cores")
        if cpu:
            parts.append(esc(f"{cpu}" + (f" ({cores} logical cores)" if cores else "")))
        gpus = run.env.get("gpus")
        if isinstance(gpus, list) and gpus:
            names = {}
            for g in gpus:
                n = g.get("name", "?") if isinstance(g, dict) else str(g)
                names[n] = names.get(n, 0) + 1
            parts.append(esc(", ".join(f"{c}× {n}" for n, c in names.items())))
        elif run.env.get("gpu_unavailable_reason"):
            parts.append(esc(f"no GPU: {run.env['gpu_unavailable_reason']}"))
        else:
            parts.append("no GPU")
        items.append(f"<li>{' · '.join(parts)} <span class=\"muted\">"
                     f"(run {esc(run.run_id)})</span></li>")
    return f"<ul>{''.join(items)}</ul>"


def _env_brief(env):
    """One line of a run's environment: host, CPU, GPUs, driver, build, commit, date."""
    bits = []
    host = env.get("host")
    if isinstance(host, dict):
        bits.append(f"host {host['hostname']}" if host.get("hostname") else None)
        bits.append(host.get("cpu_model"))
    gpus = env.get("gpus")
    if isinstance(gpus, list):
        names = {}
        for g in gpus:
            n = g.get("name", "?") if isinstance(g, dict) else str(g)
            names[n] = names.get(n, 0) + 1
        bits.append(", ".join(f"{c}× {n}" for n, c in names.items()) or "no GPU")
    if env.get("driver"):
        bits.append(f"driver {env['driver']}")
    build = env.get("build")
    if isinstance(build, dict) and build.get("type"):
        bits.append(f"{build['type']} build")
    git = env.get("git")
    if isinstance(git, dict) and git.get("commit"):
        bits.append(f"commit {str(git['commit'])[:12]}" + (" (dirty)" if git.get("dirty") else ""))
    if env.get("timestamp"):
        bits.append(str(env["timestamp"]))
    return " · ".join(str(b) for b in bits if b)


def _runs_notice(summary):
    """Headline entry when the report holds more than one run: which runs, from which
    folder, each one's environment (or that it has none), so that no two runs are ever
    merged silently. A folder mixing runs (hand-merged) is marked as a problem."""
    entries, mixed = [], []
    for run in summary.runs:
        sources = run.run_id_sources()
        if len(sources) > 1:
            mixed.append(run.path)
        for rid, where in sources.items():
            if str(run.env.get("run_id")) == rid:
                env = (f'environment: <a href="#{_anchor(rid, "env-")}">env.json</a> — '
                       f"{esc(_env_brief(run.env))}")
            else:
                env = (f'<span class="bad">no environment capture for this run</span> '
                       f"({esc(run.path)}/env.json is of run {esc(str(run.env.get('run_id')))})")
            entries.append(f"<li><b>run {esc(rid)}</b> from {esc(run.path)} "
                           f"<span class=\"muted\">({esc(', '.join(where))})</span>; {env}</li>")
    if len(entries) < 2:
        return ""
    if mixed:
        head = (f'<dt class="bad">Several runs mixed in one folder ({len(entries)} runs)</dt>'
                f"<dd><p class=\"bad\">{esc(', '.join(mixed))} "
                f"hold{'s' if len(mixed) == 1 else ''} rows of more than one run (hand-merged?): "
                "one folder should be one run, with its own env.json. Rows are labelled with "
                "their run; compare.py refuses such a folder.</p>")
    else:
        head = (f'<dt class="warn">{len(entries)} runs merged in this report</dt>'
                '<dd><p class="warn">Rows are labelled with their machine or run; figures '
                "across runs compare different machines or times.</p>")
    return head + f"<ul>{''.join(entries)}</ul></dd>"


def _dates_and_commits(summary):
    dates, commits = [], []
    for run in summary.runs:
        ts = run.env.get("timestamp") or (run.rows[0]["timestamp"] if run.rows else None)
        if ts and ts not in dates:
            dates.append(str(ts))
        commit = _env(run, "git", "commit")
        if commit:
            dirty = _env(run, "git", "dirty")
            text = str(commit)[:12] + {True: " (dirty: uncommitted changes)",
                                       False: " (clean)"}.get(dirty, "")
            if text not in commits:
                commits.append(text)
    return (", ".join(esc(d) for d in dates) or "unknown",
            ", ".join(esc(c) for c in commits) or "unknown")


def _headline(summary):
    dates, commits = _dates_and_commits(summary)
    groups = [g for w in summary.workloads for g in w.groups]
    backends = []
    for g in groups:
        if g.backend not in backends:
            backends.append(g.backend)
    reps = sum(len(g.rows) for g in groups)
    mismatches = [(w, g) for w in summary.workloads for g in w.groups
                  if g.loss_state == "mismatch"]
    checked = sum(1 for w in summary.workloads for g in w.groups if g.loss_state == "match")
    # A reference that ran and failed is not an absent one: named apart, with its reason.
    failed_refs = {w.name: headline.failed_reasons(g for g in w.failed if g.oracle)
                   for w in summary.workloads if w.ref is None}
    ref_failed = "; ".join(f"{name}: {'; '.join(reason for reason, _ in why)}"
                           for name, why in failed_refs.items() if why)
    unchecked = [w.name for w in summary.workloads
                 if w.ref is None and w.groups and not failed_refs[w.name]]
    tol = f"{LOSS_RTOL:g}"
    if any(g.asynchronous and g.loss_state in ("match", "mismatch") for g in groups):
        tol += f"; asynchronous ones within {ASYNC_LOSS_RTOL:g}"
    if mismatches:
        names = "; ".join(f"{w.name}: {g.label(w.multi_host)}" for w, g in mismatches)
        verdict = (f'<span class="verdict bad">✗ {len(mismatches)} configuration(s) do NOT '
                   f"match the reference loss (tolerance {tol}): {esc(names)}</span>")
    elif checked:
        verdict = (f'<span class="verdict good">✓ all {checked} checked configuration(s) match '
                   f"the reference loss within {tol}</span>")
    elif any(w.ref for w in summary.workloads):
        verdict = ('<span class="verdict">correctness not checked: no configuration has a '
                   "reference row with the same workload cells (epochs, warm-up, shuffle, "
                   "...)</span>")
    elif ref_failed:
        verdict = ('<span class="verdict bad">correctness not checked: the reference failed '
                   f"({esc(ref_failed)})</span>")
    else:
        verdict = '<span class="verdict">no reference rows: correctness not checked</span>'
    if unchecked and checked:
        verdict += f' <span class="muted">(no reference for: {esc(", ".join(unchecked))})</span>'
    if ref_failed and (mismatches or any(w.ref for w in summary.workloads)):
        verdict += f' <span class="bad">(the reference failed: {esc(ref_failed)})</span>'
    ran = (f"{len(summary.workloads)} workload(s): "
           f"{esc(', '.join(w.name for w in summary.workloads))}; "
           f"{len(groups)} configuration(s) on {len(backends)} backend(s) "
           f"({esc(', '.join(backends)) or 'none'}); {reps} timed repetition(s)")
    parts = ['<section class="headline">', headline.headline_html(summary), "<dl>",
             f"<dt>Correctness</dt><dd>{verdict}</dd>"]
    if summary.skipped:
        parts.append(f'<dt id="skipped">Skipped ({len(summary.skipped)}, by reason)</dt><dd>'
                     + tables.skipped_summary(summary.skipped, summary.multi_host) + "</dd>")
    else:
        parts.append('<dt id="skipped">Skipped</dt><dd>nothing</dd>')
    if summary.failed:
        n = len({id(g) for g, _, _ in tables.failures(summary.workloads)})
        parts.append(f'<dt class="bad">FAILED ({n} configuration(s), '
                     f"{len(summary.failed)} repetition(s))</dt><dd>"
                     + tables.failed_table(summary.workloads, summary.multi_host) + "</dd>")
    else:
        parts.append("<dt>Failed</dt><dd>nothing</dd>")
    parts += [f"<dt>Machine{'s' if len(summary.runs) > 1 else ''}</dt><dd>{_machines(summary)}</dd>",
              _runs_notice(summary),
              f"<dt>Date (UTC)</dt><dd>{dates}</dd>",
              f"<dt>Commit</dt><dd><code>{commits}</code></dd>",
              f"<dt>What ran</dt><dd>{ran}</dd>"]
    notes = [n for run in summary.runs for n in run.notes]
    if notes:
        parts.append("<dt>Notes</dt><dd><ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes)
                     + "</ul></dd>")
    parts.append("</dl></section>")
    return "".join(parts)


def _meta_line(w):
    m = w.meta
    bits = [f"model {m['model']} [{m['layers']}]", m["dataset"], m["task"],
            f"{m['n_samples']} samples", f"batch {m['batch_size']}", f"{m['epochs']} epochs",
            f"lr {m['lr']}"]
    if m.get("momentum"):
        bits.append(f"momentum {m['momentum']}")
    if m.get("weight_decay"):
        bits.append(f"weight decay {m['weight_decay']}")
    bits.append(f"seed {m['seed']}")
    if m.get("warmup") is not None:
        bits.append(f"{m['warmup']} warm-up epoch{'s' if m['warmup'] != 1 else ''}")
    if m.get("shuffle"):
        bits.append("shuffled every epoch")
    if m.get("drop_last"):
        bits.append("last partial batch dropped")
    return '<p class="meta">' + esc(" · ".join(str(b) for b in bits if b is not None)) + "</p>"


def _figure(png, alt):
    if png is None:
        return ""
    return (f'<figure><img src="data:image/png;base64,{png}" alt="{esc(alt)}">'
            f"<figcaption class=\"muted\">{esc(alt)}</figcaption></figure>")


def _workload_section(w):
    out = [f'<section id="{_anchor(w.name)}"><h2>{esc(w.name)}</h2>', _meta_line(w)]
    if w.groups:
        out.append(tables.workload_table(w))
    else:
        out.append('<p class="bad">No configuration of this workload produced results.</p>')
    out.append(tables.workload_notes(w))
    if w.groups:
        out.append(_figure(plots.throughput_plot(w), f"{w.name}: throughput, samples/s"))
        out.append(_figure(plots.scaling_plot(w), f"{w.name}: samples/s vs world size, with ideal line"))
        out.append(_figure(plots.phases_plot(w), f"{w.name}: seconds per epoch by phase"))
        loss = plots.loss_plot(w)
        if loss is None:
            out.append('<p class="muted">No loss curves (curves.csv missing or empty).</p>')
        out.append(_figure(loss, loss_curves.caption(w)))
    out.append("</section>")
    return "".join(out)


def _weak_section(summary):
    """Weak scaling across <stem>-xN workloads; empty when no family exists."""
    if not summary.weak:
        return ""
    out = ['<section id="weak-scaling"><h2>Weak scaling</h2>',
           '<p class="meta">Workloads named &lt;stem&gt;-xN keep the work per rank fixed '
           "(global batch and rows × N) and run at world size N. Efficiency = samples/s at N "
           "/ (N × samples/s of the base at world size 1 in &lt;stem&gt;-x1); 100% is "
           "ideal.</p>"]
    for fam in summary.weak:
        names = ", ".join(fam.workloads)
        out.append(f'<h3 id="{_anchor(fam.stem, "weak-")}">{esc(fam.stem)}-xN '
                   f'<span class="muted">({esc(names)})</span></h3>')
        if fam.members:
            out.append(tables.weak_table(fam))
        else:
            out.append('<p class="bad">No row of this family produced results.</p>')
        out.append(tables.weak_notes(fam))
        out.append(_figure(plots.weak_plot(fam), f"{fam.stem}: weak-scaling efficiency (%) "
                                                  "vs GPUs / ranks, with the 100% ideal line"))
    out.append("</section>")
    return "".join(out)


def render_html(summary, title="trainbench report"):
    nav = "".join(f'<li><a href="#{_anchor(w.name)}">{esc(w.name)}</a></li>'
                  for w in summary.workloads)
    if summary.weak:
        nav += '<li><a href="#weak-scaling">Weak scaling</a></li>'
    # Issue #17: hardware efficiency (roofline), the micro-benchmarks' JSON, then the
    # sections of EXTRA_SECTIONS (DP vs DDP, time to target, crossovers).
    extra = [("efficiency", "Hardware efficiency", efficiency_page.section_html(summary, _figure)),
             ("microbench", "Micro-benchmarks", microbench.section_html(summary.runs))]
    extra += [(anchor, title, mod.section_html(summary, _figure)) for anchor, title, mod in EXTRA_SECTIONS]
    nav += "".join(f'<li><a href="#{anchor}">{esc(title)}</a></li>' for anchor, title, html in extra if html)
    env = []
    for run in summary.runs:
        env.append(f'<h3 id="{_anchor(str(run.run_id), "env-")}">Run {esc(str(run.run_id))} '
                   f"<span class=\"muted\">({esc(run.path)})</span></h3>")
        others = [rid for rid in run.run_ids if rid != run.run_id]
        if others:
            env.append(f'<p class="bad">{esc(run.path)} also holds rows of run(s) '
                       f"{esc(', '.join(others))}, whose environment is not captured here: "
                       f"this env.json is of run {esc(str(run.run_id))} only.</p>")
        env.append(tables.env_tables(run))
    body = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>", _headline(summary),
        f'<nav><h3>Workloads</h3><ul>{nav}<li><a href="#environment">Environment</a></li>'
        '<li><a href="#formulas">Formulas</a></li></ul></nav>',
        *(_workload_section(w) for w in summary.workloads),
        _weak_section(summary),
        *(html for _, _, html in extra),
        '<section id="environment"><h2>Environment</h2>', *env, "</section>",
        '<section id="formulas"><h2>Formulas</h2>',
        "<p>Every derived figure is computed by the report from the CSV rows:</p>",
        tables.formulas_table(FORMULAS + efficiency.FORMULAS
                              + [f for _, _, mod in EXTRA_SECTIONS for f in mod.FORMULAS]), "</section>",
        f"<footer>Generated by reports/render.py from {esc(', '.join(r.path for r in summary.runs))}. "
        f"Loss tolerance LOSS_RTOL = {LOSS_RTOL:g}.</footer>",
        "</body></html>",
    ]
    return "\n".join(body)


def write_atomic(path, text):
    """Write text to path via a temporary file in the same folder and os.replace."""
    write_all_atomic([(path, text)])


def write_all_atomic(files):
    """Write every (path, text), or (all but a failed rename) none: all temporary files
    first, beside their targets, then the renames, so a failure while writing (a full disk,
    a folder where a file should be) replaces no file. An OSError names the target path it
    failed on (its filename), never a temporary file."""
    staged = []
    try:
        for path, text in files:
            folder = os.path.dirname(os.path.abspath(path))
            try:
                if os.path.isdir(path):
                    raise IsADirectoryError(21, "Is a directory", path)
                fd, tmp = tempfile.mkstemp(prefix=".report-", suffix=".tmp", dir=folder)
                staged.append((tmp, path))
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
                os.chmod(tmp, 0o644)
            except OSError as e:
                e.filename = path
                raise
        for tmp, path in staged:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in staged:
            if os.path.exists(tmp):
                os.unlink(tmp)
        raise

