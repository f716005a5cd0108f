"""Heuristic files: a rule's `reductions` (the kernel signature it covers) is checked when the file is
read, and rules only conflict when their signatures can cover the same kernel."""

import copy
import dataclasses
import functools
import itertools
import os
import stat

import fast_yaml
import pytest

from inductor_tune import heuristics, torch_rules
from inductor_tune.heuristics import HeuristicsError, RuleSpec
from inductor_tune.space import SlotConfig

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
H200_FILE = os.path.join(ROOT, "heuristics", "h200.yaml")
HOLDOUT_FILE = os.path.join(ROOT, "heuristics", "h200-holdout.yaml")
ALL_ROWS = [8192, 2147483648]


def _rule(reductions, rnumel=(2048, 4096), config=None, kind="inner_looped"):
    """A rule as the file holds it (config from h200.yaml's RMSNorm forward rule by default)."""
    out = {"kind": kind, "element_size": 2, "rnumel": list(rnumel), "xnumel": ALL_ROWS, "action": "config",
           "config": config or {"persistent": True, "XBLOCK": 2, "num_warps": 8}}
    if reductions is not None:
        out["reductions"] = reductions
    return out


@functools.lru_cache(maxsize=None)
def _committed(path: str) -> dict:
    return fast_yaml.safe_load(open(path))


def _doc(*rules):
    """h200.yaml's header (format, GPU) with the given rules."""
    doc = copy.deepcopy({k: v for k, v in _committed(H200_FILE).items() if k in ("format", "gpu")})
    doc["rules"] = list(rules)
    return doc


def _load(tmp_path, doc) -> heuristics.Heuristics:
    path = tmp_path / "h.yaml"
    path.write_text(fast_yaml.safe_dump(doc))
    return heuristics.load(str(path))


@pytest.mark.parametrize("value, why", [
    ("sum+max", "not sorted"),
    ("max++sum", "an empty reduction type"),
    ("", "empty"),
    ("@backward", "no reduction type"),
    ("sum@backward@backward", "marked twice"),
    ("sum@forward", "not the backward mark"),
    ("sum+max@backward", "not sorted, backward"),
    (7, "not text"),
    (["sum"], "a list"),
])
def test_a_bad_signature_fails_in_one_line_naming_the_rule(tmp_path, value, why):
    with pytest.raises(HeuristicsError) as err:
        _load(tmp_path, _doc(_rule("sum", rnumel=(256, 256), kind="inner_persistent"), _rule(value)))
    message = str(err.value)
    assert f"h.yaml: rules[1]: reductions {value!r} is not like 'sum'" in message, why
    assert "\n" not in message


@pytest.mark.parametrize("value", ["sum", "max+sum", "sum@backward", "sum+sum@backward",
                                   "online_softmax_reduce+online_softmax_reduce", "welford_reduce+welford_reduce"])
def test_good_signatures_are_read_as_written(tmp_path, value):
    (rule,) = _load(tmp_path, _doc(_rule(value))).rules
    assert rule.reductions == value and f"inner_looped reductions={value} elem=2B" in rule.describe()


@pytest.mark.parametrize("first, second", [
    ("sum", "welford_reduce+welford_reduce"),  # RMSNorm and LayerNorm forward of the same sizes
    ("sum", "sum@backward"),  # the same reductions, forward and backward graph
    ("sum+sum@backward", "sum@backward"),
])
def test_rules_of_the_same_sizes_for_different_signatures_are_allowed(tmp_path, first, second):
    looped = {"persistent": False, "XBLOCK": 2, "num_warps": 8, "R0_BLOCK": 1024, "num_stages": 4}
    heur = _load(tmp_path, _doc(_rule(first), _rule(second, config=looped)))
    a, b = heur.rules
    assert (a.reductions, b.reductions) == (first, second)
    assert heur.lookup("inner_looped", 2, 3000, 16384, first) is a
    assert heur.lookup("inner_looped", 2, 3000, 16384, second) is b
    assert heur.lookup("inner_looped", 2, 3000, 16384, "max+sum") is None  # no rule for softmax's kernel
    assert heur.lookup("inner_looped", 2, 3000, 16384, None) is None  # nor for a kernel of unknown signature
    table = heur.table()  # the run-time and patched lookup agree
    assert torch_rules.lookup("inner_looped", 2, 4096, 16384, table, second).XBLOCK == looped["XBLOCK"]
    assert torch_rules.lookup("inner_looped", 2, 4096, 16384, table, first).persistent


