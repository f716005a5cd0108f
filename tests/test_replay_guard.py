"""A recording is never written by reading or replaying it, and a replay says what it rests on.

* Reading a database (``Store(create=False)``, show, distill, a report's Optuna history) changes no
  byte of it, however old its schema: only writers upgrade.
* A replay into its own recording is refused (resolved paths compared), and the no-GPU hint names a
  separate --storage.
* ``--replay`` walks the recorded configs unless a sampler is asked for; a replayed verdict that rests
  on few recorded measurements says so in one WARNING line.
"""

import hashlib
import logging
import os
import re
import shlex
import shutil
import sqlite3

import fast_yaml
import pytest
import sqlalchemy as sa

from inductor_tune import cli, figdata
from inductor_tune.records import Outcome
from inductor_tune.store import SCHEMA_VERSION, Store, same_database

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _sha(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def _schema(path) -> int:
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)  # reads without a -wal/-shm
    try:
        return con.execute("SELECT version FROM it_schema").fetchone()[0]
    finally:
        con.close()


@pytest.fixture
def old(tmp_path):
    """A copy of db/quack.sqlite, written at schema 3 (older than this code's)."""
    path = tmp_path / "quack.sqlite"
    shutil.copy(os.path.join(ROOT, "db", "quack.sqlite"), path)
    assert _schema(path) < SCHEMA_VERSION
    return path


def test_reading_an_old_database_changes_no_byte_of_it(old, tmp_path, capsys):
    digest = _sha(old)
    url = f"sqlite:///{old}"
    store = Store(url, create=False)
    studies = store.studies()
    for study in studies[:3]:
        store.trials(study.id), store.verdict(study.id), store.confirmation(study.id)
    store.crossmeasures()
    store.engine.dispose()
    assert cli.main(["show", str(old), "--wide"]) == 0
    assert cli.main(["distill", str(old), "--gpu", "H200", "--out", str(tmp_path / "h.yaml")]) == 0
    figdata.study_history(url, studies[0].name)
    capsys.readouterr()
    assert _sha(old) == digest and _schema(old) < SCHEMA_VERSION


def test_a_reports_optuna_history_creates_no_tables(tmp_path):
    url = f"sqlite:///{tmp_path / 'only-ours.sqlite'}"
    Store(url).engine.dispose()  # our tables, none of Optuna's
    tables = set(sa.inspect(sa.create_engine(url)).get_table_names())
    with pytest.raises(Exception):
        figdata.study_history(url, "no-such-study")
    assert set(sa.inspect(sa.create_engine(url)).get_table_names()) == tables


