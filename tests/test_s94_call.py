"""experiments/device/calls/s94.sh: which parts of the H100 candidate's checks a call runs within its budget, and what
it leaves for the next call (CPU, with stand-ins for python3 and nvidia-smi)."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEVICE = ROOT / "experiments" / "device"

pytestmark = pytest.mark.skipif(not shutil.which("timeout"), reason="needs coreutils' timeout")


def _tree(tmp_path):
    work = tmp_path / "work"
    (work / "experiments" / "device" / "calls").mkdir(parents=True)
    (work / "experiments" / "candidates").mkdir(parents=True)
    for name in ("steps.sh", "candidate_parts.sh", "bestfound.sh"):
        shutil.copy(DEVICE / name, work / "experiments" / "device" / name)
    for name in ("s94.sh", "h200-after-s84.sh"):
        shutil.copy(DEVICE / "calls" / name, work / "experiments" / "device" / "calls" / name)
    (work / "experiments" / "candidates" / "h100-s92.yaml").write_text("gpu:\n  name: NVIDIA H100 80GB HBM3\n")
    (work / "heuristics").mkdir()
    return work


def _call(tmp_path, work, gpu_name, budget, part=None, python_rc=0):
    """One call of s94.sh in ``work``: python3 records its module runs (``-c`` prints a digest) and exits
    ``python_rc``; nvidia-smi names ``gpu_name``. Returns the exit status, its stderr and the module runs."""
    out, bin_dir, calls = tmp_path / "out", tmp_path / "bin", tmp_path / "calls.txt"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    bin_dir.mkdir(exist_ok=True)
    calls.unlink(missing_ok=True)
    (bin_dir / "python3").write_text(
        f"#!/bin/sh\n[ \"$1\" = -c ] && {{ echo 7fcb9a96; exit 0; }}\necho \"$*\" >> {calls}\nexit {python_rc}\n")
    (bin_dir / "nvidia-smi").write_text(f"#!/bin/sh\necho '{gpu_name}'\n")
    for tool in ("python3", "nvidia-smi"):
        (bin_dir / tool).chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "OUT": str(out), "BUDGET": str(budget),
           "STEPS_MARK_DIR": str(tmp_path)}
    if part:
        env["PART"] = part
    done = subprocess.run(["bash", "experiments/device/calls/s94.sh"], cwd=work, env=env, capture_output=True,
                          text=True, timeout=120)
    runs = calls.read_text().splitlines() if calls.exists() else []
    return done.returncode, done.stderr, [" ".join(run.split()[:3]) for run in runs]


def test_a_call_runs_the_parts_whose_time_fits_and_the_next_one_on_the_warm_machine_the_rest(tmp_path):
    work = _tree(tmp_path)
    rc, err, runs = _call(tmp_path, work, "NVIDIA H100 80GB HBM3", 300)
    assert rc == 0, err
    # models (420 s) and tests-d (310 s) do not fit in 300 s; tests-c and samples do
    assert runs == ["-m pytest -v", "-m inductor_tune tune", "-m inductor_tune tune",
                    "-m inductor_tune validate", "-m inductor_tune validate"]
    assert "models left for the next call" in err and "tests-d left for the next call" in err
    assert (work / "heuristics" / "h100.yaml").read_text() == (
        work / "experiments" / "candidates" / "h100-s92.yaml").read_text()
    rc, err, runs = _call(tmp_path, work, "NVIDIA H100 80GB HBM3", 575)
    assert rc == 0, err
    assert runs == ["-m inductor_tune validate", "-m inductor_tune validate", "-m pytest -v"]
    assert "tests-c finished in an earlier call" in err and "samples finished in an earlier call" in err


def test_a_part_whose_step_failed_is_not_marked_finished(tmp_path):
    work = _tree(tmp_path)
    rc, _, runs = _call(tmp_path, work, "NVIDIA H100 80GB HBM3", 575, part="samples", python_rc=1)
    assert rc == 1 and runs[:2] == ["-m inductor_tune tune", "-m inductor_tune tune"]
    rc, _, runs = _call(tmp_path, work, "NVIDIA H100 80GB HBM3", 575, part="samples")
    assert rc == 0 and runs[0] == "-m inductor_tune tune"


def test_an_h200_runs_its_own_items_and_other_gpus_or_parts_are_refused(tmp_path):
    work = _tree(tmp_path)
    _, _, runs = _call(tmp_path, work, "NVIDIA H200", 575)
    h200_calls = (tmp_path / "calls.txt").read_text().splitlines()
    assert "--suite experiments/retime94/problems.yaml" in h200_calls[0] and "heuristics/h200.yaml" in h200_calls[0]
    assert "probe-sweep-h200.yaml" in h200_calls[1] and "h100-s92" not in "".join(h200_calls)
    rc, err, runs = _call(tmp_path, work, "NVIDIA A100-SXM4-80GB", 575)
    assert rc == 2 and runs == [] and "no item for GPU 0" in err
    rc, err, runs = _call(tmp_path, work, "NVIDIA H100 80GB HBM3", 575, part="models,score")
    assert rc == 2 and runs == [] and "PART is a comma list" in err
