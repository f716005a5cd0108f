"""Search strategies replayed on the H200 sweeps committed in db/sweeps.sqlite."""

import math
import subprocess
import sys

import optuna
import pytest

from inductor_tune import benchsearch

optuna.logging.set_verbosity(optuna.logging.ERROR)


@pytest.fixture(scope="module")
def sweeps():
    found, notes = benchsearch.load_sweeps("sqlite:///db/sweeps.sqlite")
    assert not notes
    return {s.name: s for s in found}


def test_sweeps_load_complete_with_their_grid(sweeps):
    assert len(sweeps) == 12
    fwd = sweeps["rmsnorm_fwd 32768x1024 bf16"]
    assert len(fwd.order) == len(fwd.times) == 100 and fwd.space.grid
    assert fwd.start in fwd.times and fwd.optimum_ms == min(t for t in fwd.times.values() if t)


def test_grid_reaches_the_optimum_exactly_once_its_budget_covers_the_grid(sweeps):
    sweep = sweeps["rmsnorm_fwd 32768x1024 bf16"]
    run = benchsearch.run_strategy(sweep, "grid", 0, len(sweep.order))
    assert run.best_ms[-1] == sweep.optimum_ms
    assert benchsearch.trials_to_within(run, sweep.optimum_ms, 0.0) <= len(sweep.order)


def test_same_seed_same_trajectory_other_seed_other(sweeps):
    sweep = sweeps["layernorm_fwd 32768x4096 bf16"]
    a, b = (benchsearch.run_strategy(sweep, "tpe", 3, 25) for _ in range(2))
    assert a == b
    assert benchsearch.run_strategy(sweep, "tpe", 4, 25).best_ms != a.best_ms
    assert all(x >= y for x, y in zip(a.best_ms, a.best_ms[1:]))  # best so far never gets worse


def test_coordinate_descent_moves_one_field_by_one_power_of_two(sweeps):
    sweep = sweeps["rmsnorm_fwd 32768x4096 bf16"]
    run = benchsearch.run_strategy(sweep, "coordinate", 0, 60)
    assert run.best_ms[0] == sweep.times[sweep.start]  # starts at the grid point nearest Inductor's choice
    dist = sweep.space.distributions()[next(iter(sweep.space.distributions()))]
    assert benchsearch._neighbours(True, dist) == [False]
    assert benchsearch._neighbours(2, optuna.distributions.IntDistribution(0, 5)) == [1, 3]
    assert benchsearch._neighbours(0, optuna.distributions.IntDistribution(0, 5)) == [1]


def test_summary_counts_runs_that_never_get_within_two_percent(sweeps):
    chosen = [sweeps["rmsnorm_fwd 32768x1024 bf16"], sweeps["rmsnorm_bwd 32768x4096 bf16"]]
    runs = benchsearch.benchmark(chosen, ["random", "grid"], seeds=2, budget=5)
    summaries = {s.strategy: s for s in benchsearch.summarize(runs, chosen, ks=(1, 5))}
    assert summaries["random"].runs == 4 and summaries["grid"].runs == 2
    for s in summaries.values():
        assert 0 < s.fraction_at[1] <= s.fraction_at[5] <= 1
        assert (s.never > 0) == (s.p90_trials == math.inf)
    assert "trials to 2%" in benchsearch.render(list(summaries.values()))


def test_cli_refuses_unknown_strategies():
    proc = subprocess.run([sys.executable, "-m", "inductor_tune", "bench-search", "--strategies", "anneal"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "unknown strategy anneal" in proc.stderr


def test_a_config_the_sweep_lacks_is_an_error_never_a_guess(sweeps):
    import dataclasses

    sweep = sweeps["rmsnorm_fwd 32768x1024 bf16"]
    kept = dict(list(sweep.times.items())[::2])  # half the grid "unmeasured"
    holed = dataclasses.replace(sweep, times=kept, order=tuple(k for k in sweep.order if k in kept))
    with pytest.raises(KeyError, match="drew a config the sweep lacks"):
        benchsearch.run_strategy(holed, "random", 0, 60)


def test_warm_start_enqueues_neighbouring_winners_never_the_shapes_own(sweeps):
    everything = list(sweeps.values())
    sweep = sweeps["rmsnorm_fwd 32768x65536 bf16"]
    warm = benchsearch.warm_configs(sweep, everything)
    assert 0 < len(warm) <= benchsearch.WARM_CONFIGS and all(k in sweep.times for k in warm)
    # nearest N first: the winner of N=16384, moved onto this shape's kernel, leads
    neighbour = sweeps["rmsnorm_fwd 32768x16384 bf16"]
    best = min((k for k, t in neighbour.times.items() if t is not None), key=neighbour.times.get)
    assert warm[0] == best.replace("x32768.r16384", "x32768.r65536")
    alone = benchsearch.warm_configs(sweep, [sweep])
    assert alone == []  # its own sweep never informs its start
    run = benchsearch.run_strategy(sweep, "tpe-warm", 5, 10, everything)
    assert run.best_ms[0] == sweep.times[warm[0]]  # the first trial is the enqueued neighbour winner
    assert run == benchsearch.run_strategy(sweep, "tpe-warm", 5, 10, everything)


def test_default_first_counts_inductors_default_as_trial_one(sweeps):
    sweep = sweeps["layernorm_fwd 32768x16384 bf16"]  # Inductor's default is the fastest config measured
    assert sweep.default_ms is not None and sweep.optimum_with_default_ms == min(sweep.default_ms, sweep.optimum_ms)
    runs = [benchsearch.run_strategy(sweep, "random", seed, 12) for seed in range(3)]
    counted = benchsearch.with_default_first(runs, [sweep])
    for raw, run in zip(runs, counted):
        assert len(run.best_ms) == 12 and run.best_ms[0] == sweep.default_ms
        assert run.best_ms[1:] == tuple(min(sweep.default_ms, t) for t in raw.best_ms[:-1])
    (summary,) = benchsearch.summarize(runs, [sweep], ks=(1,), default_first=True)
    assert summary.median_shape_trials == 1 and summary.fraction_at[1] == pytest.approx(
        sweep.optimum_with_default_ms / sweep.default_ms)


def test_the_tuners_strategy_is_marked_default(sweeps):
    chosen = [sweeps["rmsnorm_fwd 32768x1024 bf16"], sweeps["layernorm_fwd 32768x1024 bf16"]]
    runs = benchsearch.benchmark(chosen, [benchsearch.DEFAULT_STRATEGY, "tpe"], seeds=1, budget=3)
    rows = benchsearch.render(benchsearch.summarize(runs, chosen)).splitlines()[2:]
    assert rows[0].startswith("tpe-warm-any (default) ") and rows[1].split()[0] == "tpe" and "default" not in rows[1]
    # layernorm_fwd at N=1024 starts from rmsnorm_fwd's winner at the same N, moved onto its kernel
    (warm,) = benchsearch.warm_configs(chosen[1], chosen, other_kernels=True)
    run = next(r for r in runs if (r.strategy, r.sweep) == (benchsearch.DEFAULT_STRATEGY, chosen[1].name))
    assert run.best_ms[0] == chosen[1].times[warm]
