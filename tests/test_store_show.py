import hashlib
import shutil
import sqlite3

import pytest

from inductor_tune.gpu import GpuIdentity
from inductor_tune.records import Measurement, Outcome
from inductor_tune.show import render, study_rows
from inductor_tune.store import SCHEMA_VERSION, Store, StoreError

RECORDED = "db/quack.sqlite"  # real trials measured on an H200 (see README)


@pytest.fixture
def recorded(tmp_path):
    path = tmp_path / "quack.sqlite"
    shutil.copy(RECORDED, path)
    return path


def _digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_schema_is_created_on_a_real_sqlite_file(tmp_path):
    url = f"sqlite:///{tmp_path}/new.sqlite"
    store = Store(url)
    tables = {r[0] for r in sqlite3.connect(tmp_path / "new.sqlite").execute("select name from sqlite_master")}
    assert {"it_schema", "it_gpu", "it_study", "it_trial", "it_verdict"} <= tables
    gpu_id = store.upsert_gpu(_fingerprint(), 4000.0, key="G/sm90x132/torch/triton")
    study = store.get_or_create_study("k/1x2/bf16@G", gpu_id=gpu_id, kernel="rmsnorm_fwd", rows=1, cols=2,
                                      dtype="bf16", experiment="t", sampler="tpe", seed=0)
    again = store.get_or_create_study("k/1x2/bf16@G", gpu_id=gpu_id, kernel="rmsnorm_fwd", rows=1, cols=2,
                                      dtype="bf16", experiment="t", sampler="tpe", seed=0)
    assert again.id == study.id
    m = Measurement(Outcome.OK, time_ms=2.0, gbps=2000.0, ceiling_gbps=4000.0)
    rec = store.add_trial(study.id, 0, "{}", False, m, default_ms=3.0)
    assert rec.speedup_vs_default == pytest.approx(1.5) and rec.pct_of_ceiling == pytest.approx(50.0)
    store.add_trial(study.id, 1, "{}", False, Measurement(Outcome.WRONG_RESULT, "error 0.3 exceeds 0.016"), 3.0)
    outcomes = [t.outcome for t in store.trials(study.id)]
    assert outcomes == [Outcome.OK, Outcome.WRONG_RESULT]
    with pytest.raises(StoreError):  # one record per (study, trial number)
        store.add_trial(study.id, 1, "{}", False, m, 3.0)


def _fingerprint():
    return GpuIdentity(name="G", sm_count=132, compute_capability="9.0", memory_bytes=1, l2_bytes=1, cuda_driver="x",
                       cuda_runtime="13.0", torch="2.11", triton="3.6")


def test_newer_schema_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "future.sqlite"
    Store(f"sqlite:///{path}")
    con = sqlite3.connect(path)
    con.execute("update it_schema set version = ?", (SCHEMA_VERSION + 1,))
    con.commit()
    con.close()
    before = _digest(path)
    with pytest.raises(StoreError, match="newer inductor_tune"):
        Store(f"sqlite:///{path}")
    assert _digest(path) == before


def test_non_database_files_are_not_touched(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("my notes\n")
    with pytest.raises(StoreError, match="not an SQLite database"):
        Store(f"sqlite:///{path}")
    assert path.read_text() == "my notes\n"
    with pytest.raises(StoreError, match="missing or not writable"):
        Store(f"sqlite:///{tmp_path}/no/such/dir/x.sqlite")
    with pytest.raises(StoreError, match="no database at"):
        Store(f"sqlite:///{tmp_path}/absent.sqlite", create=False)
    with pytest.raises(StoreError, match="not an SQLAlchemy database URL"):
        Store("::::")


def test_show_rows_from_recorded_trials(recorded):
    before = _digest(recorded)
    store = Store(f"sqlite:///{recorded}", create=False)
    rows = study_rows(store)
    assert len(rows) == 55
    assert {r.kernel for r in rows} == {"rmsnorm_fwd", "rmsnorm_bwd", "layernorm_fwd", "layernorm_bwd", "softmax_fwd"}
    assert all(r.gpu == "NVIDIA H200" for r in rows)
    verdicts = [r for r in rows if r.speedup_low is not None]
    assert len(verdicts) >= 50
    for r in verdicts:
        assert r.speedup_low <= r.speedup <= r.speedup_high
        # "improved" is only claimed when every interleaved round beat the default.
        assert (r.verdict == "improved") == (r.best_gbps > r.default_gbps)
    improved = [r for r in verdicts if r.verdict == "improved"]
    assert improved and all(r.speedup_low > 1.0 for r in improved)
    text = render(rows, wide=True)
    assert "rmsnorm_fwd" in text and "32768x4096" in text and "persistent" in text
    assert _digest(recorded) == before


def test_show_filters(recorded):
    store = Store(f"sqlite:///{recorded}", create=False)
    assert {r.kernel for r in study_rows(store, kernel="softmax_fwd")} == {"softmax_fwd"}
    assert study_rows(store, gpu="H100") == []
    assert len(study_rows(store, gpu="h200")) == 55


def test_finished_needs_a_verdict_covering_every_successful_trial(recorded):
    """A run stopped after more trials but before its next verdict is not finished: resuming it must
    re-run the verdict rather than report finalists ranked among fewer trials."""
    store = Store(f"sqlite:///{recorded}")
    study = next(s for s in store.studies() if s.name.startswith("rmsnorm_fwd/32768x4096/"))
    trials = store.trials(study.id)
    budget = sum(t.outcome != Outcome.CONSTRAINT for t in trials)
    ok = sum(t.outcome == Outcome.OK for t in trials)
    assert store.verdict(study.id).trials_measured == ok and ok < len(trials)
    assert store.finished(study.name, budget) and not store.finished(study.name, budget + 1)
    store.set_verdict(study.id, trials_measured=ok - 1)
    assert not store.finished(study.name, budget)
    store.set_verdict(study.id, trials_measured=ok)
    assert store.finished(study.name, budget)
    assert not store.finished("no/such/study", 1)
