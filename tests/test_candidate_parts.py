"""experiments/device/candidate_parts.sh: the command each part runs on the device (CPU, with a stand-in python3)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

DEVICE = Path(__file__).resolve().parents[1] / "experiments" / "device"

pytestmark = pytest.mark.skipif(not shutil.which("timeout"), reason="needs coreutils' timeout")


def _run(tmp_path, **env):
    """candidate_parts.sh run in a tree of its own, every python3 call written to calls.txt instead of run."""
    work, out, bin_dir = tmp_path / "work", tmp_path / "out", tmp_path / "bin"
    (work / "experiments" / "device").mkdir(parents=True)
    (work / "experiments" / "heldout").mkdir()
    for name in ("candidate_parts.sh", "steps.sh"):
        shutil.copy(DEVICE / name, work / "experiments" / "device" / name)
    (work / "experiments" / "heldout" / "set69-draw.json").write_text("{}")
    (work / "experiments" / "heldout" / "column-s78-draw.json").write_text("{}")
    out.mkdir()
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "python3"
    fake.write_text(f"#!/bin/sh\necho \"$*\" >> {tmp_path / 'calls.txt'}\n")
    fake.chmod(0o755)
    done = subprocess.run(["bash", "experiments/device/candidate_parts.sh", "cand.yaml", "69", "78"], cwd=work,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", "OUT": str(out), "BUDGET": "100",
                               "STEPS_MARK_DIR": str(tmp_path), **env}, capture_output=True, text=True, timeout=120)
    calls = (tmp_path / "calls.txt").read_text().splitlines() if (tmp_path / "calls.txt").exists() else []
    return done, [c for c in calls if c.startswith("-m inductor_tune")]


def test_the_gate_part_scores_the_set_once_into_its_own_database(tmp_path):
    done, calls = _run(tmp_path, PART="gate")
    assert done.returncode == 0, done.stderr
    assert calls == ["-m inductor_tune validate cand.yaml --no-progress --draw experiments/heldout/set69-draw.json "
                     "--rounds 3 --storage sqlite:///db/heldout69.sqlite"]


def test_a_named_draw_gets_a_database_named_after_it(tmp_path):
    done, calls = _run(tmp_path, PART="gate", DRAW="experiments/heldout/column-s78-draw.json")
    assert done.returncode == 0, done.stderr
    assert calls == ["-m inductor_tune validate cand.yaml --no-progress "
                     "--draw experiments/heldout/column-s78-draw.json "
                     "--rounds 3 --storage sqlite:///db/heldout-column-s78.sqlite"]


@pytest.mark.parametrize("env, message", [
    ({"PART": "gate", "DRAW": "experiments/heldout/nope-draw.json"},
     "candidate_parts.sh: no draw at experiments/heldout/nope-draw.json"),
    ({"PART": "bogus"}, "candidate_parts.sh: PART=tests, tests-c, tests-d, model, gate or SAMPLES=1"),
])
def test_a_missing_draw_or_an_unknown_part_stops_before_the_device_runs_anything(tmp_path, env, message):
    done, calls = _run(tmp_path, **env)
    assert done.returncode == 2 and done.stderr.strip() == message and calls == []
    assert not os.path.exists(tmp_path / "out" / "log")


@pytest.mark.parametrize("gpu, runs", [("NVIDIA H100 80GB HBM3", False), ("NVIDIA H200", True)])
def test_nothing_runs_on_a_gpu_the_candidate_is_not_for(tmp_path, gpu, runs):
    (tmp_path / "work" / "cand.yaml").parent.mkdir(parents=True)
    (tmp_path / "work" / "cand.yaml").write_text("format: inductor-tune-heuristics/1\ngpu:\n  name: NVIDIA H200\n"
                                                  "  sm_count: 132\nrules: []\n")
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir(exist_ok=True)
    smi.write_text(f"#!/bin/sh\necho '{gpu}'\n")
    smi.chmod(0o755)
    done, calls = _run(tmp_path, PART="gate")
    if runs:
        assert done.returncode == 0 and len(calls) == 1, done.stderr
    else:
        assert done.returncode == 2 and calls == [] and not os.path.exists(tmp_path / "out" / "log")
        assert done.stderr.strip() == ("candidate_parts.sh: cand.yaml is for NVIDIA H200; GPU 0 is NVIDIA H100 80GB "
                                       "HBM3: nothing run")
