"""The notebooks run headless (nbclient) on a copy of a recorded database, and are committed without outputs.

Their parameters are set the way papermill sets them: a cell injected after the one tagged "parameters".
"""

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
    "01_study_overview.ipynb": ["database:", "NVIDIA H200", "layernorm_bwd  32768x16384"],
    # a rule signature of heuristics/h200.yaml, its provenance, and the study part (hold-out scores: see
    # _check_heuristics_notebook)
    "02_heuristics.ipynb": ["heuristic file:", "online_softmax_reduce+online_softmax_reduce", "keep default",
                            "validation database:", "geomean speedup", "oracle:"],
    "03_compare_gpus.ipynb": ["only one GPU in this database", "no second GPU to compare with",
                              "kernels drawn: softmax_fwd\n"],
}
# The kernel each run asks for (not the notebook's default), and what shows that it was taken.
KERNELS = {"01_study_overview.ipynb": "layernorm_bwd", "02_heuristics.ipynb": "rmsnorm_fwd",
           "03_compare_gpus.ipynb": "softmax_fwd"}


def test_every_notebook_is_listed_and_stripped():
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == sorted(EXPECTED)
    for name in EXPECTED:
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code and all(not c.outputs and c.execution_count is None for c in code)
        # the first code cell holds the parameters, tagged as papermill finds them
        assert code[0].metadata.get("tags") == ["parameters"]
        assert all(f"\n{p} = " in code[0].source for p in ("DB", "KERNEL", "GPU", "DTYPE"))
        # every figure has words saying what to look at
        assert sum("What to look at" in c.source for c in nb.cells if c.cell_type == "markdown") >= 2


@pytest.fixture(scope="module")
def db_copy(tmp_path_factory):
    path = tmp_path_factory.mktemp("nb") / "quack.sqlite"
    shutil.copy("db/quack.sqlite", path)
    return path


@pytest.fixture(scope="module")
def validation_copy(tmp_path_factory):
    # Held-out set 6 was scored with the committed heuristics/h200.yaml: notebook 02 finds it validated.
    path = tmp_path_factory.mktemp("nbval") / "heldout6.sqlite"
    shutil.copy("db/heldout6.sqlite", path)
    return path


def _execute(name: str, monkeypatch, **parameters):
    """Run a notebook with ``parameters`` injected after its parameters cell; (text, images) of its outputs.

    No INDUCTOR_TUNE_* variable reaches the kernel: what the notebook reads must come from the injected
    cell (else from its own defaults, which point into db/ and so are always overridden here).
    """
    for var in ("DB", "VALIDATION", "HEURISTICS", "KERNEL", "GPU"):
        monkeypatch.delenv(f"INDUCTOR_TUNE_{var}", raising=False)
    # The kernel's default matplotlib backend (inline, Agg-based) renders PNGs without a display.
    monkeypatch.delenv("MPLBACKEND", raising=False)
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    injected = nbformat.v4.new_code_cell("".join(f"{k} = {v!r}\n" for k, v in parameters.items()))
    injected.metadata["tags"] = ["injected-parameters"]
    nb.cells.insert(at + 1, injected)
    # cwd = notebooks/, as Jupyter and nbclient run them; the notebook finds the repo root itself.
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not any(o.output_type == "error" for o in outputs)
    # The notebooks start (and run) without warnings: nothing on stderr.
    assert [o.text for o in outputs if o.output_type == "stream" and o.name == "stderr"] == []
    # A print may reach nbclient as several stream messages (the kernel flushes on a timer, and a busy CI machine
    # once split "kernels drawn: softmax_fwd" in two), so a cell's stream text is joined as the stream wrote it.
    text = "\n".join("".join(o.get("text", "") for o in c.outputs) for c in nb.cells if c.cell_type == "code")
    return text, [o for o in outputs if "image/png" in o.get("data", {})]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_notebook_runs_headless(name, db_copy, validation_copy, monkeypatch):
    before = [hashlib.sha256(p.read_bytes()).hexdigest() for p in (db_copy, validation_copy)]
    text, images = _execute(name, monkeypatch, DB=str(db_copy), VALIDATION=str(validation_copy),
                            HEURISTICS="heuristics/h200.yaml", KERNEL=KERNELS[name])
    assert f"database: {db_copy}" in text
    assert f"kernel: {KERNELS[name]}" in text
    for snippet in EXPECTED[name]:
        assert snippet in text
    if name == "02_heuristics.ipynb":
        validated = _check_heuristics_notebook(text, validation_copy)
        # the picture of the file, then one GB/s figure for the kernel asked for when the file was validated
        assert len(images) == 1 + validated
    else:
        assert images
    if name == "01_study_overview.ipynb":
        assert "softmax_fwd/32768x2048" not in text  # the default kernel's study is not the one shown
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
    text, images = _execute("02_heuristics.ipynb", monkeypatch, DB=str(db_copy), VALIDATION=str(path),
                            HEURISTICS="heuristics/h200.yaml")
    assert not _check_heuristics_notebook(text, path) and len(images) == 1  # the file's picture alone
    assert "it holds runs of other versions of this path" in text and "No validation record of this file" in text
    assert "oracle:" in text  # the study part does not depend on validation


def test_heuristics_notebook_shows_a_files_hold_out_scores(db_copy, validation_copy, monkeypatch):
    # heuristics/h200-holdout.yaml was distilled with its leave-one-out refits and the 16384-row shapes held out.
    text, _ = _execute("02_heuristics.ipynb", monkeypatch, DB=str(db_copy), VALIDATION=str(validation_copy),
                       HEURISTICS="heuristics/h200-holdout.yaml")
    for scheme in ("leave_one_n_out", "leave_one_shape_out", "held_out_shapes"):
        assert f"== {scheme}: " in text
    assert "stores no hold-out results" not in text and "skipped:" not in text


def _check_heuristics_notebook(text: str, validation_copy: Path) -> bool:
    """The file's rules and digest are shown; validated or not is said plainly.  Returns whether validated."""
    from inductor_tune import heuristics, plot

    heur = heuristics.load("heuristics/h200.yaml")
    digest = heur.digest()
    assert "No distilled heuristic" not in text and "does not exist" not in text and "no loader" not in text
    assert "heuristic file: " in text and f"(digest {digest})" in text
    assert f"{len(heur.rules)} rules:" in text
    keep = sum(r.config is None for r in heur.rules)
    assert f"picture: {len(heur.rules)} rules in " in text and f", {keep} cells keep default" in text
    for rule in heur.rules:
        assert rule.reductions in text
    # The file's own hold-out scores where it stores them; where distill skipped them (--no-folds), it says so.
    schemes = [k for k, v in heur.holdout.items() if isinstance(v, dict) and "summary" in v]
    assert all(f"== {k}: " in text for k in schemes)
    if not schemes:
        assert "h200.yaml stores no hold-out results." in text and f"skipped: {heur.holdout['skipped']}" in text
    validated = any(r.digest == digest for r in plot.validation_runs(str(validation_copy)))
    if validated:
        assert f"This file: validated as heuristics/h200.yaml (digest {digest})" in text
        assert "heuristics vs Inductor default: geomean" in text and "NOT VALIDATED" not in text
    else:
        assert ("NOT VALIDATED: the validation database has no record of heuristics/h200.yaml with digest "
                f"{digest}") in text
    return validated
