"""The HTML of ``inductor-tune report``: one self-contained page, figures embedded as base64 PNG.

Every number in a table is read from the database (the stored summaries of ``show`` and
``validate``); nothing here measures or recomputes a result.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import importlib.metadata
import json
import os
import platform

from . import plot
from .report_figures import PAGE_WIDTH_PX
from .show import StudyRow


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _f(value: float | None, pattern: str) -> str:
    return "-" if value is None else pattern.format(value)


def study_table(rows: list[StudyRow]) -> str:
    """``show``'s per-study rows."""
    return ("<p>Default and best GB/s as <code>inductor-tune show</code> reports them (verdict re-measurement when "
            "present); the verdict says what the rounds measured.</p>" + table(
                ["kernel", "shape", "dtype", "trials", "failed", "illegal", "default GB/s", "best GB/s",
                 "best % ceiling", "speedup [range]", "verdict", "best config"],
                [[r.kernel, r.shape, r.dtype, str(r.trials), str(r.failed), str(r.constraints),
                  _f(r.default_gbps, "{:.0f}"), _f(r.best_gbps, "{:.0f}"), _f(r.best_pct, "{:.1f}"),
                  _f(r.speedup, "{:.3f}") + (f" [{r.speedup_low:.3f}-{r.speedup_high:.3f}]" if r.speedup_low else ""),
                  r.verdict, r.best_config] for r in rows]))


def runs_table(store, runs, gpu) -> str:
    """One line per validation run (heuristic file version), from its records' stored summaries."""
    from .validate import HEURISTICS, geomean

    from .figdata import MODEL_PREFIX

    lines = []
    for run in reversed(runs):  # newest first, as the figures
        kernels = [k for k in run.kernels if not k.startswith(MODEL_PREFIX)]
        if not kernels:  # whole-model steps only: their table follows
            continue
        mine = plot.validation_rows(store, run.heuristics_path, run.digest, gpu)
        touched = [r for r in mine if r.heuristics_applied and r.variant(HEURISTICS)]
        ratios = [r.variant(HEURISTICS).ratio_to_default for r in touched]
        peers = [r.best_peer().median_ms / r.variant(HEURISTICS).median_ms for r in mine
                 if r.best_peer() and r.variant(HEURISTICS)]
        lines.append([
            run.heuristics_path, run.digest, f"{run.first:%Y-%m-%d %H:%M}", str(len(kernels)), str(len(mine)),
            str(len(touched)), f"{geomean(ratios):.3f} [{min(ratios):.3f}]" if ratios else "-",
            str(sum(r.regressed for r in mine)),
            f"{geomean(peers):.3f} [{min(peers):.3f}] at {len(peers)}" if peers else "-",
        ])
    return ("<p>One line per validated heuristic file version (path and digest of its rules), newest first, from "
            "the latest record of each problem. <i>touched</i>: problems where the rules changed a kernel; "
            "<i>rules/default</i>: the rules' speedup over Inductor's default there (time ratio, geomean [worst]); "
            "<i>problems</i>: problems timed (a gate problem that failed has no times); <i>regressed</i>: problems "
            "the record marks slower beyond noise; <i>rules vs best peer</i>: against the faster of Quack and "
            "Liger where one was timed (> 1: the rules are faster).</p>" + table(
                ["heuristic file", "digest", "first record (UTC)", "kernels", "problems", "touched",
                 "rules/default [worst]", "regressed", "rules vs best peer [worst] at shapes"], lines))


def model_table(store, gpu) -> str:
    """Whole-model training steps (``validate --models``), as ``validate`` prints them; empty without any."""
    from .figdata import MODEL_PREFIX
    from .models import ModelResult, render

    by_run = {}
    for rec in plot.validation_records(store, gpu):
        if rec.kernel.startswith(MODEL_PREFIX):
            summary = json.loads(rec.result_json).get("summary")
            if summary:
                by_run.setdefault((rec.heuristics_path, rec.heuristics_digest), []).append(ModelResult(**summary))
    parts = [f"<h3>Training steps with {html.escape(path)} (digest {html.escape(digest)})</h3>"
             f"<pre>{html.escape(render(results))}</pre>" for (path, digest), results in by_run.items()]
    return "".join(parts)


def _figures(figures) -> str:
    out = []
    for fig, path in figures:
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        out.append(f"<h3>{html.escape(fig.title)}</h3><p>{html.escape(fig.caption)}</p>"
                   f'<img alt="{html.escape(fig.title)}" src="data:image/png;base64,{data}">')
    return "".join(out)


def page(db, gpu, store, sections, n_studies: int) -> str:
    gpu_rows = [
        [g.name, g.fingerprint, str(g.sm_count), g.compute_capability, f"{g.memory_gb:.0f} GB", f"{g.l2_mb:.0f} MB",
         g.cuda_driver, g.cuda_runtime, g.torch, g.triton, f"{g.ceiling_gbps:.0f}"]
        for g in plot.gpus(store) if plot.gpu_matches(gpu, g.name, g.fingerprint)
    ]
    gpu_table = table(["GPU", "fingerprint", "SMs", "CC", "memory", "L2", "driver", "CUDA", "torch (measured)",
                       "triton (measured)", "copy ceiling GB/s"], gpu_rows)
    versions = table(["software (this report)", "version"], [
        ["inductor_tune", _version("inductor_tune")], ["optuna", _version("optuna")],
        ["matplotlib", _version("matplotlib")], ["python", platform.python_version()],
    ])
    body = "".join(f"<h2>{html.escape(s.heading)}</h2>{s.html}{_figures(s.figures)}" for s in sections)
    title = f"inductor_tune report: {os.path.basename(str(db))}" + (f" ({gpu})" if gpu else "")
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em auto; padding: 0 1em; max-width: {PAGE_WIDTH_PX}px; }}
table {{ border-collapse: collapse; font-size: 0.85em; margin-bottom: 1em; }}
th, td {{ border: 1px solid #ccc; padding: 2px 6px; text-align: left; }}
th {{ background: #f0f0f0; }}
img {{ max-width: 100%; border: 1px solid #ddd; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<p>Database <code>{html.escape(str(db))}</code>, {n_studies} studies; generated {stamp}. Every number below was
read from the database or the heuristic file; nothing was measured to make this page.</p>
<h2>GPU</h2>{gpu_table}
<h2>Versions</h2>{versions}
{body}
</body></html>
"""
