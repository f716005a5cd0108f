"""kill -9 of `inductor-tune tune` at random points, then the same command again: nothing lost.

The kills land at states, not times: after a random number of newly stored trials, however slowly a
loaded machine gets there (a fixed sleep killed a 2-core machine's first run before its database existed).
"""

import contextlib
import json
import os
import random
import shutil
import signal
import sqlite3
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


def _stored_trials(path) -> int | None:
    """Trial records in the run's database so far; None while it cannot be read (not created yet,
    its tables not yet made, or a writer holding it)."""
    if not path.exists():
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)) as db:
            return db.execute("select count(*) from it_trial").fetchone()[0]
    except sqlite3.Error:
        return None


def _wait_for_trials(proc, path, at_least: int, timeout_s: float = 600) -> int:
    """Block until the run has stored ``at_least`` trial records (polling, no fixed sleep)."""
    deadline = time.monotonic() + timeout_s
    while True:
        count = _stored_trials(path)
        if count is not None and count >= at_least:
            return count
        assert proc.poll() is None, f"the run exited ({proc.returncode}) with {count} trials stored, before {at_least}"
        assert time.monotonic() < deadline, f"{count} trials stored after {timeout_s} s, waiting for {at_least}"
        time.sleep(0.02)


def test_kill_9_then_resume_loses_and_duplicates_nothing(tmp_path):
    shutil.copy("db/quack.sqlite", tmp_path / "recorded.sqlite")
    (tmp_path / "killtest.yaml").write_text(EXPERIMENT)
    rng = random.Random(int(os.environ.get("KILL_SEED", "7")))
    url = f"sqlite:///{tmp_path / 'run.sqlite'}"
    stored = 0
    for attempt in range(2):
        proc = _tune(tmp_path)
        # 10 studies of 15 trials (150 records or more): both kills land within the first 90 or so.
        stored = _wait_for_trials(proc, tmp_path / "run.sqlite", stored + rng.randint(1, 40))
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
