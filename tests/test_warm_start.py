"""Warm starts: a fresh study first measures the winners of finished studies of other shapes.

The scripted pool answers with made-up timings, and the first study is narrowed to a one-config
sub-grid, so its winner is known: persistent, XBLOCK 8, 8 warps.
"""

import logging

import optuna
import pytest
from fake_pools import remeasured

from inductor_tune import experiment, warmstart
from inductor_tune.evaluate import Problem
from inductor_tune.experiment import ExperimentError
from inductor_tune.kernels import Shape
from inductor_tune.records import Measurement, Outcome
from inductor_tune.search import Tuner, study_name
from inductor_tune.space import GraphFlags, KernelSlot, SearchSpace, SlotConfig, TrialConfig
from inductor_tune.store import Store
from inductor_tune.tasks import ProbeTask, RemeasureTask
from fake_pools import STUDY_GPU, StudyPool

WINNER = SlotConfig(persistent=True, XBLOCK=8, num_warps=8)
ONLY_WINNER = {"persistent": [True], "log2_XBLOCK": [3], "log2_num_warps": [3]}


def _slot(problem) -> KernelSlot:
    rows, cols = problem.shape.rows, problem.shape.cols
    return KernelSlot(f"fw.red.x{rows}.r{cols}", False, rows, cols, False, False)


class ShapePool(StudyPool):
    """One reduction kernel sized by the problem's shape; ``recorded``: the configs a replay would have."""

    def __init__(self, recorded=None):
        super().__init__()
        self.recorded = recorded

    def recorded_configs(self, problem):
        return self.recorded

    def answer(self, task):
        if isinstance(task, ProbeTask):
            return (_slot(task.problem),)
        if isinstance(task, RemeasureTask):
            return remeasured([[_ms(c) * (1 + 0.001 * r) for r in range(task.rounds)] for c in task.configs])
        ms = _ms(task.config)
        return Measurement(Outcome.OK, time_ms=ms, gbps=1.0, ceiling_gbps=4000.0, slots=(_slot(task.problem),))


def _ms(config: TrialConfig) -> float:
    if config.inductor_default:
        return 0.2
    (cfg,) = config.slot_map().values()
    return 0.1 + abs(cfg.XBLOCK - 4) * 0.001 + abs(cfg.num_warps - 4) * 0.001 + (0 if cfg.persistent else 0.05)


def _tune(url, shape, trials=4, pool=None, **keys):
    exp = experiment.from_mapping({"kernels": ["rmsnorm_fwd"], "shapes": [shape], "dtypes": ["bf16"], "trials": trials,
                                   "storage": url, "seed": 1, **keys}, "warm")
    store = Store(url)
    Tuner(exp, pool or ShapePool(), store).run()
    return store


def _name(shape):
    return study_name(Problem("rmsnorm_fwd", Shape.parse(shape), "bf16"), STUDY_GPU.key)


def _optuna_trials(url, shape):
    return optuna.load_study(study_name=_name(shape), storage=url).trials


def _warm(url, shape):
    return [(t.number, t.user_attrs[warmstart.WARM_ATTR]) for t in _optuna_trials(url, shape)
            if warmstart.WARM_ATTR in t.user_attrs]


def _config_of(store, shape, number):
    study = next(s for s in store.studies() if s.name == _name(shape))
    return TrialConfig.from_json(next(r for r in store.trials(study.id) if r.trial_number == number).config_json)


@pytest.fixture
def url(tmp_path):
    """A storage holding one finished study (32768x4096) whose winner is WINNER."""
    url = f"sqlite:///{tmp_path}/w.sqlite"
    store = _tune(url, "32768x4096", trials=3, grid=ONLY_WINNER)
    study = store.studies()[0]
    assert store.verdict(study.id).improved
    assert TrialConfig.from_json(store.verdict(study.id).best_config_json).slot_map() == {"fw.red.x32768.r4096": WINNER}
    return url


def test_a_second_study_first_measures_the_first_studys_winner(url, caplog):
    with caplog.at_level(logging.INFO, logger="inductor_tune.search"):
        store = _tune(url, "32768x8192")
    assert _warm(url, "32768x8192") == [(1, _name("32768x4096"))]  # right after Inductor's default
    assert _config_of(store, "32768x8192", 1).slot_map() == {"fw.red.x32768.r8192": WINNER}
    assert _optuna_trials(url, "32768x8192")[1].state == optuna.trial.TrialState.COMPLETE
    assert any("warm start from " + _name("32768x4096") in r.getMessage() for r in caplog.records)


