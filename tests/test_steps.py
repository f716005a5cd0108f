"""experiments/device/steps.sh brings back what a step committed even where the budget killed the step: the stores
write SQLite in WAL mode, and stop 56 lost a cut gate, span round and model run whose commits sat in DB.sqlite-wal.
It brings back after each step, for every run of steps.sh in the call, because the device kills a call at its own
limit with nothing left to run (stop 66)."""

import os
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

STEPS = Path(__file__).resolve().parents[1] / "experiments" / "device" / "steps.sh"

pytestmark = pytest.mark.skipif(not shutil.which("timeout"), reason="needs coreutils' timeout")

# Commits one row in WAL mode with the auto-checkpoint off, then dies as `timeout` kills a step: no close, no checkpoint.
KILLED_STEP = (
    "python3 -c \"import os, signal, sqlite3; c = sqlite3.connect('db/cut.sqlite'); "
    "c.execute('PRAGMA journal_mode=WAL'); c.execute('PRAGMA wal_autocheckpoint=0'); "
    "c.execute('CREATE TABLE t (x)'); c.execute('INSERT INTO t VALUES (1)'); c.commit(); "
    "os.kill(os.getpid(), signal.SIGKILL)\""
)


def _run(tmp_path, *steps, budget=100):
    work, out = tmp_path / "work", tmp_path / "out"
    (work / "db").mkdir(parents=True)
    out.mkdir(exist_ok=True)  # a test may have put a mark at its inode first
    (work / "db" / "untouched.sqlite").write_bytes(b"")
    done = subprocess.run(["bash", str(STEPS), *steps], cwd=work, env=_env(tmp_path, out, budget),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return work, out


def _env(tmp_path, out, budget=100) -> dict:
    # The marks in tmp_path: in /tmp a mark outlives the run, and another run's folder may reuse its inode.
    return {"PATH": "/usr/bin:/bin:" + _python_dir(), "OUT": str(out), "BUDGET": str(budget),
            "STEPS_MARK_DIR": str(tmp_path)}


def _python_dir():
    return str(Path(shutil.which("python3")).parent)


def _rows(path):
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT x FROM t").fetchall()


def test_a_killed_steps_commits_come_back(tmp_path):
    work, out = _run(tmp_path, KILLED_STEP)
    assert (work / "db" / "cut.sqlite-wal").exists() is False  # checkpointed into the database itself
    assert _rows(out / "db" / "cut.sqlite") == [(1,)]
    assert not (out / "db" / "untouched.sqlite").exists()  # only what a step changed comes back
    assert "rc=137" in (out / "log").read_text()


def test_a_mark_left_by_an_earlier_call_whose_folder_had_the_same_inode_is_not_used(tmp_path):
    # CI at stop 73: an earlier run's mark for the inode that $OUT reused was older than the untouched database, which
    # then came back as if a step had changed it.
    out = tmp_path / "out"
    out.mkdir()
    stale = tmp_path / f"steps-sh.mark.{out.stat().st_ino}"
    stale.touch()
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    _, out = _run(tmp_path, "touch db/fresh.sqlite")
    assert sorted(p.name for p in (out / "db").iterdir()) == ["fresh.sqlite"]


def test_a_step_left_without_budget_is_skipped(tmp_path):
    # 45 s of budget: the first step starts (the log's header imports torch first, well under 15 s), and after its 16 s
    # less is left than the 30 s a step needs.
    _, out = _run(tmp_path, "sleep 16", "touch db/late.sqlite", budget=45)
    log = (out / "log").read_text()
    assert "== sleep 16 (" in log and "== rc=0 in" in log
    assert "== skipped" in log and "touch db/late.sqlite" in log
    assert not (out / "db" / "late.sqlite").exists()


def test_a_finished_steps_databases_come_back_when_the_call_itself_is_killed(tmp_path):
    # The device tool kills a call at its own limit with every process in it (stop 66 lost a model run so): what a
    # finished step wrote must already be under $OUT by then.
    work, out = tmp_path / "work", tmp_path / "out"
    (work / "db").mkdir(parents=True)
    out.mkdir()
    first = ("python3 -c \"import sqlite3; c = sqlite3.connect('db/first.sqlite'); c.execute('CREATE TABLE t (x)'); "
             "c.execute('INSERT INTO t VALUES (1)'); c.commit()\"")
    call = subprocess.Popen(["bash", str(STEPS), first, "sleep 60"], cwd=work, start_new_session=True,
                            env=_env(tmp_path, out))
    try:
        deadline = time.monotonic() + 60
        while "== sleep 60" not in ((out / "log").read_text() if (out / "log").exists() else ""):
            assert time.monotonic() < deadline, "the second step never started"
            time.sleep(0.2)
    finally:
        os.killpg(call.pid, signal.SIGKILL)
        call.wait()
    assert _rows(out / "db" / "first.sqlite") == [(1,)]


def test_a_second_run_in_the_same_call_keeps_what_the_first_brought_back(tmp_path):
    # s66-h200.sh's PART=b runs the gate, then bestfound.sh: both runs' databases must come back from the one call.
    work, out = tmp_path / "work", tmp_path / "out"
    (work / "db").mkdir(parents=True)
    out.mkdir()
    env = _env(tmp_path, out)
    for name in ("gate", "studies"):
        subprocess.run(["bash", str(STEPS), f"touch db/{name}.sqlite"], cwd=work, env=env, check=True, timeout=120)
    assert sorted(p.name for p in (out / "db").iterdir()) == ["gate.sqlite", "studies.sqlite"]


def test_a_call_that_sends_its_output_to_the_log_still_gets_its_databases(tmp_path):
    # Stop 68's calls ran `bash ...steps.sh... > $OUT/log`: the log existed before the first run, which then made no
    # mark, and no database came back.
    work, out = tmp_path / "work", tmp_path / "out"
    (work / "db").mkdir(parents=True)
    out.mkdir()
    (out / "log").write_text("the caller's own output\n")
    Path("/tmp/steps-sh.mark").unlink(missing_ok=True)  # the mark of stop 67's steps.sh, on a fresh machine absent
    env = _env(tmp_path, out)
    subprocess.run(["bash", str(STEPS), "touch db/fill.sqlite"], cwd=work, env=env, check=True, timeout=120)
    assert [p.name for p in (out / "db").iterdir()] == ["fill.sqlite"]


def test_a_database_over_the_size_a_call_returns_comes_back_packed(tmp_path):
    # A call returns files of at most 16 MiB: stop 90's first crossmeasure database (544 s of device time) was larger,
    # did not come back, and the device's copy was gone by the next call.
    work, out = _run(tmp_path, "truncate -s 17M db/big.sqlite && touch db/small.sqlite")
    assert not (out / "db").exists()
    listing = subprocess.run(["tar", "tJf", str(out / "db.tar.xz")], capture_output=True, text=True, check=True)
    assert sorted(listing.stdout.split()) == ["db/big.sqlite", "db/small.sqlite"]
    assert (out / "db.tar.xz").stat().st_size < 2**20
