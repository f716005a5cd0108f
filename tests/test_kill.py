"""kill -9 of `inductor-tune tune` at random points, then the same command again: nothing lost."""

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import optuna

from inductor_tune.records import Outcome
from inductor_tune.store import Store

EXPERIMENT = """
name: killtest
kernels: [rmsnorm_fwd, layernorm_fwd]
shapes: [32768x256, 32768x512, 32768x1024, 32768x2048, 32768x4096]
dtypes: [bf16]
trials: 15
sampler: grid
workers: 3
heartbeat: 1
"""


def _tune(tmp_path):
    return subprocess.Popen(
        [sys.executable, "-m", "inductor_tune", "tune", str(tmp_path / "killtest.yaml"), "--replay",
         str(tmp_path / "recorded.sqlite"), "--storage", str(tmp_path / "run.sqlite"), "--no-progress"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )


def test_kill_9_then_resume_loses_and_duplicates_nothing(tmp_path):
    shutil.copy("db/quack.sqlite", tmp_path / "recorded.sqlite")
    (tmp_path / "killtest.yaml").write_text(EXPERIMENT)
    rng = random.Random(int(os.environ.get("KILL_SEED", "7")))
    url = f"sqlite:///{tmp_path / 'run.sqlite'}"
    for attempt in range(2):
        proc = _tune(tmp_path)
        time.sleep(rng.uniform(9, 15))
        os.killpg(proc.pid, signal.SIGKILL)  # the tuner and its workers, as a lost host would
        proc.wait()
        if attempt == 0:  # the kill must have landed mid-run for the test to mean anything
            store = Store(url, create=False)
            assert sum(store.verdict(s.id) is not None for s in store.studies()) < 10
    proc = _tune(tmp_path)
    assert proc.wait(timeout=600) == 0

    store = Store(url, create=False)
    studies = store.studies()
    assert len(studies) == 10
    for study in studies:
        records = store.trials(study.id)
        numbers = [r.trial_number for r in records]
        assert len(numbers) == len(set(numbers)), "a trial was recorded twice"
        assert len([r for r in records if r.outcome != Outcome.CONSTRAINT]) == 15
        assert sum(r.inductor_default for r in records) == 1
        keys = [json.dumps(json.loads(r.config_json), sort_keys=True) for r in records if not r.inductor_default]
        assert len(keys) == len(set(keys)), "a grid config was measured twice"
        trials = optuna.load_study(study_name=study.name, storage=url).get_trials(deepcopy=False)
        assert not [t for t in trials if t.state == optuna.trial.TrialState.RUNNING]
        recorded = set(numbers)
        for t in trials:
            if t.number in recorded:
                continue
            # Only trials lost with a killed process lack a record: failed, and queued again.
            assert t.state == optuna.trial.TrialState.FAIL, t
            assert any(r.user_attrs.get("retry_of") == t.number for r in trials) or not t.params
        assert store.verdict(study.id) is not None
