"""Span probes take every kernel a rule matches by its envelope in turn, and a rule ships only once the
latest round timed its config at each (``FitParams.probe_every_kernel``, ``evidence.span_kernels``).
On an H200 a looped RMSNorm rule at N = 131072, whose five probes of ``rmsnorm_fwd`` all held, lost 3 %
at ``llama_rmsnorm_fwd`` 1740x129369, another kernel of the same envelope (held-out set 13).  The
fixture's real H200 points carry the slots; a second kernel of a family is a studied point relabelled
here, since the fixture studied one kernel per family."""

import collections
import dataclasses

import distill_fixtures as fx
import pytest

from inductor_tune import crossmeasure, distill, evidence
from inductor_tune.shapes import ALIGNMENT_CLASSES

ROUND = ("2026-11-25T10:00", "sqlite:///r1.sqlite", "71")
TWIN = "llama_rmsnorm_fwd"  # the name the relabelled studied point takes


@pytest.fixture(scope="module")
def points():
    return list(fx.fixture_points()[1])


def _looped_sum(points):
    """The fixture's looped RMSNorm forward points and their family."""
    studied = [p for p in points if not p.probe and p.kind == "inner_looped" and p.kernel == "rmsnorm_fwd"]
    assert len({p.r_pow2 for p in studied}) >= 2
    return studied, studied[0].family


def _with_twin(points):
    """The points, plus one studied point of another kernel of the looped RMSNorm family, in its lowest
    N bucket only: the other buckets' probes of that kernel must borrow its slot across buckets."""
    studied, family = _looped_sum(points)
    low = min(studied, key=lambda p: (p.r_pow2, p.rows))
    twin = dataclasses.replace(low, kernel=TWIN, rows=low.rows + 1, slot=dataclasses.replace(low.slot, xnumel=low.rows + 1))
    return [*points, twin], twin, family


def test_probe_parent_prefers_its_own_bucket_and_crosses_buckets_only_when_asked(points):
    pts, twin, family = _with_twin(points)
    r = max(p.r_pow2 for p in pts if p.family == family and not p.probe)
    assert r > twin.r_pow2
    assert evidence.probe_parent(pts, TWIN, twin.dtype, 1000, r - 3, other_buckets=False) is None  # a row probe
    assert evidence.probe_parent(pts, TWIN, twin.dtype, 1000, r - 3) == twin
    own = evidence.probe_parent(pts, "rmsnorm_fwd", twin.dtype, 1000, r - 3)
    assert own.r_pow2 == r and own.kernel == "rmsnorm_fwd"
    assert evidence.span_kernels(pts, family, r) == ((TWIN, twin.dtype), ("rmsnorm_fwd", twin.dtype))
    assert evidence.span_kernels(points, family, r) == (("rmsnorm_fwd", twin.dtype),)


def test_each_groups_span_probes_take_its_familys_kernels_in_turn(points):
    pts, twin, family = _with_twin(points)
    per_group = len(ALIGNMENT_CLASSES)
    items = crossmeasure.span_probes(pts, per_group, seed=17)
    kernels = collections.defaultdict(list)
    for item in items:
        p = item.point
        kernels[(p.family, p.r_pow2)].append(p.kernel)
        assert p.span and p.slot.rnumel == p.cols and p.slot.xnumel == p.rows
    mine = {key: ks for key, ks in kernels.items() if key[0] == family}
    assert mine, "no config rule of the looped RMSNorm family got span probes"
    for (_, r), ks in mine.items():
        assert ks == [[TWIN, "rmsnorm_fwd"][k % 2] for k in range(per_group)], (r, ks)
    # A family with one kernel probes it alone, and the old placement (nearest studied shape) never
    # reaches a kernel its group did not study.
    assert all(len(set(ks)) == 1 for key, ks in kernels.items() if key[0] != family)
    old = crossmeasure.span_probes(pts, per_group, seed=17, params=distill.FitParams(probe_every_kernel=False))
    assert old and not any(i.point.kernel == TWIN and i.point.r_pow2 != twin.r_pow2 for i in old)


