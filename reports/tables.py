"""HTML tables of the report: per-workload comparison, weak scaling, skipped/failed,
environment, formulas.

Why separate from page.py: tables carry the numbers the tests check, so they are
built by small pure functions (Summary parts in, HTML string out) that can be
read and tested alone. Every value is escaped; tables sit in a horizontally
scrolling wrapper so wide ones stay usable on a phone.
"""

from html import escape as esc

import fmt
from derive import (ASYNC_LOSS_RTOL, CV_FLAG, LOSS_RTOL, by_reason, is_cpu_candidate,
                    is_cpu_candidate_row, weak_series_label)

MARK_OK = "✓"
MARK_BAD = "✗ MISMATCH"
SHARED_BADGE = "shared-device"
ASYNC_BADGE = "asynchronous"
DISTURBED_BADGE = "⚠ disturbed"


def disturbed_title(g):
    """The hover text of a disturbed configuration: how many repetitions, how much CPU."""
    bits = [f"{g.disturbed_reps} of {g.judged_reps} judged repetition(s) disturbed"]
    if g.others_share_max is not None:
        bits.append(f"other processes took up to {fmt.percent(g.others_share_max, 0)}")
    if g.steal_share_max:
        bits.append(f"the hypervisor stole up to {fmt.percent(g.steal_share_max, 0)}")
    return "; ".join(bits) + " of the CPU time: the timing is not trustworthy"


def disturbed_badge(g):
    return (f' <span class="disturbed" title="{esc(disturbed_title(g))}">{DISTURBED_BADGE}</span>'
            if g.disturbed else "")


def failed_badge(g):
    """'⚠ 1 of 3 reps failed' for a configuration some of whose repetitions failed: its
    figures are from the others only, so it is not shown as clean."""
    if not (g.failures and g.rows):
        return ""
    return (f' <span class="bad" title="{esc(g.failed_text())}">⚠ {len(g.failures)} of '
            f"{g.reps_total} reps failed</span>")


def reps_cell(g):
    """The repetitions measured: '5', or '2 of 3 ok; 1 failed: why' where some failed."""
    if not g.failures:
        return str(len(g.rows)), "num"
    return f"{len(g.rows)} of {g.reps_total} ok; {esc(g.failed_text())}", "bad wrap"


def _repeats(text):
    ids = [d.strip() for d in text.split(",") if d.strip()]
    return len(ids) != len(set(ids))


def shared_device(devices, bus_ids=None):
    """True when a row's GPUs name one physical GPU more than once: by PCI bus id
    (gpu_bus_ids: "0000:3b:00.0,0000:3b:00.0") where the row has them, since device
    indices are per process ("0,0,0,0" from four ranks that each see only their own
    GPU, as device 0, is not shared); else, in files written before that column, by a
    repeated index in the devices list ("0,0": cuda-dp's logical slots on GPU 0)."""
    if bus_ids:
        return _repeats(bus_ids)
    if not devices or devices == "cpu":
        return False
    return _repeats(devices)


def group_bus_ids(g):
    """The gpu_bus_ids of a group's rows (the same in each), None where it has none."""
    return next((r.get("gpu_bus_ids") for r in g.rows if r.get("gpu_bus_ids")), None)


def _devices_cell(g):
    bus = group_bus_ids(g)
    html = f'<span title="PCI bus ids: {esc(bus)}">{esc(g.devices)}</span>' if bus else esc(g.devices)
    if shared_device(g.devices, bus):
        html += (' <span class="warn" title="several replicas on one physical GPU: not the '
                 f'throughput of separate GPUs">{SHARED_BADGE}</span>')
    return html


