"""experiments/heldout_spans.py: a held-out draw inside each unsplit rule's span (CPU)."""

import json
import os
import subprocess
import sys

import distill_fixtures as fx
import pytest

sys.path.insert(0, os.path.join(fx.ROOT, "experiments"))
import heldout_spans  # noqa: E402

from inductor_tune import heuristics  # noqa: E402

S78 = os.path.join(fx.ROOT, "experiments", "candidates", "h200-s78.yaml")
NOCOLUMN = os.path.join(fx.ROOT, "experiments", "candidates", "h200-s76-nocolumn.yaml")


def test_each_column_rule_gets_its_problems_inside_its_span_and_none_at_an_avoided_shape():
    heur = heuristics.load(S78)
    specs = [u for u in heur.unsplit if u.outer]
    first = heldout_spans.draw_in_spans(heur, True, 3, 7, heldout_spans.COLUMN_KERNELS, set())
    avoid = {(p[1], p[2]) for p in first.problems[:6]}
    draw = heldout_spans.draw_in_spans(heur, True, 3, 7, heldout_spans.COLUMN_KERNELS, avoid)
    assert draw.n == len(draw.problems) == 3 * len(specs) == 24
    for index, spec in enumerate(specs):
        for _, rows, cols, _ in draw.problems[3 * index:3 * index + 3]:
            assert spec.rows[0] <= rows <= spec.rows[1] and spec.cols[0] <= cols <= spec.cols[1]
    assert not avoid & {(p[1], p[2]) for p in draw.problems}
    assert len({tuple(p) for p in draw.problems}) == 24
    assert heldout_spans.draw_in_spans(heur, True, 3, 7, heldout_spans.COLUMN_KERNELS, avoid) == draw  # seeded
    with pytest.raises(ValueError, match="no unsplit rules of column reductions"):
        heldout_spans.draw_in_spans(heuristics.load(NOCOLUMN), True, 3, 7, heldout_spans.COLUMN_KERNELS, set())


def test_the_committed_column_draw_lies_in_the_s78_rules_and_avoids_the_training_draws():
    with open(os.path.join(fx.ROOT, "experiments", "heldout", "column-s78-draw.json")) as f:
        draw = json.load(f)
    specs = [u for u in heuristics.load(S78).unsplit if u.outer]
    assert draw["seed"] == 2102 and draw["n"] == 40
    for index, spec in enumerate(specs):
        for _, rows, cols, _ in draw["problems"][5 * index:5 * index + 5]:
            assert spec.rows[0] <= rows <= spec.rows[1] and spec.cols[0] <= cols <= spec.cols[1]
    unsplit_dir = os.path.join(fx.ROOT, "experiments", "unsplit")
    trained = {(p[1], p[2]) for name in os.listdir(unsplit_dir) if name.startswith("outer-") and name.endswith(".json")
               for p in json.load(open(os.path.join(unsplit_dir, name)))["problems"]}
    assert not trained & {(p[1], p[2]) for p in draw["problems"]}


def test_a_file_without_the_rules_asked_is_one_line_and_no_file(tmp_path):
    out = tmp_path / "d.json"
    proc = subprocess.run([sys.executable, "experiments/heldout_spans.py", NOCOLUMN, "--outer", "--seed", "1",
                           "--out", str(out)], capture_output=True, text=True, cwd=fx.ROOT)
    assert proc.returncode == 1 and not out.exists()
    assert proc.stderr.strip() == "heldout_spans: error: the file has no unsplit rules of column reductions"
