"""The study loop, naming and resume, driven by a scripted stand-in for the GPU worker pool.

The stand-in answers with made-up timings (a deterministic function of the config): these tests
check bookkeeping (budgets, resume, ledgers, verdicts), never performance.
"""

import dataclasses

import optuna
import pytest
from fake_pools import remeasured

from inductor_tune import experiment
from inductor_tune.records import Measurement, Outcome
from inductor_tune.gpu import GpuIdentity
from inductor_tune.search import Tuner, study_name
from inductor_tune.stats import summarize_verdict as summarize
from inductor_tune.space import KernelSlot, TrialConfig
from inductor_tune.store import Store
from inductor_tune.tasks import ProbeTask, RemeasureTask
from inductor_tune.workers import TaskFailure

FP = GpuIdentity(name="NVIDIA H200", sm_count=132, compute_capability="9.0", memory_bytes=150 * 2**30, l2_bytes=60 * 2**20,
          cuda_driver="580", cuda_runtime="13.0", torch="2.11.0+cu130", triton="3.6.0")
SLOT = KernelSlot("fw.red.x32768.r4096", False, 32768, 4096, False, False)


class ScriptedPool:
    """Implements the WorkerPool interface the Tuner uses, without processes or a GPU."""

    def __init__(self, size=4, fail_every=0):
        self.size, self.fingerprint, self.ceiling_gbps = size, FP, 4000.0
        self._busy: dict[int, object] = {}
        self._done: list = []
        self.fail_every = fail_every
        self.dispatched = 0

    def idle(self, limit=None):
        return [i for i in range(min(limit or self.size, self.size)) if i not in self._busy]

    def busy(self):
        return len(self._busy)

    def release(self, keep):
        pass

    def recorded_configs(self, problem):
        return None

    def dispatch(self, index, task):
        self._busy[index] = task
        self.dispatched += 1
        self._done.append((index, task, self._answer(task)))

    def collect(self, timeout=0.5):
        done, self._done = self._done, []
        for index, _, _ in done:
            self._busy.pop(index)
        return [(task, result) for _, task, result in done]

    def _answer(self, task):
        if isinstance(task, ProbeTask):
            return (SLOT,)
        if isinstance(task, RemeasureTask):
            return remeasured([[_fake_ms(c) * (1 + 0.001 * r) for r in range(task.rounds)] for c in task.configs])
        config = task.config
        if self.fail_every and self.dispatched % self.fail_every == 0:
            return TaskFailure(Outcome.TIMEOUT, "killed after exceeding the task timeout")
        return Measurement(Outcome.OK, time_ms=_fake_ms(config), gbps=1.0, ceiling_gbps=4000.0, slots=(SLOT,))


def _fake_ms(config: TrialConfig) -> float:
    if config.inductor_default:
        return 0.2
    cfg = config.slot_map()[SLOT.key]
    return 0.1 + abs(cfg.XBLOCK - 4) * 0.01 + abs(cfg.num_warps - 4) * 0.005 + (0 if cfg.persistent else 0.05)


def _exp(tmp_path, trials):
    return experiment.from_mapping(
        {"kernels": ["rmsnorm_fwd"], "shapes": ["32768x4096"], "dtypes": ["bf16"], "trials": trials,
         "storage": f"sqlite:///{tmp_path}/s.sqlite", "seed": 5}, "unit",
    )


def test_names_keep_gpus_and_versions_apart():
    from inductor_tune.evaluate import Problem
    from inductor_tune.kernels import Shape

    key = FP.key
    assert key == "NVIDIA-H200/sm90x132/torch2.11.0+cu130/triton3.6.0"
    name = study_name(Problem("rmsnorm_fwd", Shape(32768, 4096), "bf16"), key)
    assert name == "rmsnorm_fwd/32768x4096/bf16@NVIDIA-H200/sm90x132/torch2.11.0+cu130/triton3.6.0"
    other = dataclasses.replace(FP, triton="3.7.0").key
    assert other != key and dataclasses.replace(FP, replayed=True).key == key + "/replay"


def test_study_runs_to_budget_then_resumes_without_loss_or_duplicates(tmp_path):
    exp = _exp(tmp_path, 8)
    store = Store(exp.storage_url)
    Tuner(exp, ScriptedPool(), store).run()
    study_id = store.studies()[0].id
    first = store.trials(study_id)
    measured = [t for t in first if t.outcome != Outcome.CONSTRAINT]
    assert len(measured) == 8 and sum(t.inductor_default for t in first) == 1
    assert store.verdict(study_id).trials_measured == len([t for t in first if t.outcome == Outcome.OK])

    bigger = dataclasses.replace(exp, trials=14)
    Tuner(bigger, ScriptedPool(), store).run()
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

    Tuner(bigger, ScriptedPool(), store).run()  # a finished study stays as it is
    assert len(store.trials(study_id)) == len(second)


def test_trials_left_running_by_a_dead_process_are_failed_and_retried(tmp_path):
    exp = dataclasses.replace(_exp(tmp_path, 4), heartbeat_s=1, stale_after_s=1)
    store = Store(exp.storage_url)
    Tuner(exp, ScriptedPool(), store).run()
    name = store.studies()[0].name
    storage = optuna.storages.RDBStorage(exp.storage_url, heartbeat_interval=1, grace_period=1)
    study = optuna.load_study(study_name=name, storage=storage)
    orphan = study.ask()
    orphan.suggest_categorical("fw.red.x32768.r4096.persistent", (True, False))
    orphan.suggest_int("fw.red.x32768.r4096.log2_XBLOCK", 2, 2)
    orphan.suggest_int("fw.red.x32768.r4096.log2_num_warps", 2, 2)
    storage.record_heartbeat(orphan._trial_id)  # as the tuner does, then its process dies
    Tuner(dataclasses.replace(exp, trials=6), ScriptedPool(), store).run()
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
    exp = _exp(tmp_path, 10)
    store = Store(exp.storage_url)
    Tuner(exp, ScriptedPool(fail_every=3), store).run()
    trials = store.trials(store.studies()[0].id)
    timeouts = [t for t in trials if t.outcome == Outcome.TIMEOUT]
    assert timeouts and all("timeout" in t.reason for t in timeouts)
    constraints = [t for t in trials if t.outcome == Outcome.CONSTRAINT]
    assert all(t.reason and t.time_ms is None for t in constraints)


def test_repeated_configs_reuse_the_measurement(tmp_path):
    exp = dataclasses.replace(_exp(tmp_path, 40), sampler="grid")
    store = Store(exp.storage_url)
    Tuner(exp, ScriptedPool(), store).run()
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
