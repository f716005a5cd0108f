"""experiments/device/fill_span_refit.sh: which GPU a cycle runs on and what its fill measures (CPU, with stand-ins
for python3 and nvidia-smi)."""

import shutil
import subprocess
from pathlib import Path

import pytest

DEVICE = Path(__file__).resolve().parents[1] / "experiments" / "device"

pytestmark = pytest.mark.skipif(not shutil.which("timeout"), reason="needs coreutils' timeout")


def _run(tmp_path, gpu_name, stop, args, **env):
    """The script in a tree of its own: python3 records its arguments and fails (so no step's marker is made and
    every later step stops at its guard); nvidia-smi names ``gpu_name``."""
    work, out, bin_dir = tmp_path / "work", tmp_path / "out", tmp_path / "bin"
    for sub in ("experiments/device", "experiments/heldout", "experiments/fits", "experiments/candidates"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    for name in ("fill_span_refit.sh", "steps.sh"):
        shutil.copy(DEVICE / name, work / "experiments" / "device" / name)
    (work / "experiments" / "heldout" / "set15-draw.json").write_text("{}")
    listed = ["db/a.sqlite", "db/b.sqlite", f"db/fill-of-{stop}.sqlite", f"db/span-of-{stop}.sqlite"]
    for gpu in ("h100", "h200"):
        (work / "experiments" / "fits" / f"{gpu}-s{stop}.txt").write_text("# header\n# header\n" + "\n".join(listed)
                                                                          + "\n")
    out.mkdir()
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(f"#!/bin/sh\necho \"$*\" >> {tmp_path / 'calls.txt'}\nexit 1\n")
    (bin_dir / "nvidia-smi").write_text(f"#!/bin/sh\necho '{gpu_name}'\n")
    for tool in ("python3", "nvidia-smi"):
        (bin_dir / tool).chmod(0o755)
    try:
        done = subprocess.run(["bash", "experiments/device/fill_span_refit.sh", str(stop), *args], cwd=work,
                              env={"PATH": f"{bin_dir}:/usr/bin:/bin", "OUT": str(out), "BUDGET": "100",
                                   "STEPS_MARK_DIR": str(tmp_path), **env}, capture_output=True, text=True,
                              timeout=120)
    finally:  # the script writes the list of its fit without the span round there, as on the device
        for gpu in ("h100", "h200"):
            Path(f"/tmp/{gpu}-s{stop}-prespan.txt").unlink(missing_ok=True)
    calls = (tmp_path / "calls.txt").read_text().splitlines() if (tmp_path / "calls.txt").exists() else []
    return done, [c for c in calls if c.startswith("-m inductor_tune")], out


def test_the_h100_cycle_fills_from_the_h200_candidates_into_h100_databases(tmp_path):
    done, calls, _ = _run(tmp_path, "NVIDIA H100 80GB HBM3", 9201, ["1", "3", "913", "15"], GPU="h100",
                          FILL_ARGS="--fill-share 0.25 --fill-shapes 400")
    assert done.returncode == 0, done.stderr
    assert calls[0] == ("-m inductor_tune crossmeasure db/a.sqlite db/b.sqlite --candidates-from H200 --fill 2 "
                        "--fill-share 0.25 --fill-shapes 400 --max-configs 4 --rounds 3 --no-progress "
                        "--avoid-draw experiments/heldout/set15-draw.json "
                        "--storage db/crossmeasure-h100-s9201-fill1.sqlite")


def test_the_h200_cycle_keeps_its_commands(tmp_path):
    done, calls, _ = _run(tmp_path, "NVIDIA H200", 9202, ["28", "34", "134", "15"])
    assert done.returncode == 0, done.stderr
    assert calls[0] == ("-m inductor_tune crossmeasure db/a.sqlite db/b.sqlite --fill 2 --fill-share 0.25 "
                        "--max-configs 4 --rounds 3 --no-progress --avoid-draw experiments/heldout/set15-draw.json "
                        "--storage db/crossmeasure-s9202-fill28.sqlite")


@pytest.mark.parametrize("gpu_name, env, message", [
    ("NVIDIA H100 80GB HBM3", {}, "the h200 cycle does not run on GPU 0 (NVIDIA H100 80GB HBM3): nothing run"),
    ("NVIDIA H200", {"GPU": "h100"}, "the h100 cycle does not run on GPU 0 (NVIDIA H200): nothing run"),
    ("NVIDIA H100 80GB HBM3", {"GPU": "h100", "MULTI_KERNEL": "2"}, "MULTI_KERNEL is H200-only"),
    ("NVIDIA H100 80GB HBM3", {"GPU": "a100"}, "GPU is h200 or h100, not a100"),
])
def test_a_gpu_the_cycle_is_not_for_runs_and_writes_nothing(tmp_path, gpu_name, env, message):
    done, calls, out = _run(tmp_path, gpu_name, 9203, ["1", "3", "913", "15"], **env)
    assert done.returncode == 2 and done.stderr.strip() == f"fill_span_refit.sh: {message}"
    assert calls == [] and not any(out.iterdir())


def _call_s93(tmp_path, gpu_name, kept=(), committed=()):
    """experiments/device/calls/s93.sh in a tree of its own, with stand-ins for the two scripts it runs (each records
    its environment and writes what its step would) and for nvidia-smi; ``kept`` files start in .devkeep."""
    work, bin_dir = tmp_path / "work", tmp_path / "bin"
    for sub in ("experiments/device/calls", "experiments/candidates", "db", ".devkeep"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    shutil.copy(DEVICE / "calls" / "s93.sh", work / "experiments" / "device" / "calls" / "s93.sh")
    (work / "experiments" / "device" / "fill_span_refit.sh").write_text(
        f'echo "h100 $GPU $FILL_ARGS $BUDGET $*" >> {tmp_path / "ran.txt"}\n'
        "ls db experiments/candidates >> " + str(tmp_path / "seen.txt") + "\n"
        "echo fill > db/crossmeasure-h100-s92-fill1.sqlite; echo fit > experiments/candidates/h100-s92-prespan.yaml\n")
    (work / "experiments" / "device" / "calls" / "h200-after-s84.sh").write_text(
        f'echo "h200 $BUDGET" >> {tmp_path / "ran.txt"}\necho retime > db/mix-e2e-sweep-retime.sqlite\n')
    for name, text in kept:
        (work / ".devkeep" / name).write_text(text)
    for path, text in committed:
        (work / path).write_text(text)
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text(f"#!/bin/sh\necho '{gpu_name}'\n")
    (bin_dir / "nvidia-smi").chmod(0o755)
    done = subprocess.run(["bash", "experiments/device/calls/s93.sh"], cwd=work, capture_output=True, text=True,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", "BUDGET": "540"}, timeout=60)
    ran = (tmp_path / "ran.txt").read_text().splitlines() if (tmp_path / "ran.txt").exists() else []
    return done, ran, work


def test_the_stop_93_call_runs_the_h100_cycle_and_keeps_what_it_wrote_for_the_next_call(tmp_path):
    done, ran, work = _call_s93(tmp_path, "NVIDIA H100 80GB HBM3",
                                kept=[("crossmeasure-h100-s92-span3.sqlite", "span"), ("h100-s92.yaml", "kept")],
                                committed=[("experiments/candidates/h100-s92.yaml", "committed")])
    assert done.returncode == 0, done.stderr
    assert ran == ["h100 h100 --fill-share 0.25 --fill-shapes 400 540 92 1 3 913 15"]
    # What an earlier call kept is back before the cycle starts; a fit committed here is not overwritten.
    assert "crossmeasure-h100-s92-span3.sqlite" in (tmp_path / "seen.txt").read_text().split()
    assert (work / "experiments" / "candidates" / "h100-s92.yaml").read_text() == "committed"
    kept = {p.name for p in (work / ".devkeep").iterdir()}
    assert {"crossmeasure-h100-s92-fill1.sqlite", "h100-s92-prespan.yaml"} <= kept


@pytest.mark.parametrize("gpu_name, ran, rc", [("NVIDIA H200", ["h200 540"], 0), ("NVIDIA A100-SXM4-80GB", [], 2)])
def test_the_stop_93_call_runs_the_h200_items_on_an_h200_and_nothing_elsewhere(tmp_path, gpu_name, ran, rc):
    done, got, work = _call_s93(tmp_path, gpu_name)
    assert (done.returncode, got) == (rc, ran)
    assert ((work / ".devkeep" / "mix-e2e-sweep-retime.sqlite").exists()) == (rc == 0)
    if rc:
        assert done.stderr.strip() == f"s93.sh: no item for GPU 0 ({gpu_name})"
