"""The command line is quiet by default: a progress bar and the result, no INFO lines, no Optuna chatter.

``-v`` adds the INFO lines (tests/test_parallel.py reads them from `-v tune`); ``-vv`` debug and Optuna's own;
``-q`` leaves the result and errors alone.
"""

import shutil
import subprocess
import sys

EXPERIMENT = """
name: quiet
kernels: [rmsnorm_fwd]
shapes: [32768x2048]
dtypes: [bf16]
trials: 6
sampler: grid
workers: 1
"""


def run(*args, cwd=None):
    proc = subprocess.run([sys.executable, "-m", "inductor_tune", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)
    return proc.returncode, proc.stdout, proc.stderr


def _chatter(stderr: str) -> list[str]:
    """Log lines below WARNING (ours and Optuna's) and Optuna's experimental-feature warnings."""
    return [line for line in stderr.splitlines()
            if " INFO " in line or " DEBUG " in line or line.startswith(("[I ", "[D "))
            or "ExperimentalWarning" in line]


def test_tune_shows_a_progress_bar_and_the_result_and_nothing_else(tmp_path):
    shutil.copy("db/quack.sqlite", tmp_path / "recorded.sqlite")
    (tmp_path / "quiet.yaml").write_text(EXPERIMENT)
    code, out, err = run("tune", str(tmp_path / "quiet.yaml"), "--replay", str(tmp_path / "recorded.sqlite"),
                         "--storage", str(tmp_path / "run.sqlite"))
    assert code == 0, err
    assert _chatter(err) == [], err
    assert "tuning:" in err and "6/6" in err  # the one progress bar, to its end
    assert [line for line in err.replace("\r", "\n").splitlines() if line.strip() and "tuning:" not in line] == [], err
    assert "rmsnorm_fwd" in out and "improved [replayed]" in out and "search throughput" in out


def test_q_leaves_the_result_and_nothing_else(tmp_path):
    shutil.copy("db/quack.sqlite", tmp_path / "recorded.sqlite")
    (tmp_path / "quiet.yaml").write_text(EXPERIMENT)
    code, out, err = run("-q", "tune", str(tmp_path / "quiet.yaml"), "--replay", str(tmp_path / "recorded.sqlite"),
                         "--storage", str(tmp_path / "run.sqlite"))
    assert (code, err) == (0, ""), err  # no progress bar
    assert "rmsnorm_fwd" in out and "improved [replayed]" in out and "search throughput" in out
    code, _, err = run("-q", "tune", str(tmp_path / "absent.yaml"))
    assert code == 2 and err.startswith("inductor-tune: error: ") and "absent.yaml" in err


def test_distill_logs_info_only_with_v(tmp_path):
    """A GPU-free command with an INFO line: hidden by default, shown with -v."""
    code, out, err = run("distill", "db/quack.sqlite", "--gpu", "H200", "--out", str(tmp_path / "h.yaml"))
    assert code == 0, err
    assert _chatter(err) == [], err
    assert "keep default" in out  # the result is printed all the same
    code, out_v, err = run("-v", "distill", "db/quack.sqlite", "--gpu", "H200", "--out", str(tmp_path / "h.yaml"))
    assert code == 0, err
    assert any(" INFO inductor_tune.distill: distilled " in line for line in err.splitlines()), err
    assert not any(" DEBUG " in line for line in err.splitlines()), err
    assert out_v == out
