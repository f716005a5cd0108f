"""kill -9 of `inductor-tune tune` at random points, then the same command again: nothing lost, and
Optuna's ledger says what it_trial says.

The kills land at states, not times: after a random number of newly stored trials, however slowly a
loaded machine gets there (a fixed sleep killed a 2-core machine's first run before its database existed).
"""

import contextlib
import json
import logging
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import optuna
import pytest

from fake_pools import StudyPool, study_experiment

from inductor_tune.records import Outcome
from inductor_tune.search import Tuner
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


STATES = {Outcome.OK: optuna.trial.TrialState.COMPLETE, Outcome.CONSTRAINT: optuna.trial.TrialState.PRUNED}


def _assert_agrees(trial, record) -> None:
    """The Optuna trial is finished as its it_trial record says, as the tuner tells an unkilled one."""
    state = STATES.get(record.outcome, optuna.trial.TrialState.FAIL)
    assert (trial.state, trial.user_attrs.get("outcome")) == (state, record.outcome.value), \
        f"trial {trial.number} is {trial.state.name} in Optuna but {record.outcome.value} in it_trial"
    assert trial.value == (record.time_ms if state == optuna.trial.TrialState.COMPLETE else None), trial.number


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
        recorded = {r.trial_number: r for r in records}
        for t in trials:
            if t.number in recorded:  # however the kill fell, Optuna says what the record says
                _assert_agrees(t, recorded[t.number])
                continue
            # Only trials lost with a killed process lack a record: failed, and queued again.
            assert t.state == optuna.trial.TrialState.FAIL, t
            assert any(r.user_attrs.get("retry_of") == t.number for r in trials) or not t.params
        assert store.verdict(study.id) is not None


class _Killed(BaseException):
    """kill -9 at a chosen point: nothing after it runs, not even an ``except Exception``."""


class _KilledAfterStoring(Store):
    """Dies right after storing the first trial record that ``when`` picks: the window between a
    trial's it_trial record and its Optuna trial's finish, hit on purpose rather than by chance."""

    def __init__(self, url, when):
        super().__init__(url)
        self.when = when

    def add_trial(self, *args, **kwargs):
        record = super().add_trial(*args, **kwargs)
        if self.when(record):
            raise _Killed(record.trial_number)
        return record


class _DiesCollecting(StudyPool):
    """Dies waiting for its first results: Inductor's default in flight, nothing stored yet."""

    def collect(self, timeout=0.5):
        raise _Killed()


# The kill windows, one per run: each kind of record, written by each path that stores one (the
# default's first phase, a dispatched trial with others in flight, a trial finished as it is asked).
KILLS = {
    "the default": lambda r: r.inductor_default,
    "an illegal config": lambda r: r.outcome == Outcome.CONSTRAINT,
    "a measurement": lambda r: r.outcome == Outcome.OK and not r.inductor_default and "reused" not in r.reason,
    "a reused measurement": lambda r: "reused" in r.reason,
    "a failure": lambda r: r.outcome == Outcome.TIMEOUT,
}
LOST = re.compile(r"trial (\d+) of \S+ lost its process (before|after) its record was stored; (.*)")


def test_a_kill_after_the_record_is_stored_leaves_optuna_agreeing_with_it(tmp_path, caplog):
    """Killed between a trial's record and its Optuna finish, the next run finishes it as recorded (it
    was failed as lost, and logged as queued again though nothing was), and every lost trial's line
    says what became of it."""
    exp = study_experiment(tmp_path, 24)
    caplog.set_level(logging.WARNING)
    with pytest.raises(_Killed):
        Tuner(exp, _DiesCollecting(), Store(exp.storage_url)).run()
    killed = {0: "nothing (the default in flight)"}
    for what, when in KILLS.items():
        with pytest.raises(_Killed) as kill:
            Tuner(exp, StudyPool(fail_every=5), _KilledAfterStoring(exp.storage_url, when)).run()
        killed[kill.value.args[0]] = what
    store = Store(exp.storage_url)
    Tuner(exp, StudyPool(fail_every=5), store).run()

    (study,) = store.studies()
    records = {r.trial_number: r for r in store.trials(study.id)}
    trials = {t.number: t for t in optuna.load_study(study_name=study.name, storage=exp.storage_url).trials}
    retried = {t.user_attrs.get("retry_of") for t in trials.values()}
    for t in trials.values():
        record = records.get(t.number)
        if record is None:
            assert t.state == optuna.trial.TrialState.FAIL and t.user_attrs.get("lost_process"), t
            continue
        _assert_agrees(t, record)
    assert sum(r.inductor_default for r in records.values()) == 1  # the default, recorded, is not measured again

    said = {}
    for message in caplog.messages:
        if match := LOST.match(message):
            number, side, what = int(match[1]), match[2], match[3]
            said[number] = message
            assert (side == "after") == (number in records), message
            if side == "after":
                assert what.startswith(f"finished {trials[number].state.name} "), message
            elif what == "failed and queued again":
                assert number in retried, message
            elif what == "failed; Inductor's default is measured again in a new trial":
                assert any(r.inductor_default and r.trial_number > number for r in records.values()), message
            else:
                assert number not in retried, message
    for number, what in killed.items():
        assert number in said, f"nothing logged for trial {number}, killed after storing {what}"
