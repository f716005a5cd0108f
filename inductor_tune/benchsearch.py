"""Compare search strategies offline, by replaying exhaustive sweeps (``inductor-tune bench-search``).

A sweep (``inductor-tune sweep``) measured every legal config of a sub-grid for one kernel/shape;
here each strategy searches that same sub-grid with the sweep as its objective, so thousands of
studies cost seconds instead of GPU hours (Kernel Tuner's simulation mode, for Inductor's space).
Strategies follow the tuner's own rules: Optuna samplers come from ``search.make_sampler`` and
draw through ``SearchSpace.suggest``; an illegal draw is pruned and costs no trial; a failed config
(out of resources) costs a trial; a config drawn again costs a trial and returns the same time.
Inductor's default is not part of a sweep's grid, so it is left out on both sides: the optimum is
the best config of the sweep and a strategy's k trials are k configs of the grid.  ``summarize(...,
default_first=True)`` counts as the tuner does instead: trial 1 is Inductor's default (its recorded
time; the sampler never sees it), and the optimum is the better of the grid's and the default.

``tpe-warm-any`` (``DEFAULT_STRATEGY``) is what the tuner does by default: TPE whose first trials
are the winners of up to ``WARM_CONFIGS`` other sweeps of the dtype (nearest N first, the same kernel
first at equal N; never the shape's own), chosen by ``warmstart.pick`` as the tuner chooses them.
Plain ``tpe`` is the baseline.  The other TPE variants (README "Search strategies"): ``tpe-start``
enqueues the grid config nearest Inductor's own choice as the first trial; ``tpe-warm`` warms from
the same kernel only; ``tpe-start-warm`` start and warm; ``tpe-startup5`` 5 random startup trials
instead of 10; ``tpe-independent`` univariate TPE.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import math
import random
import statistics
from typing import Any, Sequence

import optuna

from . import warmstart
from .experiment import Experiment
from .records import Outcome
from .runtime.launch import POW2_FIELDS, STAGE_FIELDS
from .space import ConstraintViolation, SearchSpace, TrialConfig, params_of

log = logging.getLogger(__name__)

OPTUNA_STRATEGIES = ("tpe", "random", "cmaes", "gp")
# TPE with enqueued first trials or other settings (README "Search strategies"); the tuner's default
# is one of them, the others are what it was measured against.
TPE_VARIANTS = ("tpe-warm", "tpe-warm-any", "tpe-start", "tpe-start-warm", "tpe-startup5", "tpe-independent")
STRATEGIES = OPTUNA_STRATEGIES + ("grid", "coordinate") + TPE_VARIANTS
DEFAULT_STRATEGY = "tpe-warm-any"  # what the tuner does unless an experiment says otherwise
WARM_CONFIGS = Experiment.warm_start  # neighbouring shapes' winners enqueued, as many as the tuner's default
WITHIN = 0.02  # "within 2 % of the optimum"
COORDINATE_THRESHOLD = 0.001  # Inductor's coordinate descent accepts a move only above this gain
MAX_ILLEGAL_STREAK = 2000


@dataclasses.dataclass(frozen=True)
class Sweep:
    name: str  # kernel shape dtype
    space: SearchSpace
    times: dict[str, float | None]  # canonical config JSON -> median ms (None: the config failed)
    order: tuple[str, ...]  # the grid's configs in Space.enumerate order
    start: str  # the grid config nearest Inductor's own choice (coordinate descent starts there)
    default_ms: float | None = None  # Inductor's unmodified default (the sweep's trial 0), not a grid config

    @property
    def optimum_ms(self) -> float:
        return min(t for t in self.times.values() if t is not None)

    @property
    def optimum_with_default_ms(self) -> float:
        return min(self.optimum_ms, self.default_ms if self.default_ms is not None else math.inf)


@dataclasses.dataclass(frozen=True)
class Run:
    strategy: str
    sweep: str
    seed: int
    best_ms: tuple[float, ...]  # best time after k = 1, 2, ... trials (inf before the first success)


def _canonical(config_json: str) -> str:
    return json.dumps(json.loads(config_json), sort_keys=True)


def load_sweeps(url: str) -> tuple[list[Sweep], list[str]]:
    """The complete sweeps in a database, and a note for each incomplete one."""
    from .store import Store

    store = Store(url, create=False)
    sweeps, notes = [], []
    for study in store.studies():
        if study.sampler != "sweep" or not study.space_json:
            continue
        name = f"{study.kernel} {study.rows}x{study.cols} {study.dtype}"
        space = SearchSpace.from_json(study.space_json)
        records = store.trials(study.id)
        times = {_canonical(r.config_json): (r.time_ms if r.outcome == Outcome.OK else None)
                 for r in records if not r.inductor_default}
        order = tuple(_canonical(c.to_json()) for c in space.enumerate())
        missing = [c for c in order if c not in times]
        if missing:
            notes.append(f"{name}: sweep incomplete ({len(missing)} of {len(order)} configs unmeasured); skipped")
            continue
        default = next((r for r in records if r.inductor_default), None)
        start = _nearest(order, default.inductor_choice_json if default else None)
        default_ms = default.time_ms if default is not None and default.outcome == Outcome.OK else None
        sweeps.append(Sweep(name, space, {c: times[c] for c in order}, order, start, default_ms))
    return sweeps, notes


def _nearest(order: Sequence[str], inductor_choice_json: str | None) -> str:
    """The grid config closest (in log2 steps) to the launch config Inductor chose by default."""
    choice = json.loads(inductor_choice_json or "[]")
    wanted = [c.get("config") or {} for c in choice]
    if len(wanted) != 1:
        return order[0]
    want = wanted[0]

    def distance(key: str) -> float:
        (cfg,) = json.loads(key)["slots"].values()
        d = 0.0
        for field in (*POW2_FIELDS, *STAGE_FIELDS):
            a, b = cfg.get(field), want.get(field)
            if a and b:
                d += abs(math.log2(a) - math.log2(b))
            elif field == "R0_BLOCK" and bool(a) != bool(b):
                d += 1  # persistent vs looped
        return d

    return min(order, key=distance)


# -- strategies ---------------------------------------------------------------------------------

def _variant_sampler(strategy: str, seed: int) -> optuna.samplers.BaseSampler:
    from .search import make_sampler

    if strategy == "tpe-startup5":
        return optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True, constant_liar=True,
                                          n_startup_trials=5)
    if strategy == "tpe-independent":
        return optuna.samplers.TPESampler(seed=seed, constant_liar=True, n_startup_trials=10)
    return make_sampler("tpe" if strategy in TPE_VARIANTS else strategy, seed)


def _shape_of(sweep: Sweep) -> tuple[str, int, str]:
    kernel, shape, dtype = sweep.name.split()
    return kernel, int(shape.split("x")[1]), dtype


def _sweep_best(sweep: Sweep) -> TrialConfig:
    return TrialConfig.from_json(min((k for k, t in sweep.times.items() if t is not None), key=sweep.times.get))


def warm_configs(sweep: Sweep, others: Sequence[Sweep], limit: int = WARM_CONFIGS,
                 other_kernels: bool = False) -> list[str]:
    """Best configs of the other sweeps of the same kernel and dtype, nearest N first, moved onto this
    shape's kernels and kept where they are configs of its grid (leave-one-shape-out: never its own).
    ``other_kernels``: other kernels of the same dtype too (nearest N first, the same kernel first),
    as the tuner's warm start does (``warmstart.pick``)."""
    kernel, cols, dtype = _shape_of(sweep)
    sources = [
        warmstart.Source(o.name, _shape_of(o)[0], _shape_of(o)[1], o.space, functools.partial(_sweep_best, o))
        for o in others
        if o.name != sweep.name and _shape_of(o)[2] == dtype and (other_kernels or _shape_of(o)[0] == kernel)
    ]
    picked = warmstart.pick(kernel, cols, sweep.space, sources, limit,
                            accept=lambda config: _canonical(config.to_json()) in sweep.times)
    return [_canonical(config.to_json()) for config, _ in picked]


