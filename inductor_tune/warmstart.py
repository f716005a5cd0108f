"""Warm starts: begin a study with the winners of shapes already tuned.

Replayed on the H200 sweeps (``bench-search``, strategy ``tpe-warm-any``; README "Search
strategies"), enqueueing the best configs of up to 3 other shapes of the same dtype, nearest N
first and the same kernel first at equal N, beat plain TPE on every measure: the winner at a nearby
N, or of another kernel at the same N, is often the winner here or close to it.  The tuner and the
benchmark both choose their warm configs here, so the benchmark measures what the tuner does.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Callable, Iterable

from .records import Outcome
from .space import SearchSpace, TrialConfig

WARM_ATTR = "warm_start_from"  # Optuna user attribute of a warm-start trial: the source study's name


@dataclasses.dataclass(frozen=True)
class Source:
    """A finished study (or sweep) whose best config may start another study."""

    name: str
    kernel: str
    cols: int
    space: SearchSpace
    # Called only when the walk reaches this source: the tuner reads a study's trials lazily.
    best: Callable[[], TrialConfig | None]


def rank(kernel: str, cols: int, source: Source) -> tuple:
    """Nearest N (in powers of two) first, then the same kernel, then the smaller N."""
    return abs(math.log2(source.cols / cols)), source.kernel != kernel, source.cols


def move_config(config: TrialConfig, source: SearchSpace, target: SearchSpace) -> TrialConfig | None:
    """``config`` (found in ``source``) forced onto ``target``'s kernels; None unless legal there.

    The graph flags stay; the i-th kernel of ``source`` hands its launch config to the i-th kernel
    of ``target``, both in the order the probe found them (Inductor's generation order).  Slot keys
    cannot be matched: they name the kernel's sizes, which differ between shapes.
    """
    if config.inductor_default:
        return None
    src, dst = dict(source.structures).get(config.flags), dict(target.structures).get(config.flags)
    by_key = config.slot_map()
    if src is None or dst is None or len(src) != len(dst) or set(by_key) != {s.key for s in src}:
        return None
    if any(s.mix_order != d.mix_order for s, d in zip(src, dst)):
        return None
    moved = TrialConfig(config.flags, tuple((d.key, by_key[s.key]) for s, d in zip(src, dst)))
    return moved if target.contains(moved) else None


def pick(kernel: str, cols: int, space: SearchSpace, sources: Iterable[Source], limit: int,
         accept: Callable[[TrialConfig], bool] = lambda config: True) -> list[tuple[TrialConfig, Source]]:
    """Up to ``limit`` distinct best configs of ``sources``, ranked, moved onto ``space``, legal there
    and ``accept``-ed; ties in rank keep the order of ``sources``."""
    out: list[tuple[TrialConfig, Source]] = []
    keys: set[str] = set()
    for source in sorted(sources, key=lambda s: rank(kernel, cols, s)):
        if len(out) >= limit:
            break
        best = source.best()
        moved = move_config(best, source.space, space) if best is not None else None
        if moved is None or moved.to_json() in keys or not accept(moved):
            continue
        keys.add(moved.to_json())
        out.append((moved, source))
    return out


def finished_sources(store, gpu_id: int, dtype: str, exclude: str) -> list[Source]:
    """The studies of one fingerprint key (``it_gpu`` has a row per key) and dtype, in creation order,
    ``exclude`` left out; a study counts once it has a verdict (see ``study_best``)."""
    return [
        Source(s.name, s.kernel, s.cols, SearchSpace.from_json(s.space_json), functools.partial(study_best, store, s.id))
        for s in store.studies()
        if s.gpu_id == gpu_id and s.dtype == dtype and s.name != exclude and s.space_json
    ]


def study_best(store, study_id: int) -> TrialConfig | None:
    """The verdict's winner when it beat the default, else the fastest OK trial (a study that keeps
    Inductor's default still ranks the configs it measured); None before the study has a verdict."""
    verdict = store.verdict(study_id)
    if verdict is None:
        return None
    if verdict.improved and verdict.best_config_json:
        return TrialConfig.from_json(verdict.best_config_json)
    ok = [r for r in store.trials(study_id) if r.outcome == Outcome.OK and not r.inductor_default]
    return TrialConfig.from_json(min(ok, key=lambda r: r.time_ms).config_json) if ok else None