def test_a_config_illegal_in_the_new_space_is_not_enqueued(url):
    _tune(url, "4x4096")  # XBLOCK 8 above the 4 rows
    assert _warm(url, "4x4096") == []
    _tune(url, "32768x8192", grid={"log2_num_warps": [2]})  # 8 warps: outside the sub-grid
    assert _name("32768x4096") not in [source for _, source in _warm(url, "32768x8192")]
    _tune(url, "16384x8192")  # the same winner is legal here
    assert _name("32768x4096") in [source for _, source in _warm(url, "16384x8192")]


def test_resuming_a_study_does_not_enqueue_again(url):
    _tune(url, "32768x8192", trials=3)
    assert _warm(url, "32768x8192") == [(1, _name("32768x4096"))]
    # A new finished source, with a winner (XBLOCK 2, 4 warps) that the first run above did not measure.
    _tune(url, "32768x2048", trials=3, grid={"persistent": [True], "log2_XBLOCK": [1], "log2_num_warps": [2]},
          warm_start=0)
    _tune(url, "32768x16384", trials=3)  # a fresh study takes it
    assert _name("32768x2048") in [source for _, source in _warm(url, "32768x16384")]
    store = _tune(url, "32768x8192", trials=10)  # the resumed one does not
    assert _warm(url, "32768x8192") == [(1, _name("32768x4096"))]
    study = next(s for s in store.studies() if s.name == _name("32768x8192"))
    assert len([r for r in store.trials(study.id) if r.outcome != Outcome.CONSTRAINT]) == 10


def test_warm_start_zero_disables_it(url):
    _tune(url, "32768x8192", warm_start=0)
    assert _warm(url, "32768x8192") == []


def test_grid_search_is_not_warm_started(url):
    _tune(url, "32768x8192", sampler="grid")
    assert _warm(url, "32768x8192") == []


def test_a_replay_enqueues_only_configs_the_recording_has(url):
    other = SlotConfig(persistent=True, XBLOCK=4, num_warps=4)
    _tune(url, "32768x8192", trials=2, pool=ShapePool(recorded=[TrialConfig(slots=(("fw.red.x32768.r8192", other),))]))
    assert _warm(url, "32768x8192") == []
    _tune(url, "32768x2048", trials=2, pool=ShapePool(recorded=[TrialConfig(slots=(("fw.red.x32768.r2048", WINNER),))]))
    assert _warm(url, "32768x2048") == [(1, _name("32768x4096"))]


def test_kernels_are_matched_by_their_probe_order_not_by_their_sizes():
    def bwd(n):  # Inductor generates the column reduction first; its key sorts after the row reduction's at N=4096
        return (KernelSlot(f"bw.red.x{n}.r32768", True, n, 32768, False, False),
                KernelSlot(f"bw.red.x32768.r{n}", True, 32768, n, False, False))

    source, target = (SearchSpace(((GraphFlags(), bwd(n)),)) for n in (4096, 8192))
    columns = SlotConfig(persistent=False, XBLOCK=64, R0_BLOCK=64, num_warps=8, num_stages=2)
    rows = SlotConfig(persistent=True, XBLOCK=1, num_warps=8)
    config = TrialConfig(GraphFlags(), (("bw.red.x32768.r4096", rows), ("bw.red.x4096.r32768", columns)))
    moved = warmstart.move_config(config, source, target)
    assert moved.slot_map() == {"bw.red.x8192.r32768": columns, "bw.red.x32768.r8192": rows}
    assert target.contains(moved) and not target.contains(config)
    assert warmstart.move_config(config, source, SearchSpace(((GraphFlags(), bwd(8192)[:1]),))) is None


@pytest.mark.parametrize("value", [-1, "three", True, 1.5])
def test_warm_start_must_be_a_non_negative_integer(value):
    keys = {"kernels": ["rmsnorm_fwd"], "shapes": ["32768x4096"], "dtypes": ["bf16"]}
    with pytest.raises(ExperimentError) as info:
        experiment.from_mapping(dict(keys, warm_start=value), "x")
    assert "'warm_start' must be a non-negative integer" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ExperimentError, match="'warm_start' must be"):
        experiment.with_overrides(experiment.from_mapping(keys, "x"), warm_start=value)
    assert experiment.from_mapping(keys, "x").warm_start == 3
    assert experiment.from_mapping(dict(keys, warm_start=0), "x").warm_start == 0