def _optuna_run(sweep: Sweep, strategy: str, seed: int, budget: int, others: Sequence[Sweep] = ()) -> list[float]:
    study = optuna.create_study(direction="minimize", sampler=_variant_sampler(strategy, seed))
    # tpe-start: first the grid config nearest Inductor's own choice; tpe-warm: neighbouring shapes' winners.
    enqueue = [sweep.start] if strategy in ("tpe-start", "tpe-start-warm") else []
    if strategy in ("tpe-warm", "tpe-start-warm", "tpe-warm-any"):
        warm = warm_configs(sweep, others, other_kernels=strategy == "tpe-warm-any")
        enqueue += [k for k in warm if k not in enqueue]
    for key in enqueue:
        study.enqueue_trial(params_of(TrialConfig.from_json(key), sweep.space))
    best, curve, seen, streak = math.inf, [], {}, 0
    while len(curve) < budget and streak < MAX_ILLEGAL_STREAK:
        trial = study.ask()
        try:
            config = sweep.space.suggest(trial)
        except ConstraintViolation:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            streak += 1
            continue
        streak = 0
        key = _canonical(config.to_json())
        if key not in sweep.times:
            raise KeyError(f"{sweep.name}: {strategy} drew a config the sweep lacks: {config.describe()}")
        t = seen.get(key, sweep.times[key])
        seen[key] = t
        if t is None:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:
            study.tell(trial, t)
            best = min(best, t)
        curve.append(best)
    return curve + [best] * (budget - len(curve))


