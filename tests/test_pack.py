"""experiments/device/pack.sh packs the databases a device call needs and sets db/ aside; a second pack restores
db/ first (stop 50 packed twice in a row and got nothing but tar errors)."""

import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

PACK = Path(__file__).resolve().parents[1] / "experiments" / "device" / "pack.sh"

pytestmark = pytest.mark.skipif(not (shutil.which("git") and shutil.which("xz")), reason="needs git and xz")


def _repo(tmp_path):
    repo = tmp_path / "repo"
    (repo / "db").mkdir(parents=True)
    (repo / "experiments" / "candidates").mkdir(parents=True)
    (repo / "heuristics").mkdir()
    for name in ("quack", "cited", "other"):
        (repo / "db" / f"{name}.sqlite").write_bytes(name.encode())
    (repo / "heuristics" / "h200.yaml").write_text("evidence: db/cited.sqlite\n")
    (repo / "experiments" / "candidates" / "a.yaml").write_text("evidence: db/other.sqlite\n")
    (repo / "experiments" / "candidates" / "b.yaml").write_text("x\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def _pack(repo, *args):
    return subprocess.run(["bash", str(PACK), *map(str, args)], cwd=repo, capture_output=True, text=True)


def _packed(repo):
    with tarfile.open(repo / ".carry" / "db.tar.xz") as tar:
        return sorted(tar.getnames())


def test_pack_sets_aside_and_a_second_pack_restores_first(tmp_path):
    repo, stash = _repo(tmp_path), tmp_path / "stash"
    first = _pack(repo, stash, "heuristics/h200.yaml", "experiments/candidates/a.yaml", "--", "db/quack.sqlite")
    assert first.returncode == 0, first.stderr
    assert _packed(repo) == ["db/cited.sqlite", "db/other.sqlite", "db/quack.sqlite"]
    assert not (repo / "db").exists() and (stash / "db" / "cited.sqlite").exists()
    assert sorted(p.name for p in (repo / "experiments" / "candidates").iterdir()) == ["a.yaml"]

    second = _pack(repo, stash, "heuristics/h200.yaml", "--", "db/quack.sqlite")
    assert second.returncode == 0, second.stderr
    assert "restoring it first" in second.stderr
    assert _packed(repo) == ["db/cited.sqlite", "db/quack.sqlite"]
    assert sorted(p.name for p in (stash / "candidates").iterdir()) == ["a.yaml", "b.yaml"]

    assert _pack(repo, "--restore", stash).returncode == 0
    assert sorted(p.name for p in (repo / "db").iterdir()) == ["cited.sqlite", "other.sqlite", "quack.sqlite"]
    assert sorted(p.name for p in (repo / "experiments" / "candidates").iterdir()) == ["a.yaml", "b.yaml"]
