"""``show``, ``report`` and ``bench-search``: what the recorded databases say, with no GPU."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from .common import AppError, check_out_folder, storage_url


def show(db: str, gpu: str | None = None, kernel: str | None = None) -> list:
    """The per-study summary rows (``show.StudyRow``) of a database, filtered by GPU and kernel."""
    from ..show import study_rows
    from ..store import Store

    rows = study_rows(Store(storage_url(db), create=False), gpu=gpu, kernel=kernel)
    if not rows:
        raise AppError(f"{db} has no studies matching the filters")
    return rows


def report(db: str, out: str | None = None, gpu: str | None = None, heuristics: str | None = None):
    """Figures and one HTML page for a database, into ``out`` (default reports/<database name>/);
    ``heuristics``: a heuristic file to picture, whose validation runs alone are drawn."""
    import matplotlib

    matplotlib.use("Agg")  # files only; never open a window (or need a display)
    from ..report import HeuristicFile, ReportError, build

    # Read before anything is written: a file that does not parse leaves no half-made report behind.
    if heuristics:
        from ..heuristics import load

        heur = HeuristicFile(heuristics, load(heuristics))
    else:
        heur = None
    out = out or os.path.join("reports", os.path.splitext(os.path.basename(db.split("://")[-1]))[0])
    check_out_folder(out)
    try:
        return build(db, out, gpu=gpu, heuristics=heur)
    except ReportError as exc:
        raise AppError(str(exc)) from None
    except OSError as exc:
        raise AppError(f"cannot write the report to {out}: {exc}") from None


@dataclasses.dataclass(frozen=True)
class BenchRequest:
    db: str  # a database with complete sweeps
    strategies: tuple[str, ...]
    seeds: int = 20  # per shape and strategy
    budget: int = 60  # trials per run
    out: str = "reports/bench-search"
    progress: bool = True


@dataclasses.dataclass(frozen=True)
class BenchResult:
    request: BenchRequest
    sweeps: tuple[Any, ...]
    summaries: tuple[Any, ...]  # benchsearch.StrategySummary
    notes: tuple[str, ...]
    plot: str
    results: str  # the JSON file with every run


# Runs a strategy is held to whatever --seeds says: GPSampler takes ~40 s per 60-trial run on 2 cores.
SEED_CAPS = {"gp": 1}


def bench_search(request: BenchRequest) -> BenchResult:
    """Replay the recorded sweeps under each strategy; write a plot and the runs as JSON."""
    import optuna

    from .. import benchsearch

    unknown = [s for s in request.strategies if s not in benchsearch.STRATEGIES]
    if unknown or not request.strategies:
        raise AppError(f"unknown strategy {', '.join(unknown) or '(none)'}; choose from {', '.join(benchsearch.STRATEGIES)}")
    if request.seeds < 1 or request.budget < 1:
        raise AppError("--seeds and --budget must be positive")
    check_out_folder(request.out)
    sweeps, notes = benchsearch.load_sweeps(storage_url(request.db))
    if not sweeps:
        raise AppError(f"{request.db} has no complete sweep (record one with `inductor-tune sweep`)")
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    from tqdm import tqdm

    seeds = {s: 1 if s == "grid" else min(request.seeds, SEED_CAPS.get(s, request.seeds)) for s in request.strategies}
    with tqdm(total=sum(seeds.values()) * len(sweeps), disable=not request.progress, unit="run", desc="replaying") as bar:
        runs = benchsearch.benchmark(sweeps, list(request.strategies), request.seeds, request.budget, SEED_CAPS, bar)
    summaries = benchsearch.summarize(runs, sweeps)
    os.makedirs(request.out, exist_ok=True)
    plot, results = os.path.join(request.out, "fraction_of_optimum.png"), os.path.join(request.out, "results.json")
    benchsearch.plot(runs, sweeps, plot)
    with open(results, "w") as fh:
        json.dump({"db": request.db, "budget": request.budget, "seeds": request.seeds,
                   "sweeps": [s.name for s in sweeps], "summaries": [dataclasses.asdict(s) for s in summaries],
                   "runs": [dataclasses.asdict(r) for r in runs]}, fh)
    return BenchResult(request, tuple(sweeps), tuple(summaries), tuple(notes), plot, results)
