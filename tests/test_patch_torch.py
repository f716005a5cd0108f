"""A whole torch patched by `inductor-tune patch heuristics/h200.yaml` decides like `inductor_tune.install` of
the same file, on the CPU harness with a fake H200: every kernel a rule reaches gets the same launch config
from the patched config functions as the installed rules force into its source, and every other kernel the
configs of Inductor's own.

On torch 2.14 the patched config functions are Inductor's own asking its heuristics registry, where the
patch registered a reduction heuristic when the patched ``heuristics/triton_codegen/__init__.py`` was
imported: this test is what shows that import happens and the registration is what the config functions
consult.  The patched torch is a tree of links to the installed one whose patched files are real copies;
each torch runs tests/patched_torch_probe.py in a process of its own.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import distill_fixtures as fx
import pytest

from inductor_tune import heuristics
from inductor_tune import patch as patch_mod

H200_FILE = os.path.join(fx.ROOT, "heuristics", "h200.yaml")
PROBE = os.path.join(os.path.dirname(__file__), "patched_torch_probe.py")


def _linked_torch(dest: str, touched: set[str]) -> str:
    """A torch tree at ``dest``/torch: links to the installed files, real copies of those in ``touched``
    (paths relative to the tree's root), so that applying the patch changes nothing installed."""
    installed = os.path.dirname(importlib.util.find_spec("torch").origin)
    # The bytecode of a patched module is left out, though Python would see it is older than the source.
    stale = {os.path.join(os.path.dirname(t), "__pycache__", os.path.basename(t)[:-3] + ".") for t in touched}
    for folder, _, files in os.walk(installed):
        rel = os.path.relpath(folder, os.path.dirname(installed))
        os.makedirs(os.path.join(dest, rel), exist_ok=True)
        for name in files:
            source, target = os.path.join(folder, name), os.path.join(rel, name)
            if target in touched:
                shutil.copyfile(source, os.path.join(dest, target))
            elif not any(target.startswith(prefix) for prefix in stale):
                os.symlink(source, os.path.join(dest, target))
    return dest


def _probe(pythonpath: str, *args: str) -> dict:
    env = dict(os.environ, PYTHONPATH=pythonpath, PYTHONDONTWRITEBYTECODE="1", TORCHINDUCTOR_COMPILE_THREADS="1")
    env.pop("INDUCTOR_TUNE_HEURISTICS", None)
    done = subprocess.run([sys.executable, PROBE, *args], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def decisions(tmp_path_factory):
    """(installed rules on the installed torch, the patched torch alone, the installed torch alone)."""
    if shutil.which("git") is None:
        pytest.skip("git applies the patch")
    root = str(tmp_path_factory.mktemp("patched-torch"))
    text, version = patch_mod.generate(heuristics.load(H200_FILE))
    touched = {line.split(" b/", 1)[1] for line in text.splitlines() if line.startswith("diff --git ")}
    _linked_torch(root, touched)
    (tmp_path_factory.getbasetemp() / "h200.patch").write_text(text)
    subprocess.run(["git", "apply", str(tmp_path_factory.getbasetemp() / "h200.patch")], cwd=root, check=True)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    installed = _probe(repo, "install", H200_FILE)
    patched = _probe(os.pathsep.join([root, repo]), "patched")
    pristine = _probe(repo, "patched")
    assert patched["file"].startswith(root) and installed["torch"] == patched["torch"] == version
    return installed, patched, pristine


def test_the_patched_torch_gives_each_kernel_the_config_the_installed_rules_force(decisions):
    installed, patched, pristine = decisions
    reached = 0
    for forced, built_in, default in zip(installed["cases"], patched["cases"], pristine["cases"]):
        assert forced[:3] == built_in[:3] == default[:3]
        assert forced[3] == built_in[3], f"{forced[:3]}: install {forced[3]}, patched torch {built_in[3]}"
        reached += forced[3] != default[3]
    # Both sides of the comparison occur: rules that change a kernel and kernels that keep Inductor's configs.
    assert 0 < reached < len(installed["cases"]), reached
