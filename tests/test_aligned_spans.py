"""A rule covers, at N of each alignment class, only the N its evidence of that class measured
(``FitParams.cols_by_alignment``, ``torch_rules.Rule.aligned_cols``).

The H200 finding behind it (stop 52, ``db/map52*-eee2f777.sqlite``): the scaled softmax backward's rule for N
8251..12048 (persistent XBLOCK 2, 16 warps) won at its 71 shapes, whose odd N reached 11611, and lost 5-13 % at
odd N 11799..12047 (at 274 and 540 rows; at N 11897, at 8 of 10 row counts 264..540), while N = 11896, 11898 and
11900 won 1.11-1.30x."""

import dataclasses
import functools
import importlib.util
import os
import sys
import types

import fast_yaml
import pytest

from inductor_tune import distill, heuristics, torch_rules
from inductor_tune import patch as patch_mod
from inductor_tune.fitparams import FitParams
from inductor_tune.heuristics import HeuristicsError
from inductor_tune.shapes import ALIGNMENT_CLASSES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIPPED_H200 = os.path.join(ROOT, "heuristics", "h200.yaml")
# The finding's rule (N 8251..12048) is stop 52's, kept by every shipped file through 2b0e169f (stops 65-66). Span
# round 31 cut it at N 11264 in fcb2b8aa (shipped at stops 67-68); 5af72bc3 (stop 69), 646a9315 (stop 70), 0d443b28
# (stop 71), f8e76f08 (stops 72-74), cd6c1b3d (stop 75), c3c6844b (stops 76-78), 7a705457 (stops 79-81), e75e39bd
# (stops 82-83) and 86f2b08c (since stop 84) keep the cut, so the class spans are tested on 2b0e169f's copy and the
# shipped file at the N the rule lost (the last test).
FINDING_FILE = os.path.join(ROOT, "experiments", "candidates", "h200-s64.yaml")
SOFTMAX_BWD_SPAN = (8251, 12048)


@functools.lru_cache(maxsize=1)
def _finding_file() -> heuristics.Heuristics:
    return heuristics.load(FINDING_FILE)


def _softmax_bwd_rule() -> heuristics.RuleSpec:
    (rule,) = [r for r in _finding_file().rules if r.config is not None and r.cols == SOFTMAX_BWD_SPAN
               and r.reductions == "sum@backward"]
    return rule


def _lookup(heur: heuristics.Heuristics, rule: heuristics.RuleSpec, rows: int, cols: int):
    return heur.lookup(rule.kind, rule.element_size, cols, rows, rule.reductions, rule.envelopes[0])


def test_the_shipped_rule_leaves_odd_n_past_its_odd_evidence_to_inductor():
    # The class spans alone: the rule's hull at odd N (stop 54, tests/test_odd_hull.py) is set aside.
    rule = dataclasses.replace(_softmax_bwd_rule(), odd_hull=())
    heur = dataclasses.replace(_finding_file(), rules=(rule,))
    odd_top = max(hi for m, r, lo, hi in rule.aligned_cols if (m, r) == (2, 1))
    assert odd_top < 11799  # the loss the map found starts there
    for rows in (274, 540):
        assert _lookup(heur, rule, rows, 11897) is None
        assert _lookup(heur, rule, rows, odd_top) == rule
        for even in (11896, 11900, 12048):  # N it won at, of classes whose evidence reaches them
            assert _lookup(heur, rule, rows, even) == rule


def test_the_table_install_and_a_patched_torch_consult_agree(tmp_path):
    """``Heuristics.table`` (install) and the generated module (patched torch) both keep the class spans."""
    rule = _softmax_bwd_rule()
    path = tmp_path / "distilled_reduction_rules.py"
    path.write_text(patch_mod.rules_module(_finding_file(), "2.13.0"))
    spec = importlib.util.spec_from_file_location("generated_rules", path)
    generated = importlib.util.module_from_spec(spec)
    sys.modules["generated_rules"] = generated  # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(generated)
        for module, table in ((torch_rules, _finding_file().table()), (generated, generated.TABLE)):
            args = (rule.kind, rule.element_size, 16384, 512, table, rule.reductions, rule.envelopes[0], 274)
            assert module.lookup(*args, 11897) is None
            found = module.lookup(*args, 11896)
            assert found is not None and found.XBLOCK == 2 and found.num_warps == 16 and found.aligned_cols
    finally:
        sys.modules.pop("generated_rules", None)


def test_every_config_rule_of_the_shipped_files_spans_each_class_of_its_evidence():
    for name in ("h200.yaml", "h100.yaml"):
        for rule in heuristics.load(os.path.join(ROOT, "heuristics", name)).rules:
            if rule.config is None:
                continue
            cols = [int(s.split()[1].split("x")[1]) for s in rule.evidence.shapes]
            measured = distill.aligned_spans([types.SimpleNamespace(cols=n) for n in cols])
            assert rule.aligned_cols == measured, rule.describe()


def test_class_spans_are_the_smallest_and_largest_n_of_each_class():
    points = [types.SimpleNamespace(cols=n) for n in (8251, 9084, 10240, 10835, 11600, 12048, 8360)]
    assert distill.aligned_spans(points) == ((16, 0, 10240, 12048), (16, 8, 8360, 8360), (8, 4, 9084, 9084),
                                             (2, 1, 8251, 10835))
    assert sorted(n % m for n in range(1, 200) for m, r in ALIGNMENT_CLASSES if n % m == r).count(0) == 199 // 16
    assert all(sum(n % m == r for m, r in ALIGNMENT_CLASSES) == 1 for n in range(1, 1000))  # a partition