@pytest.mark.parametrize("storage", ["same", "url", "dotted", "link", "default"])
def test_a_replay_into_its_own_recording_is_refused(old, tmp_path, monkeypatch, capsys, storage):
    monkeypatch.chdir(tmp_path)
    os.makedirs("db")
    shutil.copy(old, "db/quack.sqlite")
    os.symlink(os.path.abspath("db/quack.sqlite"), "link.sqlite")
    shutil.copy(os.path.join(ROOT, "experiments", "quack.yaml"), "quack.yaml")
    digest = _sha("db/quack.sqlite")
    replay, extra = {
        "same": ("db/quack.sqlite", ["--storage", "db/quack.sqlite"]),
        "url": ("db/quack.sqlite", ["--storage", f"sqlite:///{os.path.abspath('db/quack.sqlite')}"]),
        "dotted": ("./db/../db/quack.sqlite", ["--storage", "db/quack.sqlite"]),
        "link": ("link.sqlite", ["--storage", "db/quack.sqlite"]),
        "default": ("db/quack.sqlite", []),  # quack.yaml's own database: db/quack.sqlite
    }[storage]
    assert cli.main(["tune", "quack.yaml", "--replay", replay, *extra]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and "also the storage" in lines[0], lines
    assert _sha("db/quack.sqlite") == digest and _schema("db/quack.sqlite") < SCHEMA_VERSION
    assert sorted(os.listdir("db")) == ["quack.sqlite"]


def test_crossmeasure_replay_into_its_recording_is_refused(old, tmp_path, capsys):
    studies = tmp_path / "studies.sqlite"
    shutil.copy(old, studies)
    digest = _sha(old)
    argv = ["crossmeasure", str(studies), "--replay", str(old), "--storage", str(old), "--no-progress"]
    assert cli.main(argv) == 2
    assert "also the storage" in capsys.readouterr().err
    assert _sha(old) == digest
    # Nor into the database of studies it reads (where the demo used to put them).
    assert cli.main(["crossmeasure", str(studies), "--replay", str(old), "--storage", str(studies)]) == 2
    assert "also read as a database of studies" in capsys.readouterr().err
    assert _sha(studies) == digest


def test_same_database_compares_resolved_places(tmp_path):
    a = tmp_path / "a.sqlite"
    a.write_bytes(b"")
    assert same_database(f"sqlite:///{a}", f"sqlite:///{tmp_path}/x/../a.sqlite")
    assert not same_database(f"sqlite:///{a}", f"sqlite:///{tmp_path}/b.sqlite")
    assert same_database("postgresql+psycopg2://u:p@localhost/db", "postgresql://v@127.0.0.1:5432/db")
    assert not same_database("postgresql://u@localhost/db", "postgresql://u@localhost/other")
    assert not same_database("postgresql://u@host1/db", "postgresql://u@host2/db")


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the no-GPU hint")
def test_the_no_gpu_hint_replays_into_a_separate_database(capsys):
    assert cli.main(["tune", os.path.join(ROOT, "experiments", "smoke.yaml"), "--storage", "sqlite://"]) == 2
    err = capsys.readouterr().err
    hint = re.search(r"`(inductor-tune tune [^`]*--replay[^`]*)`", err).group(1)
    argv = shlex.split(hint)
    replay, storage = argv[argv.index("--replay") + 1], argv[argv.index("--storage") + 1]
    assert not same_database(f"sqlite:///{replay}", f"sqlite:///{storage}")
    assert os.path.isabs(storage) and not storage.startswith(os.path.join(ROOT, "db"))


EXPERIMENT = {"kernels": ["rmsnorm_fwd"], "shapes": ["32768x4096"], "dtypes": ["bf16"], "trials": 20, "rounds": 2,
              "sampler": "tpe", "workers": 1, "warm_start": 0}


def _replayed_study(storage):
    store = Store(f"sqlite:///{storage}", create=False)
    (study,) = store.studies()
    return study, store.trials(study.id)


def test_a_replay_walks_the_recorded_configs_unless_a_sampler_is_asked_for(old, tmp_path, caplog):
    """The experiment file says tpe; the replay still walks the recording unless --sampler says so."""
    exp = tmp_path / "one.yaml"
    exp.write_text(fast_yaml.safe_dump(EXPERIMENT))
    digest = _sha(old)
    base = ["tune", str(exp), "--replay", str(old), "--no-progress"]
    caplog.set_level(logging.WARNING, logger="inductor_tune")

    assert cli.main([*base, "--storage", str(tmp_path / "grid.sqlite")]) == 0
    study, trials = _replayed_study(tmp_path / "grid.sqlite")
    assert study.sampler == "grid" and study.replayed
    assert not [t for t in trials if t.reason.startswith("NotRecorded")]
    assert sum(t.outcome == Outcome.OK for t in trials) >= 10
    assert "rests on" not in caplog.text

    caplog.clear()
    assert cli.main([*base, "--sampler", "tpe", "--storage", str(tmp_path / "tpe.sqlite")]) == 0
    study, trials = _replayed_study(tmp_path / "tpe.sqlite")
    assert study.sampler == "tpe"
    missing = [t for t in trials if t.reason.startswith("NotRecorded")]
    ok = sum(t.outcome == Outcome.OK for t in trials)
    assert missing and ok < 10  # what a roaming sampler gets from a 20-trial recording
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "rests on" in r.getMessage()]
    assert len(warnings) == 1 and "\n" not in warnings[0].getMessage()
    assert f"rests on {ok} recorded measurement(s)" in warnings[0].getMessage()
    measured = [t for t in trials if t.outcome != Outcome.CONSTRAINT]
    assert f"{len(missing)} of {len(measured)} trials" in warnings[0].getMessage()
    assert _sha(old) == digest


def test_a_worker_that_cannot_start_says_why(tmp_path):
    from inductor_tune.workers import BackendSpec, WorkerPool, WorkerStartError

    bad = tmp_path / "empty.sqlite"
    Store(f"sqlite:///{bad}").engine.dispose()
    with pytest.raises(WorkerStartError, match="no recorded studies to replay"):
        with WorkerPool(0, 1, 30, lock_dir=str(tmp_path), backend=BackendSpec("replay", f"sqlite:///{bad}")):
            pass
