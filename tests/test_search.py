"""The study loop, naming and resume, driven by a scripted stand-in for the GPU worker pool.

The stand-in answers with made-up timings (a deterministic function of the config): these tests
check bookkeeping (budgets, resume, ledgers, verdicts), never performance.
"""

import dataclasses

import optuna
import pytest
from fake_pools import STUDY_GPU, StudyPool, study_experiment

from inductor_tune.records import Outcome
from inductor_tune.search import Tuner, study_name
from inductor_tune.stats import summarize_verdict as summarize
from inductor_tune.store import Store


def test_names_keep_gpus_and_versions_apart():
    from inductor_tune.evaluate import Problem
    from inductor_tune.kernels import Shape

    key = STUDY_GPU.key
    assert key == "NVIDIA-H200/sm90x132/torch2.11.0+cu130/triton3.6.0"
    name = study_name(Problem("rmsnorm_fwd", Shape(32768, 4096), "bf16"), key)
    assert name == "rmsnorm_fwd/32768x4096/bf16@NVIDIA-H200/sm90x132/torch2.11.0+cu130/triton3.6.0"
    other = dataclasses.replace(STUDY_GPU, triton="3.7.0").key
    assert other != key and dataclasses.replace(STUDY_GPU, replayed=True).key == key + "/replay"


def test_study_runs_to_budget_then_resumes_without_loss_or_duplicates(tmp_path):
    exp = study_experiment(tmp_path, 8)
    store = Store(exp.storage_url)
    Tuner(exp, StudyPool(), store).run()
    study_id = store.studies()[0].id
    first = store.trials(study_id)
    measured = [t for t in first if t.outcome != Outcome.CONSTRAINT]
    assert len(measured) == 8 and sum(t.inductor_default for t in first) == 1
    assert store.verdict(study_id).trials_measured == len([t for t in first if t.outcome == Outcome.OK])

    bigger = dataclasses.replace(exp, trials=14)
    Tuner(bigger, StudyPool(), store).run()
    second = store.trials(study_id)
    numbers = [t.trial_number for t in second]
    assert len(numbers) == len(set(numbers))  # no duplicated trial
    assert [t.trial_number for t in second[: len(first)]] == [t.trial_number for t in first]  # nothing lost
    assert len([t for t in second if t.outcome != Outcome.CONSTRAINT]) == 14
    assert sum(t.inductor_default for t in second) == 1  # the default is measured once
    study = optuna.load_study(study_name=store.studies()[0].name, storage=exp.storage_url)
    assert len(study.trials) == len(second)
    verdict = store.verdict(study_id)
    assert verdict.trials_measured == len([t for t in second if t.outcome == Outcome.OK])
    assert verdict.improved and verdict.speedup > 1.0

    Tuner(bigger, StudyPool(), store).run()  # a finished study stays as it is
    assert len(store.trials(study_id)) == len(second)


class _SlowStudyPool(StudyPool):
    """Answers a trial only on the second collect after it was dispatched: trials stay in flight a turn."""

    def collect(self, timeout=0.5):
        ripe, self._done = [d for d in self._done if d[3]], [(*d[:3], True) for d in self._done if not d[3]]
        for index, _, _, _ in ripe:
            self._busy.pop(index)
        return [(task, result) for _, task, result, _ in ripe]

    def dispatch(self, index, task):
        super().dispatch(index, task)
        self._done[-1] = (*self._done[-1], False)


def test_trials_in_flight_keep_their_heartbeat_while_the_study_waits(tmp_path, monkeypatch):
    beats = []
    real = Tuner._heartbeat
    monkeypatch.setattr(Tuner, "_heartbeat", lambda self, in_flight: (beats.append(len(in_flight)), real(self, in_flight)))
    exp = study_experiment(tmp_path, 8)
    Tuner(exp, _SlowStudyPool(), Store(exp.storage_url)).run()
    # A study of 8 trials on 4 workers waits with trials in flight; every wait beats for them (another
    # process would otherwise take them for lost).
    assert max(beats) == 4 and sum(b > 0 for b in beats) >= 2


