"""At odd N a rule covers only the convex hull, in (log2 rows, N), of its evidence at odd N
(``FitParams.odd_hull``, ``torch_rules.Rule.odd_hull``).

The H200 finding behind it (stop 54, ``db/retime52-48edc030-*.sqlite``): the shipped scaled softmax backward's rule
for N 8251..12048 (persistent XBLOCK 2, 16 warps), whose evidence at odd N reached N 11015 only from 1405 rows on,
lost 2-6 % at 540x11401 and 540x11503 in two fresh compiles of 5 rounds each, inside its odd span 8251..11611, while
540x11402 won 1.19x."""

import dataclasses
import functools
import importlib.util
import math
import os
import re
import sys
import types

import fast_yaml
import pytest

from inductor_tune import distill, heuristics, torch_rules
from inductor_tune import patch as patch_mod
from inductor_tune.fitparams import FitParams
from inductor_tune.heuristics import HeuristicsError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
H200_FILE = os.path.join(ROOT, "heuristics", "h200.yaml")
# The finding's rule (N 8251..12048) is kept by every shipped file through 2b0e169f (stops 65-66); span round 31 cut
# it at N 11264 in fcb2b8aa (shipped at stops 67-68); 5af72bc3 (stop 69), 646a9315 (stop 70), 0d443b28 (stop 71),
# f8e76f08 (stops 72-74), cd6c1b3d (stop 75), c3c6844b (stops 76-78), 7a705457 (stops 79-81), e75e39bd (stops
# 82-83) and 86f2b08c (since stop 84) keep the cut.
# So the hull is tested on 2b0e169f's copy, and the shipped file is checked at the lost shapes.
FINDING_FILE = os.path.join(ROOT, "experiments", "candidates", "h200-s64.yaml")
SOFTMAX_BWD_SPAN = (8251, 12048)
LOST = ((540, 11401), (540, 11503), (274, 11297))  # odd N inside the odd span, outside the hull


def _points(rule):
    shapes = [re.match(r"\S+ (\d+)x(\d+)", s) for s in rule.evidence.shapes]
    return [types.SimpleNamespace(rows=int(m[1]), cols=int(m[2])) for m in shapes]


@functools.lru_cache(maxsize=1)
def _finding_rule() -> tuple[heuristics.Heuristics, heuristics.RuleSpec]:
    """2b0e169f (fitted with hulls) and its scaled softmax backward rule for N 8251..12048."""
    heur = heuristics.load(FINDING_FILE)
    (rule,) = [r for r in heur.rules if r.config is not None and r.cols == SOFTMAX_BWD_SPAN
               and r.reductions == "sum@backward"]
    return heur, rule


def test_every_config_rule_of_the_shipped_h200_file_has_the_hull_of_its_evidence_at_odd_n():
    rules = [r for r in heuristics.load(H200_FILE).rules if r.config is not None]
    assert rules and all(r.odd_hull == distill.odd_hull(_points(r)) for r in rules)
    assert any(len(r.odd_hull) >= 3 for r in rules)


def _lookup(heur, rule, rows, cols):
    return heur.lookup(rule.kind, rule.element_size, cols, rows, rule.reductions, rule.envelopes[0])


def test_the_hull_leaves_the_lost_odd_shapes_to_inductor_and_keeps_its_evidence():
    heur, rule = _finding_rule()
    odd_lo, odd_hi = next((lo, hi) for m, r, lo, hi in rule.aligned_cols if (m, r) == (2, 1))
    for rows, cols in LOST:
        assert odd_lo <= cols <= odd_hi  # the class span alone would apply the rule here
        assert _lookup(heur, rule, rows, cols) is None
    assert _lookup(heur, rule, 540, 11402) == rule  # even N: the class spans alone, as before
    assert _lookup(heur, rule, 2000, 11101) == rule  # inside the hull
    assert all(_lookup(heur, rule, p.rows, p.cols) == rule for p in _points(rule))
    shipped = heuristics.load(H200_FILE)
    for rows, cols in LOST:
        found = _lookup(shipped, rule, rows, cols)
        assert found is None or found.config is None, found  # the shipped file leaves them to Inductor too


def test_the_table_install_and_a_patched_torch_consult_agree(tmp_path):
    heur, rule = _finding_rule()
    path = tmp_path / "distilled_reduction_rules.py"
    path.write_text(patch_mod.rules_module(heur, "2.13.0"))
    spec = importlib.util.spec_from_file_location("generated_hull_rules", path)
    generated = importlib.util.module_from_spec(spec)
    sys.modules["generated_hull_rules"] = generated  # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(generated)
        for module, table in ((torch_rules, heur.table()), (generated, generated.TABLE)):
            for rows, cols, covered in ((540, 11401, False), (540, 11402, True), (2000, 11101, True)):
                found = module.lookup(rule.kind, rule.element_size, 16384, torch_rules.next_pow2(rows), table,
                                      rule.reductions, rule.envelopes[0], rows, cols)
                assert (found is not None and found.odd_hull == rule.odd_hull) == covered, (module, rows, cols)
    finally:
        sys.modules.pop("generated_hull_rules", None)


def _pts(*pairs):
    return [types.SimpleNamespace(rows=r, cols=c) for r, c in pairs]