def _grid_run(sweep: Sweep, budget: int) -> list[float]:
    best, curve = math.inf, []
    for key in sweep.order[:budget]:
        t = sweep.times[key]
        best = min(best, t) if t is not None else best
        curve.append(best)
    return curve + [best] * (budget - len(curve))


def _coordinate_run(sweep: Sweep, seed: int, budget: int) -> list[float]:
    """Inductor's coordinate descent on the grid: per field try x2 and /2 (flip for booleans)."""
    space = sweep.space
    dists = space.distributions()
    by_params = {}
    for key in sweep.order:
        by_params[tuple(sorted(params_of(TrialConfig.from_json(key), space).items()))] = key
    # Seed 0 starts at Inductor's choice (as Inductor does); other seeds at random grid points.
    start = sweep.start if seed == 0 else random.Random(seed).choice(sweep.order)
    current = dict(params_of(TrialConfig.from_json(start), space))
    measured: dict[str, float | None] = {}
    curve: list[float] = []
    best = math.inf

    def measure(params: dict[str, Any]) -> float | None:
        nonlocal best
        key = by_params.get(tuple(sorted(params.items())))
        if key is None:  # illegal or outside the grid: no kernel, no trial
            return None
        if key not in measured:
            if len(curve) >= budget:
                return None
            measured[key] = sweep.times[key]
            if measured[key] is not None:
                best = min(best, measured[key])
            curve.append(best)
        return measured[key]

    current_t = measure(current)
    improved = True
    while improved and len(curve) < budget:
        improved = False
        for name in sorted(current):
            for neighbour in _neighbours(current[name], dists[name]):
                candidate = dict(current, **{name: neighbour})
                t = measure(candidate)
                if t is not None and (current_t is None or t < current_t * (1 - COORDINATE_THRESHOLD)):
                    current, current_t, improved = candidate, t, True
    return curve + [best] * (budget - len(curve))


def _neighbours(value: Any, dist: optuna.distributions.BaseDistribution) -> list[Any]:
    if isinstance(dist, optuna.distributions.CategoricalDistribution):
        choices = list(dist.choices)
        if all(isinstance(c, bool) for c in choices):
            return [c for c in choices if c != value]
        i = choices.index(value)
        return [choices[j] for j in (i - 1, i + 1) if 0 <= j < len(choices)]
    return [v for v in (value - 1, value + 1) if dist.low <= v <= dist.high]  # exponents: x2, /2


def run_strategy(sweep: Sweep, strategy: str, seed: int, budget: int, others: Sequence[Sweep] = ()) -> Run:
    """One run; ``others`` are the sweeps tpe-warm may take neighbouring shapes' winners from."""
    if strategy in OPTUNA_STRATEGIES + TPE_VARIANTS:
        curve = _optuna_run(sweep, strategy, seed, budget, others)
    elif strategy == "grid":
        curve = _grid_run(sweep, budget)
    elif strategy == "coordinate":
        curve = _coordinate_run(sweep, seed, budget)
    else:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}")
    return Run(strategy, sweep.name, seed, tuple(curve))


# -- metrics ------------------------------------------------------------------------------------

def trials_to_within(run: Run, optimum_ms: float, within: float = WITHIN) -> int | None:
    return next((k + 1 for k, t in enumerate(run.best_ms) if t <= optimum_ms * (1 + within)), None)


@dataclasses.dataclass(frozen=True)
class StrategySummary:
    strategy: str
    runs: int
    median_shape_trials: float  # median over shapes of the per-shape median trials to within 2 %
    p90_trials: float  # 90th percentile over all runs (inf: some runs never got there)
    never: int  # runs that did not get within 2 % inside the budget
    fraction_at: dict[int, float]  # mean optimum/best after k trials


