"""The notebooks run headless (nbclient) on a copy of a recorded database, and are committed without outputs."""

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
EXPECTED = {
    "01_study_overview.ipynb": ["database:", "NVIDIA H200", "softmax_fwd"],
    # a rule signature of heuristics/h200.yaml, its provenance and hold-out scores, and the study part
    "02_heuristics.ipynb": ["heuristic file:", "online_softmax_reduce+online_softmax_reduce", "keep default",
                            "leave_one_n_out", "validation database:", "geomean speedup", "oracle:"],
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


@pytest.fixture(scope="module")
def validation_copy(tmp_path_factory):
    path = tmp_path_factory.mktemp("nbval") / "validation.sqlite"
    shutil.copy("db/validation.sqlite", path)
    return path


def _execute(name: str, monkeypatch, db: Path, validation: Path):
    monkeypatch.setenv("INDUCTOR_TUNE_DB", str(db))
    monkeypatch.setenv("INDUCTOR_TUNE_VALIDATION", str(validation))  # notebook 02; never db/ itself
    monkeypatch.delenv("INDUCTOR_TUNE_HEURISTICS", raising=False)  # notebook 02 shows heuristics/h200.yaml
    # The kernel's default matplotlib backend (inline, Agg-based) renders PNGs without a display.
    monkeypatch.delenv("MPLBACKEND", raising=False)
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    # cwd = notebooks/, as Jupyter and nbclient run them; the notebook finds the repo root itself.
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not any(o.output_type == "error" for o in outputs)
    text = "\n".join(o.get("text", "") for o in outputs)
    return text, [o for o in outputs if "image/png" in o.get("data", {})]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_notebook_runs_headless(name, db_copy, validation_copy, monkeypatch):
    before = [hashlib.sha256(p.read_bytes()).hexdigest() for p in (db_copy, validation_copy)]
    text, images = _execute(name, monkeypatch, db_copy, validation_copy)
    assert f"database: {db_copy}" in text
    for snippet in EXPECTED[name]:
        assert snippet in text
    if name == "02_heuristics.ipynb":
        validated = _check_heuristics_notebook(text, validation_copy)
        assert bool(images) == validated  # one GB/s figure per kernel of the validation run, none without one
    else:
        assert images
    assert [hashlib.sha256(p.read_bytes()).hexdigest() for p in (db_copy, validation_copy)] == before


def test_heuristics_notebook_says_when_the_file_was_never_validated(db_copy, tmp_path, monkeypatch):
    from inductor_tune import heuristics

    path = tmp_path / "validation.sqlite"
    shutil.copy("db/validation.sqlite", path)
    con = sqlite3.connect(path)
    digest = heuristics.load("heuristics/h200.yaml").digest()
    con.execute("delete from it_validation where heuristics_digest = ?", (digest,))
    con.commit()
    con.close()
    text, images = _execute("02_heuristics.ipynb", monkeypatch, db_copy, path)
    assert not _check_heuristics_notebook(text, path) and not images
    assert "it holds runs of other versions of this path" in text and "No validation record of this file" in text
    assert "oracle:" in text  # the study part does not depend on validation


def _check_heuristics_notebook(text: str, validation_copy: Path) -> bool:
    """The file's rules and digest are shown; validated or not is said plainly.  Returns whether validated."""
    from inductor_tune import heuristics, plot

    heur = heuristics.load("heuristics/h200.yaml")
    digest = heur.digest()
    assert "No distilled heuristic" not in text and "does not exist" not in text and "no loader" not in text
    assert "heuristic file: " in text and f"(digest {digest})" in text
    assert f"{len(heur.rules)} rules:" in text
    for rule in heur.rules:
        assert rule.reductions in text
    validated = any(r.digest == digest for r in plot.validation_runs(str(validation_copy)))
    if validated:
        assert f"This file: validated as heuristics/h200.yaml (digest {digest})" in text
        assert "heuristics vs Inductor default: geomean" in text and "NOT VALIDATED" not in text
    else:
        assert ("NOT VALIDATED: the validation database has no record of heuristics/h200.yaml with digest "
                f"{digest}") in text
    return validated
