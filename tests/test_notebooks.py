"""The notebooks run headless (nbclient) on a copy of a recorded database, and are committed without outputs."""

import hashlib
import shutil
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
EXPECTED = {
    "01_study_overview.ipynb": ["database:", "NVIDIA H200", "softmax_fwd"],
    "02_heuristics.ipynb": ["No distilled heuristic", "geomean speedup", "oracle:"],
    "03_compare_gpus.ipynb": ["only one GPU in this database", "no second GPU to compare with"],
}


def test_every_notebook_is_listed_and_stripped():
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == sorted(EXPECTED)
    for name in EXPECTED:
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code and all(not c.outputs and c.execution_count is None for c in code)
        assert "INDUCTOR_TUNE_DB" in code[0].source


@pytest.fixture(scope="module")
def db_copy(tmp_path_factory):
    path = tmp_path_factory.mktemp("nb") / "quack.sqlite"
    shutil.copy("db/quack.sqlite", path)
    return path


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_notebook_runs_headless(name, db_copy, monkeypatch):
    monkeypatch.setenv("INDUCTOR_TUNE_DB", str(db_copy))
    # The kernel's default matplotlib backend (inline, Agg-based) renders PNGs without a display.
    monkeypatch.delenv("MPLBACKEND", raising=False)
    before = hashlib.sha256(db_copy.read_bytes()).hexdigest()
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    # cwd = notebooks/, as Jupyter and nbclient run them; the notebook finds the repo root itself.
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert f"database: {db_copy}" in text
    for snippet in EXPECTED[name]:
        assert snippet in text
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert images
    assert not any(o.output_type == "error" for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert hashlib.sha256(db_copy.read_bytes()).hexdigest() == before
