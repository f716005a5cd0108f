"""A rule ships a config only once the latest span-probe round in its own span timed that config and
found no loss there (``distill.unsettled_rules``, ``FitParams.settle_by = "rule"``).  Since span probes
take N from every alignment class, each H200 round found some small loss in one or two of ~30
inner-looped rules, and holding back the whole kind for it shipped nothing.  The round must also have
timed the config at N of every alignment class the rule applies at.  The fixture's real H200
points carry the slots; rules and speedups are set here so that each condition is tested alone."""

import dataclasses

import distill_fixtures as fx
import pytest

from inductor_tune import crossmeasure, distill, settle
from inductor_tune.shapes import ALIGNMENT_CLASSES

ROUND_1 = ("2026-11-23T10:00", "sqlite:///r1.sqlite", "1")
ROUND_2 = ("2026-11-23T11:00", "sqlite:///r2.sqlite", "2")


@pytest.fixture(scope="module")
def fitted():
    """A real point with an interleaved config, two copies of it at other rows and at both ends of its octave
    of N, and the rule a fit of both adopts for that config.  A rule covers only the N its shapes were measured
    at, and a probe at any other N says nothing of it (``settle``): measured across the octave, it covers every N
    a round's probes take."""
    for p in fx.fixture_points()[1]:
        if p.interleaved and not p.probe:
            cfg = sorted(p.interleaved, key=lambda c: c.describe())[0]
            pair = [dataclasses.replace(p, rows=p.rows + k, cols=cols, slot=dataclasses.replace(p.slot, rnumel=cols),
                                        speedups={cfg: 1.2}, noise=0.015, interleaved=frozenset({cfg}),
                                        failed=frozenset())
                    for k, cols in enumerate((p.r_pow2 // 2 + 1, p.r_pow2))]
            rules = distill.fit_rules(pair)
            if len(rules) == 1 and rules[0].config == cfg:
                return pair, rules, cfg
    pytest.fail("the fixture has no point whose config a fit adopts")


def _probe(point, config, ratio, span_round, rnumel=None):
    """One span probe of ``point``'s group, or of the same kind's group at ``rnumel`` (another rule's span)."""
    if rnumel is not None:
        point = dataclasses.replace(point, cols=rnumel, slot=dataclasses.replace(point.slot, rnumel=rnumel))
    return dataclasses.replace(point, rows=point.rows + 7, speedups={config: ratio}, noise=0.005,
                               interleaved=frozenset({config}), failed=frozenset(), probe=True, span=True,
                               span_round=span_round, placed_by=config)


def _round(point, config, ratio, span_round, rnumel=None):
    """A round's probes of one group: one per alignment class of N, as ``crossmeasure.span_probes`` places them."""
    probes = []
    for k, alignment in enumerate(ALIGNMENT_CLASSES):
        probe = _probe(point, config, ratio, span_round, rnumel)
        cols = crossmeasure.aligned_cols(probe.r_pow2 * 3 // 4, probe.r_pow2 // 2 + 1, probe.r_pow2, alignment)
        probes.append(dataclasses.replace(probe, rows=probe.rows + k, cols=cols,
                                          slot=dataclasses.replace(probe.slot, rnumel=cols)))
    return probes


def test_a_loss_in_the_latest_round_in_its_span_holds_the_rule_back(fitted):
    pair, rules, cfg = fitted
    held = distill.unsettled_rules(rules, [*pair, *_round(pair[0], cfg, 1.10, ROUND_1),
                                           _probe(pair[0], cfg, 0.94, ROUND_1)])
    assert list(held) == [0] and "slower than the default beyond noise" in held[0] and "0.940" in held[0]
    assert not distill.unsettled_rules(rules, [*pair, *_round(pair[0], cfg, 1.10, ROUND_1)])


def test_only_the_latest_round_in_its_span_counts(fitted):
    pair, rules, cfg = fitted
    lost, clean = _round(pair[0], cfg, 0.94, ROUND_1), _round(pair[1], cfg, 1.05, ROUND_2)
    assert not distill.unsettled_rules(rules, [*pair, *lost, *clean])
    assert distill.unsettled_rules(rules, [*pair, *(dataclasses.replace(p, span_round=ROUND_2) for p in lost),
                                           *(dataclasses.replace(p, span_round=ROUND_1) for p in clean)])


def _every_class(rule):
    """The rule as if its evidence held N of every alignment class over its whole span."""
    return dataclasses.replace(rule, aligned_cols=tuple((m, r, *rule.cols) for m, r in ALIGNMENT_CLASSES))


def test_a_round_that_missed_an_alignment_class_holds_the_rule_back(fitted):
    """On an H200 a rule that won at 60 shapes lost 12-15 % at N = 4 (mod 8), a class its evidence held once."""
    pair, rules, cfg = fitted
    rules = [_every_class(rules[0])]
    probes = _round(pair[0], cfg, 1.10, ROUND_1)
    for k, (modulus, residue) in enumerate(ALIGNMENT_CLASSES):
        held = distill.unsettled_rules(rules, [*pair, *probes[:k], *probes[k + 1:]])
        assert list(held) == [0] and f"timed it at no N = {residue} (mod {modulus})" in held[0]


def test_only_the_classes_a_rule_applies_at_must_be_timed(fitted):
    """A rule launches Inductor's default at N of a class its evidence does not hold (``cols_by_alignment``), so it
    need not wait for a probe there: waiting held back for good every rule of a single N (of the 34 rules stop 68's
    refit held back, 11 wait only for such classes, among them 7 fused backwards of one N, 256..8192)."""
    pair, rules, cfg = fitted
    named = {(m, r) for m, r, _, _ in rules[0].aligned_cols}
    assert named and named != set(ALIGNMENT_CLASSES)  # the fixture's evidence: N 1025 and 2048 only
    probes = _round(pair[0], cfg, 1.10, ROUND_1)
    for k, (modulus, residue) in enumerate(ALIGNMENT_CLASSES):
        held = distill.unsettled_rules(rules, [*pair, *probes[:k], *probes[k + 1:]])
        if (modulus, residue) in named:
            assert list(held) == [0] and f"timed it at no N = {residue} (mod {modulus})" in held[0]
        else:
            assert not held
            old = distill.unsettled_rules(rules, [*pair, *probes[:k], *probes[k + 1:]],
                                          distill.FitParams(settle_applied_classes=False))
            assert list(old) == [0] and f"timed it at no N = {residue} (mod {modulus})" in old[0]


def test_a_rule_of_one_n_needs_that_n_alone(fitted):
    """Without class spans a rule applies at every N of its span: a span of one N holds one class."""
    pair, rules, cfg = fitted
    n = pair[1].cols  # a power of two: 0 (mod 16)
    rule = dataclasses.replace(rules[0], cols=(n, n), aligned_cols=(), odd_hull=())
    probe = dataclasses.replace(_probe(pair[1], cfg, 1.10, ROUND_1), cols=n)
    assert not distill.unsettled_rules([rule], [*pair, probe])
    assert distill.unsettled_rules([rule], [*pair, probe], distill.FitParams(settle_applied_classes=False))
    assert settle.applied_classes(rule) == [(16, 0)]
    assert settle.applied_classes(dataclasses.replace(rule, cols=(n - 8, n))) == list(ALIGNMENT_CLASSES)
    assert settle.applied_classes(dataclasses.replace(rule, cols=(n + 1, n + 3))) == [(4, 2), (2, 1)]


def test_a_config_the_latest_round_did_not_time_is_held_back(fitted):
    pair, rules, cfg = fitted
    probe = dataclasses.replace(_probe(pair[0], cfg, 1.10, ROUND_1), speedups={}, interleaved=frozenset(),
                                placed_by=None)
    held = distill.unsettled_rules(rules, [*pair, probe])
    assert list(held) == [0] and "not yet timed" in held[0]


def test_a_rule_of_a_probed_kind_with_no_probe_in_its_span_is_held_back(fitted):
    pair, rules, cfg = fitted
    # A probe of the same kind in another size group: the kind was probed, this rule's span was not.
    elsewhere = _probe(pair[0], cfg, 1.10, ROUND_1, rnumel=pair[0].r_pow2 * 4)
    assert elsewhere.r_pow2 != pair[0].r_pow2
    held = distill.unsettled_rules(rules, [*pair, elsewhere])
    assert list(held) == [0] and "no span-probe round" in held[0]
    assert not distill.unsettled_rules(rules, pair)  # data from before span probes: nothing held back


def test_a_loss_in_another_rules_span_does_not_hold_this_one_back(fitted):
    pair, rules, cfg = fitted
    elsewhere = _probe(pair[0], cfg, 0.90, ROUND_1, rnumel=pair[0].r_pow2 * 4)
    points = [*pair, *_round(pair[0], cfg, 1.10, ROUND_1), elsewhere]
    assert not distill.unsettled_rules(rules, points)
    assert pair[0].kind in distill.unsettled_kinds(points)  # which "kind" settling would have held back


def test_settled_rules_are_shipped_and_held_back_ones_keep_the_default_saying_why(fitted):
    pair, rules, cfg = fitted
    lost = _probe(pair[0], cfg, 0.94, ROUND_1)
    settled = distill.settle_rules(rules, distill.unsettled_rules(rules, [*pair, lost]))
    assert settled[0].config is None and settled[0].evidence.note.startswith(f"fitted {cfg.describe()}, not shipped:")
    assert distill.settle_rules(rules, {}) == list(rules)