def test_trials_left_running_by_a_dead_process_are_failed_and_retried(tmp_path):
    exp = dataclasses.replace(study_experiment(tmp_path, 4), heartbeat_s=1, stale_after_s=1)
    store = Store(exp.storage_url)
    Tuner(exp, StudyPool(), store).run()
    name = store.studies()[0].name
    storage = optuna.storages.RDBStorage(exp.storage_url, heartbeat_interval=1, grace_period=1)
    study = optuna.load_study(study_name=name, storage=storage)
    orphan = study.ask()
    orphan.suggest_categorical("fw.red.x32768.r4096.persistent", (True, False))
    orphan.suggest_int("fw.red.x32768.r4096.log2_XBLOCK", 2, 2)
    orphan.suggest_int("fw.red.x32768.r4096.log2_num_warps", 2, 2)
    storage.record_heartbeat(orphan._trial_id)  # as the tuner does, then its process dies
    Tuner(dataclasses.replace(exp, trials=6), StudyPool(), store).run()
    study = optuna.load_study(study_name=name, storage=exp.storage_url)
    assert study.trials[orphan.number].state == optuna.trial.TrialState.FAIL
    assert not [t for t in study.trials if t.state == optuna.trial.TrialState.RUNNING]
    retried = [t for t in study.trials if t.user_attrs.get("retry_of") == orphan.number]
    assert retried and retried[0].state.is_finished()
    assert all(retried[0].params[k] == v for k, v in orphan.params.items())
    records = store.trials(store.studies()[0].id)
    assert orphan.number not in {r.trial_number for r in records}  # never counted as measured
    assert len([r for r in records if r.outcome != Outcome.CONSTRAINT]) == 6


def test_failures_are_recorded_with_their_type(tmp_path):
    exp = study_experiment(tmp_path, 10)
    store = Store(exp.storage_url)
    Tuner(exp, StudyPool(fail_every=3), store).run()
    trials = store.trials(store.studies()[0].id)
    timeouts = [t for t in trials if t.outcome == Outcome.TIMEOUT]
    assert timeouts and all("timeout" in t.reason for t in timeouts)
    constraints = [t for t in trials if t.outcome == Outcome.CONSTRAINT]
    assert all(t.reason and t.time_ms is None for t in constraints)


def test_repeated_configs_reuse_the_measurement(tmp_path):
    exp = dataclasses.replace(study_experiment(tmp_path, 40), sampler="grid")
    store = Store(exp.storage_url)
    Tuner(exp, StudyPool(), store).run()
    trials = store.trials(store.studies()[0].id)
    ok = [t for t in trials if t.outcome == Outcome.OK and not t.inductor_default]
    assert len({t.config_json for t in ok}) == len([t for t in ok if "reused" not in t.reason])


def test_verdict_requires_every_round_to_beat_the_default():
    finalists = [type("R", (), {"trial_number": 7, "config_json": "{}"})()]
    clear = summarize([[1.0, 1.01, 0.99], [0.8, 0.81, 0.8]], finalists)
    assert clear["improved"] and clear["speedup"] == pytest.approx(1.0 / 0.8, rel=0.02)
    assert clear["speedup_low"] <= clear["speedup"] <= clear["speedup_high"]
    noisy = summarize([[1.0, 1.2, 0.9], [0.97, 0.95, 1.25]], finalists)
    assert not noisy["improved"]
    slower = summarize([[1.0, 1.0, 1.0], [1.1, 1.1, 1.1]], finalists)
    assert not slower["improved"] and slower["speedup"] < 1
    nothing = summarize([[1.0, 1.0, 1.0], [None, None, None]], finalists)
    assert not nothing["improved"] and nothing["best_ms"] is None