def test_the_fit_writes_class_spans_only_with_the_parameter():
    import distill_fixtures as fx

    _, points, _ = fx.fixture_points()
    with_spans = [r for r in distill.fit_rules(points) if r.config is not None]
    without = [r for r in distill.fit_rules(points, FitParams(cols_by_alignment=False)) if r.config is not None]
    assert with_spans and all(r.aligned_cols for r in with_spans)
    assert not any(r.aligned_cols for r in without)
    assert [dataclasses.replace(r, aligned_cols=()) for r in with_spans] == without


def test_a_file_keeps_its_class_spans_and_digest_through_dump_and_load(tmp_path):
    path = tmp_path / "h.yaml"
    heur = _finding_file()
    heuristics.dump(heur, str(path))
    again = heuristics.load(str(path))
    assert again.rules == heur.rules and again.digest() == heur.digest()
    bare = dataclasses.replace(heur, rules=tuple(dataclasses.replace(r, aligned_cols=()) for r in heur.rules))
    assert bare.digest() != heur.digest()
    heuristics.dump(bare, str(path))
    assert not any("cols_by_alignment" in r for r in fast_yaml.safe_load(open(path))["rules"])  # older files' spelling


def _with_spans(value):
    doc = fast_yaml.safe_load(open(FINDING_FILE))
    rule = next(r for r in doc["rules"] if r.get("cols") == list(SOFTMAX_BWD_SPAN))
    rule["cols_by_alignment"] = value
    return doc


@pytest.mark.parametrize("value, why", [
    ([{"mod": 3, "rem": 1, "cols": [8251, 10835]}], "not a power-of-two modulus"),
    ([{"mod": 2, "rem": 2, "cols": [8251, 10835]}], "residue past the modulus"),
    ([{"mod": 2, "rem": 1, "cols": [8251, 13001]}], "past the rule's cols"),
    ([{"mod": 2, "rem": 1, "cols": [8252, 10835]}], "low not in the class"),
    ([{"mod": 2, "rem": 0, "cols": [8252, 10836]}, {"mod": 16, "rem": 8, "cols": [8264, 8264]}], "classes share N"),
    ([{"mod": 16, "rem": 0, "cols": [8256, 8256]}, {"mod": 4, "rem": 0, "cols": [8256, 8256]}], "classes share N"),
    ([{"mod": 2, "rem": 1}], "no span"),
    ([{"mod": 2, "rem": 1, "cols": [8251, 10835], "code": "import os"}], "an unknown key"),
    ([], "empty"),
    ("2:1 8251..10835", "not a list"),
    ([{"mod": True, "rem": 1, "cols": [8251, 10835]}], "a boolean modulus"),
])
def test_bad_class_spans_fail_in_one_line_naming_the_rule(tmp_path, value, why):
    path = tmp_path / "h.yaml"
    path.write_text(fast_yaml.safe_dump(_with_spans(value)))
    with pytest.raises(HeuristicsError) as err:
        heuristics.load(str(path))
    assert "cols_by_alignment" in str(err.value) and "rules[" in str(err.value) and "\n" not in str(err.value), why


def test_spans_set_in_code_that_are_not_whole_numbers_are_refused_by_the_patch():
    rule = dataclasses.replace(_softmax_bwd_rule(), aligned_cols=((2, 1, "8251); import os; (", 10835),))
    bad = dataclasses.replace(_finding_file(), rules=(rule,))
    with pytest.raises(patch_mod.PatchError):
        patch_mod.rules_module(bad, "2.13.0")


def test_a_rule_without_class_spans_covers_every_class_of_its_cols():
    """Files written before stop 52 (no ``cols_by_alignment``) keep their meaning."""
    rule = dataclasses.replace(_softmax_bwd_rule(), aligned_cols=(), odd_hull=())
    heur = dataclasses.replace(_finding_file(), rules=(rule,))
    assert _lookup(heur, rule, 274, 11897) == rule
    shipped_rules = fast_yaml.safe_load(open(SHIPPED_H200))["rules"]
    assert any("cols_by_alignment" in r for r in shipped_rules)  # the shipped file has them


def test_the_shipped_softmax_backward_rule_leaves_the_losing_odd_n_to_inductor():
    """Whatever its cut, the file shipped now launches no config at the odd N where stop 52's rule lost."""
    shipped = heuristics.load(SHIPPED_H200)
    rule = _softmax_bwd_rule()
    ours = [r for r in shipped.rules if r.config is not None and r.kind == rule.kind
            and r.reductions == rule.reductions and r.envelopes == rule.envelopes and r.cols[0] == SOFTMAX_BWD_SPAN[0]]
    assert ours, "the shipped file has no softmax backward rule from N 8251"
    for rows in (274, 540):
        at_the_loss = _lookup(shipped, rule, rows, 11897)
        assert at_the_loss is None or at_the_loss.config is None, at_the_loss  # no rule, or one that keeps the default
        assert _lookup(shipped, rule, rows, 8352) in ours  # N = 0 (mod 16), the first N of that class it measured