def test_the_hull_is_counter_clockwise_in_log_rows_and_drops_even_and_collinear_points():
    hull = distill.odd_hull(_pts((64, 101), (256, 101), (1024, 101), (1024, 301), (64, 301), (256, 201), (512, 400)))
    assert set(hull) == {(64, 101), (1024, 101), (1024, 301), (64, 301)}  # (256, 101) lies on an edge
    corners = [(math.log2(r), c) for r, c in hull]
    area = sum(a[0] * b[1] - b[0] * a[1] for a, b in zip(corners, corners[1:] + corners[:1]))
    assert area > 0
    for rows, cols, inside in ((256, 201, True), (256, 101, True), (64, 301, True), (128, 151, True),
                               (63, 151, False), (2048, 151, False), (256, 303, False), (256, 202, True)):
        assert torch_rules.within_odd_hull(hull, rows, cols) == inside, (rows, cols)


def test_one_row_count_or_one_shape_covers_only_that_segment_or_shape():
    segment = distill.odd_hull(_pts((4096, 4097), (4096, 5001), (4096, 8191)))
    assert segment == ((4096, 4097), (4096, 8191))
    assert torch_rules.within_odd_hull(segment, 4096, 6001)
    assert not torch_rules.within_odd_hull(segment, 4097, 6001) and not torch_rules.within_odd_hull(segment, 4096, 8193)
    point = distill.odd_hull(_pts((300, 999), (300, 1000)))
    assert point == ((300, 999),)
    assert torch_rules.within_odd_hull(point, 300, 999) and not torch_rules.within_odd_hull(point, 301, 999)
    assert distill.odd_hull(_pts((300, 1000))) == ()
    assert torch_rules.within_odd_hull((), 1, 3)  # no hull: the spans alone
    assert not torch_rules.within_odd_hull(point, None, 999)  # unknown rows are outside a hull


def test_the_fit_writes_hulls_only_with_the_parameter():
    import distill_fixtures as fx

    _, points, _ = fx.fixture_points()
    odd = [dataclasses.replace(p, cols=p.cols - 1) for p in points]
    with_hull = [r for r in distill.fit_rules(odd) if r.config is not None]
    without = [r for r in distill.fit_rules(odd, FitParams(odd_hull=False)) if r.config is not None]
    assert with_hull and all(r.odd_hull for r in with_hull)
    assert not any(r.odd_hull for r in without)
    assert [dataclasses.replace(r, odd_hull=()) for r in with_hull] == without


def test_a_file_keeps_its_hull_and_digest_through_dump_and_load_and_older_files_keep_theirs(tmp_path):
    heur, _ = _finding_rule()
    path = tmp_path / "h.yaml"
    heuristics.dump(heur, str(path))
    again = heuristics.load(str(path))
    assert again.rules == heur.rules and again.digest() == heur.digest()
    bare = dataclasses.replace(heur, rules=tuple(dataclasses.replace(r, odd_hull=()) for r in heur.rules))
    assert bare.digest() != heur.digest()
    heuristics.dump(bare, str(path))
    assert not any("odd_hull" in r for r in fast_yaml.safe_load(open(path))["rules"])  # older files' spelling
    # The H100's file shipped at stop 52, fitted before hulls, keeps the digest it was validated under.
    h100 = heuristics.load(os.path.join(ROOT, "experiments", "candidates", "h100-s52.yaml"))
    assert not any(r.odd_hull for r in h100.rules) and h100.digest().startswith("473aeeff")


def _with_hull(value):
    doc = fast_yaml.safe_load(open(FINDING_FILE))
    rule = next(r for r in doc["rules"] if r.get("cols") == list(SOFTMAX_BWD_SPAN))
    rule["odd_hull"] = value
    return doc


@pytest.mark.parametrize("value, why", [
    ([[374, 9757], [557, 8251], [14916, 9765], [12151, 11611]], "counter-clockwise: accepted"),
    ([[374, 9757], [12151, 11611], [14916, 9765], [557, 8251]], "clockwise"),
    ([[374, 9757], [557, 8251], [1000, 9001], [14916, 9765], [12151, 11611]], "not convex"),
    ([[374, 9001], [1000, 9001], [4000, 9001]], "collinear"),
    ([[374, 9757], [374, 9757]], "a vertex twice"),
    ([[374, 9758]], "even N"),
    ([[374, 13001]], "past the rule's cols"),
    ([[40000, 9757]], "past the rule's rows"),
    ([[True, 9757]], "a boolean"),
    ([[374, "9757); import os; ("]], "code"),
    ([], "empty"),
    ("374x9757", "not a list"),
])
def test_bad_hulls_fail_in_one_line_naming_the_rule(tmp_path, value, why):
    path = tmp_path / "h.yaml"
    path.write_text(fast_yaml.safe_dump(_with_hull(value)))
    if why.endswith("accepted"):
        rule = next(r for r in heuristics.load(str(path)).rules if r.cols == SOFTMAX_BWD_SPAN)
        assert rule.odd_hull == tuple(map(tuple, value))
        return
    with pytest.raises(HeuristicsError) as err:
        heuristics.load(str(path))
    assert "odd_hull" in str(err.value) and "rules[" in str(err.value) and "\n" not in str(err.value), why


def test_a_hull_set_in_code_that_is_not_whole_numbers_is_refused_by_the_patch():
    heur, rule = _finding_rule()
    bad = dataclasses.replace(heur, rules=(dataclasses.replace(rule, odd_hull=((540, "1); import os; ("),)),))
    with pytest.raises(patch_mod.PatchError):
        patch_mod.rules_module(bad, "2.13.0")