def with_default_first(runs: Sequence[Run], sweeps: Sequence[Sweep]) -> list[Run]:
    """The runs counted as the tuner counts them: trial 1 is Inductor's default (its recorded time;
    the sampler never sees it, so the draws are unchanged), then the strategy's trials 1..budget-1."""
    default = {s.name: s.default_ms for s in sweeps}
    out = []
    for r in runs:
        d = default[r.sweep]
        if d is None:
            raise ValueError(f"{r.sweep}: the sweep has no successful Inductor-default trial")
        out.append(dataclasses.replace(r, best_ms=(d,) + tuple(min(d, t) for t in r.best_ms[:-1])))
    return out


def summarize(runs: Sequence[Run], sweeps: Sequence[Sweep], ks: Sequence[int] = (5, 10, 20, 40),
              default_first: bool = False) -> list[StrategySummary]:
    """Per strategy; ``default_first``: trial 1 is Inductor's default and the optimum includes it."""
    if default_first:
        runs = with_default_first(runs, sweeps)
    optimum = {s.name: s.optimum_with_default_ms if default_first else s.optimum_ms for s in sweeps}
    out = []
    for strategy in dict.fromkeys(r.strategy for r in runs):
        mine = [r for r in runs if r.strategy == strategy]
        needed = [trials_to_within(r, optimum[r.sweep]) or math.inf for r in mine]
        per_shape = []
        for name in dict.fromkeys(r.sweep for r in mine):
            per_shape.append(statistics.median(
                [trials_to_within(r, optimum[name]) or math.inf for r in mine if r.sweep == name]))
        ordered = sorted(needed)
        fractions = {
            k: statistics.fmean(optimum[r.sweep] / r.best_ms[k - 1] if r.best_ms[k - 1] < math.inf else 0.0
                                for r in mine)
            for k in ks if k <= len(mine[0].best_ms)
        }
        out.append(StrategySummary(
            strategy, len(mine), statistics.median(per_shape), ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
            sum(n == math.inf for n in needed), fractions,
        ))
    return out


def render(summaries: Sequence[StrategySummary]) -> str:
    ks = sorted({k for s in summaries for k in s.fraction_at})
    header = ["strategy", "runs", "trials to 2% (median shape)", "p90", "never"] + [f"frac@{k}" for k in ks]
    rows = [[_label(s.strategy), str(s.runs), _num(s.median_shape_trials), _num(s.p90_trials), str(s.never)]
            + [f"{s.fraction_at.get(k, float('nan')):.3f}" for k in ks] for s in summaries]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _label(strategy: str) -> str:
    return f"{strategy} (default)" if strategy == DEFAULT_STRATEGY else strategy


def _num(x: float) -> str:
    return ">budget" if x == math.inf else f"{x:g}"


def plot(runs: Sequence[Run], sweeps: Sequence[Sweep], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    optimum = {s.name: s.optimum_ms for s in sweeps}
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for strategy in dict.fromkeys(r.strategy for r in runs):
        mine = [r for r in runs if r.strategy == strategy]
        budget = len(mine[0].best_ms)
        mean = [statistics.fmean(optimum[r.sweep] / r.best_ms[k] if r.best_ms[k] < math.inf else 0.0 for r in mine)
                for k in range(budget)]
        ax.plot(range(1, budget + 1), mean, label=_label(strategy))
    ax.axhline(1 / (1 + WITHIN), color="grey", linestyle=":", label="within 2 %")
    ax.set_xlabel("trials (configs of the sweep's grid)")
    ax.set_ylabel("optimum / best so far (mean of runs)")
    ax.set_ylim(0.5, 1.01)
    ax.legend(loc="lower right")
    ax.set_title("Search strategies replayed on recorded sweeps")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def benchmark(sweeps: Sequence[Sweep], strategies: Sequence[str], seeds: int, budget: int,
              seed_caps: dict[str, int] | None = None, progress=None, first_seed: int = 0) -> list[Run]:
    """Every strategy on every sweep for seeds first_seed.. (``seeds`` of them, fewer where
    ``seed_caps`` says so)."""
    runs = []
    for strategy in strategies:
        n = 1 if strategy == "grid" else min(seeds, (seed_caps or {}).get(strategy, seeds))
        for sweep in sweeps:
            for seed in range(first_seed, first_seed + n):
                runs.append(run_strategy(sweep, strategy, seed, budget, sweeps))
                if progress is not None:
                    progress.update(1)
    return runs