def test_edge_probes_take_every_kernel_of_a_rule_at_the_lowest_octave_of_its_rows(points):
    pts, twin, family = _with_twin(points)
    rules = [r for r in distill.fit_rules(pts) if r.config is not None and r.rows is not None]
    edge = crossmeasure.span_probes(pts, 0, seed=17, edge_per_kernel=2)
    assert edge and edge == crossmeasure.span_probes(pts, 0, seed=17, edge_per_kernel=2)
    kernels = collections.defaultdict(list)
    for item in edge:
        p = item.point
        assert p.span and p.slot.xnumel == p.rows and p.slot.rnumel == p.cols
        # Inside the lowest octave of the band of the rule that placed it (its config is timed first).
        assert any(r.config == item.configs[0] and r.rows[0] <= p.rows <= min(r.rows[1], 2 * r.rows[0])
                   and r.matches(p.kind, p.element_size, p.r_pow2, r.xnumel[0], p.reductions, p.envelope or None)
                   for r in rules), p.label
        kernels[(p.family, p.r_pow2, item.configs[0])].append(p)
    mine = {key: ps for key, ps in kernels.items() if key[0] == family}
    assert mine, "no config rule of the looped RMSNorm family got edge probes"
    for ps in mine.values():
        # Two per kernel, and the alignment classes turn on from one kernel to the next.
        assert sorted(p.kernel for p in ps) == sorted([TWIN, TWIN, "rmsnorm_fwd", "rmsnorm_fwd"])
        classes = [next(k for k, (m, res) in enumerate(ALIGNMENT_CLASSES) if p.cols % m == res) for p in ps]
        assert len(set(classes)) == len(ps), classes
    # The span probes of a seed are the same with edge probes as without them.
    span = crossmeasure.span_probes(pts, 3, seed=17)
    both = crossmeasure.span_probes(pts, 3, seed=17, edge_per_kernel=2)
    assert [i for i in both if i not in edge] == span


