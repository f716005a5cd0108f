"""Worker isolation and replay, with real worker processes answering from recorded H200 trials."""

import dataclasses
import json
import shutil

import pytest

from inductor_tune import experiment
from inductor_tune.evaluate import Problem
from inductor_tune.kernels import Shape
from inductor_tune.records import Outcome, TimingSpec
from inductor_tune.replay import NotRecorded, ReplayBackend
from inductor_tune.search import Tuner
from inductor_tune.space import GraphFlags, TrialConfig
from inductor_tune.store import Store
from inductor_tune.tasks import ProbeTask, TrialTask
from inductor_tune.workers import BackendSpec, WorkerPool

PROBLEM = Problem("rmsnorm_fwd", Shape(32768, 4096), "bf16")


@pytest.fixture
def recording(tmp_path):
    path = tmp_path / "recorded.sqlite"
    shutil.copy("db/quack.sqlite", path)
    return f"sqlite:///{path}"


def _key(config_json):
    return json.dumps(json.loads(config_json), sort_keys=True)


def _recorded_ok(url):
    """Distinct configs measured OK in the recording (parallel workers may have measured one twice)."""
    store = Store(url, create=False)
    study = next(s for s in store.studies() if (s.kernel, s.rows, s.cols) == ("rmsnorm_fwd", 32768, 4096))
    first = {}
    for t in store.trials(study.id):
        if t.outcome == Outcome.OK:
            first.setdefault(_key(t.config_json), t)
    return list(first.values())


def test_replay_answers_recorded_configs_and_refuses_others(recording):
    backend = ReplayBackend(recording)
    assert backend.fingerprint.replayed and backend.fingerprint.name == "NVIDIA H200"
    rec = _recorded_ok(recording)[3]
    m = backend.run(TrialTask(0, PROBLEM, TrialConfig.from_json(rec.config_json), TimingSpec()))
    assert m.outcome == Outcome.OK and m.time_ms == rec.time_ms and m.reason.startswith("replayed from")
    assert "replayed_from" in json.loads(m.timing)
    slots = backend.run(ProbeTask(1, PROBLEM, GraphFlags()))
    assert [s.key for s in slots] == ["fw.red.x32768.r4096"]
    unknown = TrialConfig.from_json(rec.config_json)
    key, cfg = unknown.slots[0]
    unknown = dataclasses.replace(unknown, slots=((key, dataclasses.replace(cfg, num_warps=cfg.num_warps * 64)),))
    with pytest.raises(NotRecorded, match="no measurement"):
        backend.run(TrialTask(2, PROBLEM, unknown, TimingSpec()))
    with pytest.raises(NotRecorded, match="no recorded study"):
        backend.run(TrialTask(3, Problem("softmax_bwd", Shape(8, 8), "bf16"), TrialConfig.from_json(rec.config_json),
                              TimingSpec()))


def _exp(tmp_path, trials, **extra):
    data = {"kernels": ["rmsnorm_fwd"], "shapes": ["32768x4096"], "dtypes": ["bf16"], "trials": trials,
            "sampler": "grid", "storage": f"sqlite:///{tmp_path}/run.sqlite", "trial_timeout": 10, **extra}
    return experiment.from_mapping(data, "replay-test")


def test_faults_are_recorded_and_the_study_survives_them(recording, tmp_path):
    recorded = _recorded_ok(recording)
    ranked = sorted(recorded, key=lambda r: r.time_ms)
    # Fault the two fastest configs and three others; the winner must be the third fastest.
    faults = {
        ranked[0].config_json: "crash", ranked[1].config_json: "wrong", ranked[-1].config_json: "hang",
        ranked[-2].config_json: "segfault", ranked[-3].config_json: "raise",
    }
    exp = _exp(tmp_path, len(recorded))
    store = Store(exp.storage_url)
    spec = BackendSpec("replay", recording, tuple(faults.items()))
    with WorkerPool(0, 3, exp.trial_timeout_s, lock_dir=str(tmp_path), backend=spec) as pool:
        Tuner(exp, pool, store).run()
    (study,) = store.studies()
    assert study.replayed and study.name.endswith("/replay")
    by_config = {_key(t.config_json): t for t in store.trials(study.id)}
    outcome = lambda cfg: by_config[_key(cfg)]  # noqa: E731
    assert outcome(ranked[0].config_json).outcome == Outcome.CRASH
    assert "signal 6" in outcome(ranked[0].config_json).reason
    assert outcome(ranked[-2].config_json).outcome == Outcome.CRASH
    assert "signal 11" in outcome(ranked[-2].config_json).reason
    assert outcome(ranked[1].config_json).outcome == Outcome.WRONG_RESULT
    assert outcome(ranked[-1].config_json).outcome == Outcome.TIMEOUT
    raised = outcome(ranked[-3].config_json)
    assert raised.outcome == Outcome.COMPILE_ERROR and "injected failure" in raised.reason
    ok = [t for t in store.trials(study.id) if t.outcome == Outcome.OK]
    assert not any(r.inductor_default for r in ranked[:2] + ranked[-3:])
    assert len(ok) == len(recorded) - 5
    verdict = store.verdict(study.id)
    winner = next(r for r in ranked[2:] if not r.inductor_default)
    assert verdict.best_config_json == winner.config_json
    assert all(t.reason.startswith("replayed from") for t in ok)


def test_replayed_study_reproduces_the_recording(recording, tmp_path):
    recorded = _recorded_ok(recording)
    exp = _exp(tmp_path, len(recorded))
    store = Store(exp.storage_url)
    with WorkerPool(0, 2, 60, lock_dir=str(tmp_path), backend=BackendSpec("replay", recording)) as pool:
        Tuner(exp, pool, store).run()
    (study,) = store.studies()
    replayed = {_key(t.config_json): t.time_ms for t in store.trials(study.id) if t.outcome == Outcome.OK}
    assert replayed == {_key(r.config_json): r.time_ms for r in recorded}


def test_sweep_replayed_from_the_recorded_sweep_measures_its_whole_grid_once(tmp_path):
    """`sweep` on the committed H200 sweep: every legal config of the sub-grid, each exactly once."""
    shutil.copy("db/sweeps.sqlite", tmp_path / "sweeps.sqlite")
    source = f"sqlite:///{tmp_path}/sweeps.sqlite"
    base = experiment.load("experiments/sweep_fwd.yaml")
    exp = dataclasses.replace(
        base, kernels=("rmsnorm_fwd",), shapes=(Shape(32768, 1024),), sweep=True, trials=10**9, sampler="grid",
        storage=f"sqlite:///{tmp_path}/run.sqlite", trial_timeout_s=10,
    )
    store = Store(exp.storage_url)
    with WorkerPool(0, 2, 10, lock_dir=str(tmp_path), backend=BackendSpec("replay", source)) as pool:
        Tuner(exp, pool, store).run()
    (study,) = store.studies()
    assert study.name.endswith("/replay/sweep") and study.sampler == "sweep"
    records = store.trials(study.id)
    configs = [_key(t.config_json) for t in records if not t.inductor_default]
    from inductor_tune.space import SearchSpace

    space = SearchSpace.from_json(study.space_json)
    assert dict(space.grid) == {k: tuple(v) for k, v in exp.grid}
    assert sorted(configs) == sorted(_key(c.to_json()) for c in space.enumerate())
    assert all(t.outcome == Outcome.OK for t in records)
