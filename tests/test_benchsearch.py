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