def _fitted_with_twin(points):
    """A rule fitted on two rows of one looped RMSNorm shape, at both ends of its octave of N, and one of a second
    kernel of its family.  A rule covers only the N its shapes were measured at, and a probe at any other N says
    nothing of it (``settle``): measured across the octave, it covers every N a round's probes take."""
    studied, _ = _looped_sum(points)
    for p in studied:
        ends = (p.r_pow2 // 2 + 1, p.r_pow2)
        for cfg in sorted(p.interleaved, key=lambda c: c.describe()):
            shapes = [dataclasses.replace(p, kernel=kernel, rows=p.rows + k, cols=cols,
                                          slot=dataclasses.replace(p.slot, xnumel=p.rows + k, rnumel=cols),
                                          speedups={cfg: 1.2}, noise=0.015, interleaved=frozenset({cfg}),
                                          failed=frozenset())
                      for k, (kernel, cols) in enumerate(zip(("rmsnorm_fwd", "rmsnorm_fwd", TWIN), (*ends, p.cols)))]
            rules = distill.fit_rules(shapes)
            if len(rules) == 1 and rules[0].config == cfg:
                return shapes, rules, cfg
    pytest.fail("the fixture has no looped RMSNorm point whose config a fit adopts")


def _round(point, cfg, kernels, ratio=1.1):
    """One span round in the rule's group: a probe per alignment class of N, kernels taken in turn."""
    probes = []
    for k, alignment in enumerate(ALIGNMENT_CLASSES):
        cols = crossmeasure.aligned_cols(point.r_pow2 * 3 // 4, point.r_pow2 // 2 + 1, point.r_pow2, alignment)
        probes.append(dataclasses.replace(
            point, kernel=kernels[k % len(kernels)], rows=point.rows + 10 + k, cols=cols,
            slot=dataclasses.replace(point.slot, xnumel=point.rows + 10 + k, rnumel=cols), speedups={cfg: ratio}, noise=0.005,
            interleaved=frozenset({cfg}), failed=frozenset(), probe=True, span=True, span_round=ROUND,
            placed_by=cfg))
    return probes


def test_a_rule_whose_latest_round_missed_a_kernel_of_its_envelope_is_held_back(points):
    shapes, rules, cfg = _fitted_with_twin(points)
    one_kernel = [*shapes, *_round(shapes[0], cfg, ["rmsnorm_fwd"])]
    held = distill.unsettled_rules(rules, one_kernel)
    assert list(held) == [0] and f"timed it at no probe of {TWIN} (bf16)" in held[0]
    assert not distill.unsettled_rules(rules, one_kernel, distill.FitParams(probe_every_kernel=False))
    assert not distill.unsettled_rules(rules, [*shapes, *_round(shapes[0], cfg, [TWIN, "rmsnorm_fwd"])])
    # The twin's probe that lost holds the rule back, whatever the other kernel's probes said.
    lost = _round(shapes[0], cfg, [TWIN, "rmsnorm_fwd"])
    lost[0] = dataclasses.replace(lost[0], speedups={cfg: 0.93})
    held = distill.unsettled_rules(rules, [*shapes, *lost])
    assert list(held) == [0] and "0.930" in held[0] and TWIN in held[0]


def test_a_later_round_of_one_kernel_leaves_the_other_kernels_latest_round_standing(points):
    """crossmeasure --kernels places a round for some kernels only: the others' own latest round still counts
    (a restricted round 11 held back LayerNorm rules of kernels it never probed, stop 40)."""
    shapes, rules, cfg = _fitted_with_twin(points)
    later = ("2026-11-26T16:00", "sqlite:///r2.sqlite", "111")
    one_kernel_later = [dataclasses.replace(p, span_round=later) for p in _round(shapes[0], cfg, ["rmsnorm_fwd"])]
    assert not distill.unsettled_rules(rules, [*shapes, *_round(shapes[0], cfg, [TWIN, "rmsnorm_fwd"]),
                                               *one_kernel_later])
    # The twin's latest round is the earlier one: its loss there still holds the rule back.
    lost = _round(shapes[0], cfg, [TWIN, "rmsnorm_fwd"])
    lost[0] = dataclasses.replace(lost[0], speedups={cfg: 0.93})
    held = distill.unsettled_rules(rules, [*shapes, *lost, *one_kernel_later])
    assert list(held) == [0] and "0.930" in held[0] and TWIN in held[0] and "rounds of its kernels" in held[0]


def test_a_rule_whose_shapes_are_all_probes_is_probed_again(points):
    """A row band or N bucket whose evidence is span probes alone (its studies lie in other buckets) must be
    probed by later rounds too: it ships only once its latest round timed every alignment class, so a
    round that skipped it held it back for good (nine fitted H200 rules, docs/rules.md, stop 31)."""
    studied, family = _looped_sum(points)
    r = max(p.r_pow2 for p in studied)
    top = max((p for p in studied if p.r_pow2 == r), key=lambda p: p.rows)
    rest = [p for p in points if not (p.family == family and p.r_pow2 == r and not p.probe)]
    for cfg in sorted(top.interleaved, key=lambda c: c.describe()):
        probed = [*rest, *_round(top, cfg, ["rmsnorm_fwd"], ratio=1.3)]
        rule = next((x for x in distill.fit_rules(probed) if x.config == cfg and x.rnumel == (r, r)
                     and x.matches(top.kind, top.element_size, r, x.xnumel[0], top.reductions, top.envelope or None)),
                    None)
        if rule is not None:
            break
    else:
        pytest.fail("no config of the fixture's top looped RMSNorm shape is adopted from probes alone")
    assert not any(p.r_pow2 == r and p.family == family and not p.probe for p in probed)
    items = crossmeasure.span_probes(probed, len(ALIGNMENT_CLASSES), seed=17, edge_per_kernel=1)
    mine = [i for i in items if i.point.family == family and i.point.r_pow2 == r]
    assert len(mine) == len(ALIGNMENT_CLASSES) + 1, [i.point.label for i in mine]
    assert all(i.configs[0] == cfg for i in mine)
    assert {next(k for k, (m, res) in enumerate(ALIGNMENT_CLASSES) if i.point.cols % m == res)
            for i in mine[:len(ALIGNMENT_CLASSES)]} == set(range(len(ALIGNMENT_CLASSES)))