def _table(head, body_rows, cls="", row_classes=None):
    """head: header cells (HTML); body_rows: lists of (html, css class); row_classes: per row."""
    out = [f'<div class="scroll"><table class="{cls}"><thead><tr>']
    out += [f"<th>{h}</th>" for h in head]
    out.append("</tr></thead><tbody>")
    for i, row in enumerate(body_rows):
        tr_cls = row_classes[i] if row_classes else ""
        out.append(f'<tr class="{tr_cls}">' if tr_cls else "<tr>")
        for html, c in row:
            out.append(f'<td class="{c}">{html}</td>' if c else f"<td>{html}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _loss_cell(g, ref_failed=False):
    """The equivalence check's mark; for asynchronous rows the check applied instead.
    ref_failed: the workload's reference ran and failed (not "no reference")."""
    if g.loss_state == "ref":
        return "reference", "ref"
    if g.loss_state == "noref":
        return ("not checked: the reference failed", "bad") if ref_failed else ("no reference", "muted")
    rel = fmt.rel_err(g.loss_rel_err)
    if g.loss_state == "unchecked":
        return (f'asynchronous: not checked <span class="muted">(momentum; {rel})</span>', "muted")
    if g.asynchronous:
        if g.loss_state == "match":
            return (f'asynchronous: {MARK_OK} within {ASYNC_LOSS_RTOL:g} '
                    f'<span class="muted">({rel})</span>', "good")
        return f"asynchronous: {MARK_BAD} beyond {ASYNC_LOSS_RTOL:g} ({rel})", "bad"
    if g.loss_state == "match":
        return f'{MARK_OK} <span class="muted">({rel})</span>', "good"
    return f"{MARK_BAD} ({rel})", "bad"


def _settings_suffix(g):
    return f" {esc(g.settings)}" if g.settings else ""


def _backend_cell(g):
    """The backend in bold, then the settings that tell it from look-alikes (shuffle=true)."""
    html = f"<b>{esc(g.backend)}</b>"
    if g.asynchronous:
        html += (f' <span class="warn" title="updates applied without synchronisation (Hogwild!): '
                 f'not reproducible bit for bit">{ASYNC_BADGE}</span>')
    if g.settings:
        html += f' <span class="setting">{esc(g.settings)}</span>'
    return html + failed_badge(g) + disturbed_badge(g)


def _speedup_cell(value, base, header_base, multi_host):
    """A speedup; when the row's base is not the header's (other settings), it is named."""
    if base is None:
        return "–", "muted"
    text = fmt.speedup(value)
    if base is not header_base:
        text += f' <span class="muted">vs {esc(base.label(multi_host))}</span>'
    return text, "num"


def workload_table(w):
    """Backend × (world_size, devices, threads) table of one workload."""
    has_acc = any(g.final_accuracy is not None for g in w.groups)
    has_eff = any(g.world_size > 1 for g in w.groups)
    has_energy = any(g.samples_per_joule is not None for g in w.groups)
    has_throttle = any(g.throttled for g in w.groups)
    head = []
    if w.multi_host:
        head.append("machine")
    head += ["backend", "world size", "devices", "threads", "precision", "reps",
             "time / epoch (s)", "samples/s (median)", "samples/s min–max", "CV"]
    if w.cpu_base:
        head.append(f"speedup vs fastest CPU: {esc(w.cpu_base.label(w.multi_host))}")
    if w.gpu_base:
        origin = f", {esc(w.gpu_base.origin)}" if w.multi_host else ""
        head.append(f"speedup vs {esc(w.gpu_base.backend)} (1 GPU{origin})")
    if has_eff:
        head.append("scaling efficiency")
    if has_energy:
        head.append("samples/J (GPU energy)")
    if has_throttle:
        head.append("GPU throttled")
    head.append("final loss")
    if has_acc:
        head.append("accuracy")
    tol = f"rel. tol {LOSS_RTOL:g}"
    if any(g.asynchronous for g in w.groups):
        tol += f"; {ASYNC_BADGE} {ASYNC_LOSS_RTOL:g}"
    head.append(f"vs reference ({tol})")

    body = []
    ref_failed = w.ref is None and any(g.oracle for g in w.failed)
    for g in w.groups:
        row = []
        if w.multi_host:
            row.append((esc(g.origin), ""))
        row += [(_backend_cell(g), ""), (str(g.world_size), "num"),
                (_devices_cell(g), ""), (str(g.threads), "num"), (esc(g.precision), ""),
                reps_cell(g), (fmt.seconds(g.time_per_epoch), "num"),
                (fmt.sps(g.med_sps), "num"),
                (f"{fmt.sps(g.min_sps)}–{fmt.sps(g.max_sps)}", "num")]
        if g.cv_sps is None:
            row.append(("–", "muted"))
        elif g.noisy:
            row.append((f"⚠ {fmt.percent(g.cv_sps)}", "warn"))
        else:
            row.append((fmt.percent(g.cv_sps), "num"))
        if w.cpu_base:
            row.append(_speedup_cell(g.speedup_cpu, g.cpu_base, w.cpu_base, w.multi_host))
        if w.gpu_base:
            row.append(_speedup_cell(g.speedup_gpu, g.gpu_base, w.gpu_base, w.multi_host))
        if has_eff:
            if g.efficiency is None:
                row.append(("–", "muted"))
            else:
                base = g.efficiency_base
                row.append((f'{fmt.percent(g.efficiency)} <span class="muted">vs '
                            f"{esc(base.backend)}{_settings_suffix(base)}</span>", "num"))
        if has_energy:
            row.append(("–", "muted") if g.samples_per_joule is None else (fmt.sps(g.samples_per_joule), "num"))
        if has_throttle:
            row.append((f'⚠ {esc(g.throttled)} <span class="muted">{esc(g.throttle_reasons)}</span>', "warn")
                       if g.throttled else ("–", "muted"))
        row.append((fmt.loss(g.final_loss), "num"))
        if has_acc:
            row.append((fmt.accuracy(g.final_accuracy), "num"))
        row.append(_loss_cell(g, ref_failed))
        body.append(row)
    classes = [" ".join(c for c in ("mismatch" if g.loss_state == "mismatch" else "",
                                    "partial" if g.failures else "",
                                    "disturbed" if g.disturbed else "") if c)
               for g in w.groups]
    return _table(head, body, "results", classes)


def workload_notes(w):
    """Lines under a workload table: noisy rows, missing baselines, rows not measured."""
    notes = []
    skipped = [r for r in w.not_measured if r["state"] == "skipped"]
    noisy = [g for g in w.groups if g.noisy]
    if noisy:
        names = ", ".join(esc(g.label(w.multi_host)) for g in noisy)
        notes.append(f'<li class="warn">⚠ CV of samples/s above {CV_FLAG:.0%}: {names} '
                     "— differences smaller than the spread are not meaningful.</li>")
    shared = [g for g in w.groups if shared_device(g.devices, group_bus_ids(g))]
    if shared:
        names = ", ".join(esc(g.label(w.multi_host)) for g in shared)
        notes.append(f"<li>{SHARED_BADGE}: {names} — the devices list repeats a GPU (by PCI "
                     "bus id where the row records them), so several replicas share one physical "
                     "GPU (logical slots); their speedup and scaling efficiency are not those of "
                     "separate GPUs.</li>")
    asynchronous = [g for g in w.groups if g.asynchronous]
    if asynchronous:
        names = ", ".join(esc(g.label(w.multi_host)) for g in asynchronous)
        notes.append(f"<li>{ASYNC_BADGE}: {names} — worker processes update shared parameters "
                     "without locks (Hogwild!): not reproducible bit for bit nor equal to the "
                     f"reference, so the final loss is checked within {ASYNC_LOSS_RTOL:g} of the "
                     f"reference's instead of {LOSS_RTOL:g}; with momentum on several workers it "
                     "is not checked.</li>")
    throttled = [g for g in w.groups if g.throttled]
    if throttled:
        names = ", ".join(f"{esc(g.label(w.multi_host))} ({esc(g.throttled)})" for g in throttled)
        notes.append(f'<li class="warn">⚠ GPU throttled: {names} — NVML reported power or '
                     "thermal clock limits during the timed epochs (gpu_throttle_reasons), so "
                     "these rows are not the GPU's unthrottled speed.</li>")
    disturbed = [g for g in w.groups if g.disturbed]
    if disturbed:
        names = ", ".join(esc(g.label(w.multi_host)) for g in disturbed)
        notes.append(f'<li class="warn">{DISTURBED_BADGE}: {names} — other processes or the '
                     "hypervisor took more than 5% of the CPU time during a timed repetition: "
                     "their timings are not trustworthy; re-run them on a quiet machine.</li>")
    if w.cpu_base:
        notes.append(f"<li>Speedups are against the fastest CPU configuration of this workload "
                     f"({esc(w.cpu_base.label(w.multi_host))}, "
                     f"{fmt.sps(w.cpu_base.med_sps)} samples/s); the float64 reference is a "
                     "correctness anchor and never the baseline.</li>")
    elif any(is_cpu_candidate(g) for g in w.failed):
        names = ", ".join(esc(g.label(w.multi_host)) for g in w.failed if is_cpu_candidate(g))
        notes.append(f'<li class="bad">No CPU baseline: {names} failed (below): no speedup vs '
                     "the CPU.</li>")
    elif any(is_cpu_candidate_row(r) for r in skipped):
        names = ", ".join(esc(_row_label(r, w.multi_host)) for r in skipped if is_cpu_candidate_row(r))
        notes.append(f'<li>No CPU baseline: {names} skipped (<a href="#skipped">reasons in the '
                     "headline</a>): no speedup vs the CPU.</li>")
    else:
        notes.append("<li>No CPU baseline row (a trainbench row with device_kind cpu that is "
                     "not the oracle): no speedup vs the CPU.</li>")
    if not w.ref and any(g.oracle for g in w.failed):
        notes.append('<li class="bad">The reference failed (below): final losses are not '
                     "checked.</li>")
    elif not w.ref:
        notes.append("<li>No reference row: final losses are not checked.</li>")
    for d in w.disagreements:
        notes.append(f'<li class="warn">Configurations of this workload differ in {esc(d)} — '
                     "each is a row of its own, labelled with its setting, and checked against "
                     "the reference with the same setting.</li>")
    # One line per configuration and reason, with how many repetitions: not one per row.
    for g in w.failed + [g for g in w.groups if g.failures]:
        for reason, rs in by_reason(g.failures):
            reps = (f"{len(rs)} of {g.reps_total} repetitions" if g.rows else
                    f"{len(rs)} repetition{'s' if len(rs) != 1 else ''}")
            notes.append(f'<li class="bad">{esc(g.label(w.multi_host))}: failed — {esc(reason)} '
                         f'<span class="muted">({reps})</span></li>')
    if skipped:
        # The reasons are listed once, in the headline, not under every workload.
        names = ", ".join(esc(_row_label(r, w.multi_host)) for r in skipped)
        notes.append(f'<li class="muted">{len(skipped)} configuration(s) skipped: {names} '
                     '(<a href="#skipped">reasons in the headline</a>)</li>')
    return f'<ul class="notes">{"".join(notes)}</ul>' if notes else ""


def _per_rank_batch(v):
    return f"{v:.0f}" if float(v).is_integer() else f"{v:.4g}"


def weak_table(fam):
    """One weak-scaling family: a row per (machine, backend, threads, N) member."""
    head = (["machine"] if fam.multi_host else []) + [
        "N (GPUs / ranks)", "backend", "devices", "threads", "workload", "per-rank batch",
        "samples/s (median)", "samples/s per rank", "weak-scaling efficiency"]
    body = []
    for g in fam.shown:
        row = [(esc(g.origin), "")] if fam.multi_host else []
        row += [(str(g.weak_n), "num"), (_backend_cell(g), ""),
                (_devices_cell(g), ""), (str(g.threads), "num"), (esc(g.workload), "")]
        if not g.rows:   # failed in every repetition: shown at its N, saying why
            batch = g.failures[0]["batch_size"]
            row += [("–" if batch is None else _per_rank_batch(batch / g.weak_n), "num"),
                    (f"failed: {esc(g.why_failed())}", "bad wrap"), ("–", "muted"), ("–", "muted")]
            body.append(row)
            continue
        row += [(_per_rank_batch(g.per_rank_batch), "num"), (fmt.sps(g.med_sps), "num"),
                (fmt.sps(g.sps_per_rank), "num")]
        if g.weak_efficiency is None:
            row.append(("–", "muted"))
        elif g.weak_base.backend != g.backend:
            row.append((f'{fmt.percent(g.weak_efficiency)} <span class="muted">vs '
                        f"{esc(g.weak_base.backend)}</span>", "num"))
        else:
            row.append((fmt.percent(g.weak_efficiency), "num"))
        body.append(row)
    return _table(head, body, "results")


def weak_notes(fam):
    """Under a weak-scaling table: the base of each line, then rows ignored or not computed."""
    notes, seen = [], set()
    for g in fam.members:
        b = g.weak_base
        line = weak_series_label(g, fam.multi_host)
        if b is None or (line, id(b)) in seen:
            continue
        seen.add((line, id(b)))
        notes.append(f"<li>base of {esc(line)}: {esc(b.label(fam.multi_host))} in "
                     f"{esc(b.workload)}, {fmt.sps(b.med_sps)} samples/s</li>")
    notes += [f'<li class="warn">{esc(n)}</li>' for n in fam.notes]
    return f'<ul class="notes">{"".join(notes)}</ul>' if notes else ""


def _row_label(r, with_host=False):
    text = f"{r['host']}: {r['backend']}" if with_host else r["backend"]
    if r["world_size"] and r["world_size"] > 1:
        text += f" ×{r['world_size']}"
    if r["devices"] == "cpu" and r["threads"] is not None:
        text += f" ({r['threads']} thr)"
    elif r["devices"] and r["devices"] != "cpu":
        text += f" (GPU {r['devices']})"
    return text


def skipped_by_reason(rows):
    """[(reason, [rows])] in first-appearance order: one entry per distinct reason."""
    return by_reason(rows)


def skipped_summary(rows, multi_host):
    """Skipped rows collapsed to one line per reason with a count; the rows themselves
    (workload, backend, world size, devices, threads) folded away in a <details>."""
    items = []
    for reason, rs in skipped_by_reason(rows):
        workloads = len({r["workload"] for r in rs})
        items.append(f'<li><details><summary><b>{len(rs)}×</b> {esc(reason)} '
                     f'<span class="muted">({workloads} workload(s))</span></summary>'
                     f"{status_table(rs, multi_host, with_reason=False)}</details></li>")
    return f'<ul class="skipped">{"".join(items)}</ul>'


def status_table(rows, multi_host, with_reason=True):
    """Skipped or failed rows: workload, backend, world size, devices, reason."""
    head = (["machine"] if multi_host else []) + ["workload", "backend", "world size",
                                                  "devices", "threads"]
    head += ["reason"] if with_reason else []
    body = []
    for r in rows:
        row = [(esc(r["host"]), "")] if multi_host else []
        row += [(esc(r["workload"]), ""), (esc(r["backend"]), ""),
                ("–" if r["world_size"] is None else str(r["world_size"]), "num"),
                (esc(r["devices"] or "") or "–", ""),
                ("–" if r["threads"] is None else str(r["threads"]), "num")]
        row += [(esc(r["reason"]), "")] if with_reason else []
        body.append(row)
    return _table(head, body, "status")


def failures(workloads):
    """[(Group, reason, failed rows)]: each configuration that failed, once per distinct
    reason (a configuration failing the same way in 3 repetitions is one entry)."""
    return [(g, reason, rs) for w in workloads for g in w.failed + [g for g in w.groups if g.failures]
            for reason, rs in by_reason(g.failures)]


def failed_table(workloads, multi_host):
    """The headline's FAILED list: one row per configuration and reason, with how many of
    its repetitions failed ('3 of 3', '1 of 3': the other two measured)."""
    head = (["machine"] if multi_host else []) + ["workload", "backend", "world size",
                                                  "devices", "threads", "repetitions failed",
                                                  "reason"]
    body = []
    for g, reason, rs in failures(workloads):
        row = [(esc(g.host), "")] if multi_host else []
        row += [(esc(g.workload), ""), (esc(g.backend), ""),
                ("–" if g.world_size is None else str(g.world_size), "num"),
                (esc(g.devices or "") or "–", ""), ("–" if g.threads is None else str(g.threads), "num"),
                (f"{len(rs)} of {g.reps_total}", "num"), (esc(reason), "")]
        body.append(row)
    return _table(head, body, "status")


def _flatten(prefix, value, out):
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return  # lists of objects (gpus) get their own table
    else:
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        elif value is None:
            value = "–"
        elif isinstance(value, bool):
            value = "yes" if value else "no"
        elif isinstance(value, int) and prefix.endswith("bytes"):
            value = f"{fmt.nbytes(value)} ({value})"
        out.append((prefix, str(value)))


def env_tables(run):
    """Key/value table of env.json plus one row per GPU; shows whatever fields exist."""
    pairs = []
    _flatten("", run.env, pairs)
    body = [[(f"<b>{esc(k)}</b>", ""), (esc(v), "wrap")] for k, v in pairs]
    html = _table(["field", "value"], body, "env")
    gpus = run.env.get("gpus")
    if isinstance(gpus, list) and gpus and all(isinstance(g, dict) for g in gpus):
        keys = []
        for g in gpus:
            keys += [k for k in g if k not in keys]
        rows = []
        for g in gpus:
            cells = []
            for k in keys:
                v = g.get(k)
                if isinstance(v, int) and k.endswith("bytes"):
                    v = fmt.nbytes(v)
                cells.append(("–" if v is None else esc(str(v)), ""))
            rows.append(cells)
        html += "<h4>GPUs</h4>" + _table([esc(k) for k in keys], rows, "env")
    return html


def formulas_table(formulas):
    body = [[(f"<b>{esc(name)}</b>", ""), (esc(text), "wrap")] for name, text in formulas]
    return _table(["figure", "formula"], body, "formulas")
