"""Per-study summary rows and their text table (``inductor-tune show``); needs no GPU."""

from __future__ import annotations

import collections
import dataclasses
import json
import math
import statistics

from . import stats
from .kernels import Shape, get_kernel
from .records import Outcome
from .space import TrialConfig
from .store import Store


@dataclasses.dataclass(frozen=True)
class StudyRow:
    gpu: str
    kernel: str
    shape: str
    dtype: str
    trials: int
    failed: int
    constraints: int
    default_gbps: float | None
    best_gbps: float | None
    ceiling_gbps: float | None
    speedup: float | None
    speedup_low: float | None
    speedup_high: float | None
    verdict: str
    best_config: str

    @property
    def best_pct(self) -> float | None:
        return 100 * self.best_gbps / self.ceiling_gbps if self.best_gbps and self.ceiling_gbps else None

    @property
    def default_pct(self) -> float | None:
        return 100 * self.default_gbps / self.ceiling_gbps if self.default_gbps and self.ceiling_gbps else None


def study_rows(store: Store, gpu: str | None = None, kernel: str | None = None) -> list[StudyRow]:
    rows = []
    for study in store.studies():
        if gpu and gpu.lower() not in (study.gpu.name + " " + study.gpu.fingerprint).lower():
            continue
        if kernel and study.kernel != kernel:
            continue
        rows.append(study_row(store, study))
    return rows


def study_row(store: Store, study) -> StudyRow:
    """The summary row of one study (also the source of the figures' default and best GB/s)."""
    trials = store.trials(study.id)
    counts = collections.Counter(t.outcome for t in trials)
    nbytes = get_kernel(study.kernel).minimal_bytes(Shape(study.rows, study.cols), study.dtype)
    gbps = lambda ms: nbytes / (ms * 1e-3) / 1e9 if ms else None  # noqa: E731
    verdict = store.verdict(study.id)
    ceiling = study.gpu.ceiling_gbps
    ok = [t for t in trials if t.outcome == Outcome.OK]
    default = next((t for t in ok if t.inductor_default), None)
    if verdict is not None and verdict.default_ms:
        improved = verdict.improved
        best_ms = verdict.best_ms if improved else verdict.default_ms
        text = IMPROVED if improved else not_improved(verdict.rounds_json)
        if not improved and store.confirmation(study.id) is not None:  # only a winner is re-timed
            text = NOT_CONFIRMED
        config = TrialConfig.from_json(verdict.best_config_json).describe() if verdict.best_config_json else "-"
        speed = (verdict.speedup, verdict.speedup_low, verdict.speedup_high)
        default_ms = verdict.default_ms
    else:
        best = min((t for t in ok if not t.inductor_default), key=lambda t: t.time_ms, default=None)
        default_ms = default.time_ms if default else None
        best_ms = best.time_ms if best else None
        config = TrialConfig.from_json(best.config_json).describe() if best else "-"
        speed = (default_ms / best_ms if default_ms and best_ms else None, None, None)
        text = "not re-measured yet" if ok else "no successful trial"
    if study.replayed:
        text += " [replayed]"
    return StudyRow(
        gpu=study.gpu.name, kernel=study.kernel, shape=f"{study.rows}x{study.cols}", dtype=study.dtype,
        trials=sum(v for k, v in counts.items() if k != Outcome.CONSTRAINT),
        failed=sum(v for k, v in counts.items() if k not in (Outcome.OK, Outcome.CONSTRAINT)),
        constraints=counts.get(Outcome.CONSTRAINT, 0), default_gbps=gbps(default_ms), best_gbps=gbps(best_ms),
        ceiling_gbps=ceiling, speedup=speed[0], speedup_low=speed[1], speedup_high=speed[2], verdict=text,
        best_config=config,
    )


IMPROVED = "improved"
NOT_CONFIRMED = "no improvement (not confirmed in fresh rounds)"
WITHIN_NOISE = "no improvement (within noise)"
SLOWER = "no improvement (best candidate slower in every round)"


def not_improved(rounds_json: str) -> str:
    """Why the default was kept, in the words of what the verdict's rounds measured.

    The best candidate (lowest median, as ``search.summarize`` picks it) against the default: slower
    beyond the noise band in every round is not "within noise", and a gain shown in some rounds only
    is neither.
    """
    times = json.loads(rounds_json)
    timed = [r for r in times[1:] if any(t is not None for t in r)]
    best = min(timed, key=lambda r: statistics.median(t for t in r if t is not None), default=None)
    comparison = stats.compare(times[0], best) if best else None
    if comparison is None:
        return "no improvement (not every round timed)"
    if comparison.outcome == stats.SLOWER:
        return SLOWER
    if comparison.outcome == stats.WITHIN_NOISE and abs(math.log(comparison.speedup)) > math.log1p(comparison.band):
        if comparison.speedup > 1:
            return f"no improvement (best candidate faster in {comparison.wins} of {comparison.rounds} rounds only)"
        slower = comparison.rounds - comparison.wins
        return f"no improvement (best candidate slower in {slower} of {comparison.rounds} rounds)"
    return WITHIN_NOISE


def _fmt(value: float | None, pattern: str) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else pattern.format(value)


def render(rows: list[StudyRow], wide: bool = False, markdown: bool = False) -> str:
    header = ["gpu", "kernel", "shape", "dtype", "trials", "fail", "illegal", "default GB/s", "best GB/s",
              "best %ceil", "speedup [range]", "verdict"]
    if wide:
        header.append("best config")
    table = [header]
    for r in rows:
        spread = f" [{r.speedup_low:.3f}-{r.speedup_high:.3f}]" if r.speedup_low is not None else ""
        line = [r.gpu, r.kernel, r.shape, r.dtype, str(r.trials), str(r.failed), str(r.constraints),
                _fmt(r.default_gbps, "{:.0f}"), _fmt(r.best_gbps, "{:.0f}"), _fmt(r.best_pct, "{:.1f}"),
                _fmt(r.speedup, "{:.3f}") + spread, r.verdict]
        if wide:
            line.append(r.best_config)
        table.append(line)
    if markdown:
        lines = ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in table]
        lines.insert(1, "|" + "---|" * len(header))
        return "\n".join(lines)
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    out = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in table]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)
