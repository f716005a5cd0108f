"""Several `tune` processes on one study set share it: nothing lost, nothing measured twice.

Runs against SQLite and, where INDUCTOR_TUNE_TEST_PG names a PostgreSQL server (CI starts one),
against PostgreSQL; measurements are replayed from the recorded H200 trials.
"""

import json
import shutil
import subprocess
import sys

import optuna
import pytest

from inductor_tune.records import Outcome
from inductor_tune.store import Store

EXPERIMENT = """
name: paralleltest
kernels: [rmsnorm_fwd, softmax_fwd]
shapes: [32768x256, 32768x512, 32768x1024, 32768x2048]
dtypes: [bf16]
trials: 12
sampler: grid
workers: 2
heartbeat: 1
stale_after: 30
"""
def test_processes_share_a_study_set_without_loss_or_duplicates(storage, tmp_path):
    shutil.copy("db/quack.sqlite", tmp_path / "recorded.sqlite")
    (tmp_path / "parallel.yaml").write_text(EXPERIMENT)
    Store(storage)  # create the schema once, as the first process would
    cmd = [sys.executable, "-m", "inductor_tune", "-v", "tune", str(tmp_path / "parallel.yaml"), "--replay",
           str(tmp_path / "recorded.sqlite"), "--storage", storage, "--no-progress"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    logs = [p.communicate(timeout=900)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], logs
    ran = [sum("study rmsnorm" in line or "study softmax" in line for line in log.splitlines()) for log in logs]
    assert sum(ran) == 8 and sum(n > 0 for n in ran) >= 2, ran  # the set was shared, each study run once

    store = Store(storage, create=False)
    studies = store.studies()
    assert len(studies) == 8
    for study in studies:
        records = store.trials(study.id)
        numbers = [r.trial_number for r in records]
        assert len(numbers) == len(set(numbers))
        assert len([r for r in records if r.outcome != Outcome.CONSTRAINT]) == 12
        assert sum(r.inductor_default for r in records) == 1
        keys = [json.dumps(json.loads(r.config_json), sort_keys=True) for r in records]
        assert len(keys) == len(set(keys))
        trials = optuna.load_study(study_name=study.name, storage=storage).get_trials(deepcopy=False)
        assert sorted(t.number for t in trials) == sorted(numbers)  # every Optuna trial has its record
        assert all(t.state.is_finished() for t in trials)
        assert store.verdict(study.id) is not None


def test_gpus_option_runs_one_process_per_gpu_on_the_study_set(tmp_path):
    shutil.copy("db/quack.sqlite", tmp_path / "recorded.sqlite")
    (tmp_path / "parallel.yaml").write_text(EXPERIMENT)
    storage = f"sqlite:///{tmp_path / 'gpus.sqlite'}"
    proc = subprocess.run(
        [sys.executable, "-m", "inductor_tune", "-v", "tune", str(tmp_path / "parallel.yaml"), "--replay",
         str(tmp_path / "recorded.sqlite"), "--storage", storage, "--gpus", "0,1", "--no-progress"],
        capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("search throughput") == 2  # two tune processes reported
    store = Store(storage, create=False)
    assert len(store.studies()) == 8
    for study in store.studies():
        records = store.trials(study.id)
        assert len([r for r in records if r.outcome != Outcome.CONSTRAINT]) == 12
        assert len({r.trial_number for r in records}) == len(records)