@pytest.mark.parametrize("first, second, ranges", [
    ("sum", "sum", ((2048, 4096), (4096, 8192))),  # the same signature, overlapping rnumel
    ("sum", "sum", ((2048, 4096), (2048, 2048))),
    (None, "sum", ((2048, 4096), (4096, 4096))),  # a rule without a signature covers every kernel
    ("welford_reduce+welford_reduce", None, ((2048, 4096), (2048, 4096))),
])
def test_overlapping_rules_that_can_cover_one_kernel_are_refused(tmp_path, first, second, ranges):
    with pytest.raises(HeuristicsError) as err:
        _load(tmp_path, _doc(_rule(first, ranges[0]), _rule(second, ranges[1])))
    described = RuleSpec("inner_looped", 2, ranges[0], tuple(ALL_ROWS), SlotConfig(True, 2, 8), reductions=first)
    assert str(err.value).endswith(f"h.yaml: rules[1]: overlaps rules[0] ({described.describe()})")
    assert "\n" not in str(err.value)


def test_the_same_signature_in_disjoint_ranges_is_allowed(tmp_path):
    heur = _load(tmp_path, _doc(_rule("sum", (2048, 4096)), _rule("sum", (8192, 8192))))
    assert [r.rnumel for r in heur.rules] == [(2048, 4096), (8192, 8192)]


def test_rules_of_one_size_group_cut_in_n_are_parted_by_their_n_spans(tmp_path):
    """A size group cut in N (``rowbands.col_cuts``) gives rules of the same ranges and kernels: their measured N
    spans part them, and a kernel between the spans gets neither."""
    low, high = ({**_rule("sum"), "cols": list(span)} for span in ((2100, 3500), (4096, 4096)))
    heur = _load(tmp_path, _doc(low, high))
    assert heur.lookup("inner_looped", 2, 3000, 16384, "sum").cols == (2100, 3500)
    assert heur.lookup("inner_looped", 2, 4096, 16384, "sum").cols == (4096, 4096)
    assert heur.lookup("inner_looped", 2, 3800, 16384, "sum") is None
    table = heur.table()
    assert torch_rules.lookup("inner_looped", 2, 4096, 16384, table, "sum", rows=16384, cols=3800) is None
    assert torch_rules.lookup("inner_looped", 2, 4096, 16384, table, "sum", rows=16384, cols=4096).cols == (4096, 4096)
    # A rule without a span covers every N of its ranges, and spans that meet overlap.
    for other in (_rule("sum"), {**_rule("sum"), "cols": [3500, 4096]}):
        with pytest.raises(HeuristicsError, match="overlaps rules"):
            _load(tmp_path, _doc(low, other))


def test_a_rule_that_did_not_fit_a_kernel_leaves_its_sibling_in_n_offered():
    """``torch_rules.mark_unfit`` keys on the spans too: the rules of a group cut in N share everything else."""
    low, high = (torch_rules.Rule("inner_looped", 2, (4096, 4096), (1, 1024), True, 1, 4, reductions="sum",
                                  cols=span) for span in ((2100, 3500), (4096, 4096)))
    table = torch_rules.Table("NVIDIA H200", 90, 132, (low, high))
    torch_rules._UNFIT.clear()
    try:
        torch_rules.mark_unfit(low, None)
        assert torch_rules.lookup("inner_looped", 2, 4096, 512, table, "sum", rows=500, cols=3000) is None
        assert torch_rules.lookup("inner_looped", 2, 4096, 512, table, "sum", rows=500, cols=4096) is high
    finally:
        torch_rules._UNFIT.clear()


@pytest.mark.parametrize("path", [H200_FILE, HOLDOUT_FILE])
def test_the_committed_files_sign_their_rules_and_share_sizes_across_signatures(path):
    heur = heuristics.parse(_committed(path), path)
    assert heur.rules and all(r.reductions for r in heur.rules)
    shared = [
        (a, b) for a, b in itertools.combinations(heur.rules, 2)
        if (a.kind, a.element_size) == (b.kind, b.element_size) and a.reductions != b.reductions
        and heuristics._overlap(a.rnumel, b.rnumel) and heuristics._overlap(a.xnumel, b.xnumel)
    ]
    assert shared  # what the signature makes possible: one size, different kernels, different rules


def test_dump_and_load_keep_the_signatures_and_the_file_is_readable_by_all(tmp_path):
    heur = heuristics.load(H200_FILE)
    path = tmp_path / "out" / "h.yaml"
    heuristics.dump(heur, str(path))
    again = heuristics.load(str(path))
    assert [r.reductions for r in again.rules] == [r.reductions for r in heur.rules]
    assert again.rules == heur.rules and again.digest() == heur.digest()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    unsigned = dataclasses.replace(heur, rules=tuple(dataclasses.replace(r, reductions=None) for r in heur.rules[:1]))
    assert unsigned.digest() != dataclasses.replace(heur, rules=heur.rules[:1]).digest()  # the signature is in it
    heuristics.dump(unsigned, str(path))
    assert "reductions" not in fast_yaml.safe_load(open(path))["rules"][0]  # no key: a rule for any kernel
    assert heuristics.load(str(path)).rules[0].reductions is None
