"""Where no config serves a whole size group, the fit splits its rows in two bands and fits each
(``rowbands``, ``FitParams.split_rows``).  On an H200 a persistent RMSNorm forward config won 1.2-1.8x
at 114003 and 262144 rows and lost at one probe of 2076 rows, so the one rule of its group kept the
default everywhere.  The fixture's real H200 points carry the slots; rows and speedups are set here."""

import dataclasses

import distill_fixtures as fx
import pytest

from inductor_tune import crossmeasure, distill, rowbands

SPAN_ROUND = ("2026-11-25T10:00", "sqlite:///r1.sqlite", "1")


@pytest.fixture(scope="module")
def base():
    """A real studied point of a kind that launches rows / XBLOCK programs (a fused mix-order backward's
    rules cover their own rows already), with an interleaved config that a fit adopts where it wins."""
    for p in fx.fixture_points()[1]:
        if p.interleaved and not p.probe and p.kind != "mix_order":
            cfg = sorted(p.interleaved, key=lambda c: c.describe())[0]
            if distill.fit_rules([_at(p, cfg, 4096, 1.2), _at(p, cfg, 65536, 1.2)])[0].config == cfg:
                return p, cfg
    pytest.fail("the fixture has no point whose config a fit adopts")


def _at(point, cfg, rows, ratio, **extra):
    return dataclasses.replace(point, rows=rows, slot=dataclasses.replace(point.slot, xnumel=rows),
                               speedups={cfg: ratio}, noise=0.015, interleaved=frozenset({cfg}),
                               failed=frozenset(), **extra)


def _group(point, cfg, ratios):
    """One size group measured at each (rows, ratio) given."""
    return [_at(point, cfg, rows, ratio) for rows, ratio in ratios]


LOSES_LOW = ((2048, 0.90), (4096, 0.95), (65536, 1.30), (131072, 1.40), (262144, 1.50))


def test_a_group_whose_config_loses_at_few_rows_ships_it_at_many(base):
    point, cfg = base
    group = _group(point, cfg, LOSES_LOW)
    whole = distill.fit_rules(group, distill.FitParams(split_rows=False))
    assert [r.config for r in whole] == [None]  # one loss keeps the whole group at the default
    low, high = distill.fit_rules(group)
    assert low.config is None and low.xnumel == (2048, 4096) and low.rows == (2048, 4096)
    assert high.config == cfg and high.xnumel == (65536, 262144) and high.rows == (65536, 262144)
    assert high.evidence.gain_min == 1.30 and len(high.evidence.shapes) == 3
    # Rows between the bands, which the group never measured, have no rule: Inductor's default.
    assert not any(r.matches(point.kind, point.element_size, point.r_pow2, 16384, point.reductions,
                             point.envelope or None) for r in (low, high))


def test_a_config_that_serves_every_row_is_not_split(base):
    point, cfg = base
    group = _group(point, cfg, [(rows, 1.3) for rows, _ in LOSES_LOW])
    assert distill.fit_rules(group) == distill.fit_rules(group, distill.FitParams(split_rows=False))
    [rule] = distill.fit_rules(group)
    assert rule.config == cfg and rule.xnumel == (2048, 262144)


def test_a_band_needs_enough_shapes(base):
    point, cfg = base
    group = _group(point, cfg, ((2048, 0.90), (4096, 1.30), (65536, 1.30)))
    # The best cut leaves one shape below: allowed at 1 shape a band, not at 2.
    assert [r.config for r in distill.fit_rules(group, distill.FitParams(min_band_shapes=1))] == [None, cfg]
    assert [r.config for r in distill.fit_rules(group)] == [None]


def test_the_cut_serving_most_shapes_wins(base):
    point, cfg = base
    group = _group(point, cfg, ((2048, 1.30), (4096, 1.30), (8192, 1.30), (65536, 0.90), (131072, 1.30)))
    bands = rowbands.split(group, lambda pts: distill.fit_group(pts, distill.FitParams()), (2048, 131072))
    assert bands[0].xnumel == (2048, 8192) and bands[0].fit.config == cfg
    assert bands[1].xnumel == (65536, 131072) and bands[1].fit.config is None


def test_a_band_is_settled_by_probes_at_its_own_rows(base):
    """A span probe lost at few rows holds back the rule of that band, not the band above it."""
    point, cfg = base
    group = _group(point, cfg, LOSES_LOW)
    rules = distill.fit_rules(group)
    # A clean round in the high band, one probe of every alignment class of N.
    clean = [_probe(point, cfg, 70000 + k, cols, 1.3) for k, cols in enumerate(_aligned(point.r_pow2))]
    assert not distill.unsettled_rules(rules, [*group, *clean])
    assert not distill.unsettled_rules(rules, [*group, *clean, _probe(point, cfg, 3000, point.cols, 0.80)])
    assert list(distill.unsettled_rules(rules, [*group, *clean, _probe(point, cfg, 100000, point.cols, 0.80)])) == [1]


def _probe(point, cfg, rows, cols, ratio):
    probe = _at(point, cfg, rows, ratio, probe=True, span=True, span_round=SPAN_ROUND, placed_by=cfg)
    return dataclasses.replace(probe, cols=cols, slot=dataclasses.replace(probe.slot, rnumel=cols))


def _aligned(r_pow2):
    from inductor_tune.shapes import ALIGNMENT_CLASSES
    return [crossmeasure.aligned_cols(r_pow2 * 3 // 4, r_pow2 // 2 + 1, r_pow2, a) for a in ALIGNMENT_CLASSES]


def test_span_probes_of_a_band_stay_in_its_rows(base):
    point, cfg = base
    group = _group(point, cfg, LOSES_LOW)
    items = crossmeasure.span_probes(group, 6, seed=3)
    assert len(items) == 6
    assert all(65536 <= i.point.rows <= 262144 and i.configs[0] == cfg for i in items)


def test_a_fused_mix_order_group_is_split_and_each_band_covers_only_its_own_rows():
    mix = next((p, sorted(p.interleaved, key=lambda c: c.describe())[0]) for p in fx.fixture_points()[1]
               if p.interleaved and not p.probe and p.kind == "mix_order")
    point, cfg = mix
    group = _group(point, cfg, ((2048, 0.90), (4096, 0.95), (32768, 1.30), (65536, 1.40)))
    assert [r.config for r in distill.fit_rules(group, distill.FitParams(split_mix_rows=False))] == [None]
    low, high = distill.fit_rules(group)
    assert low.config is None and high.config == cfg
    # A mix-order band covers its own shapes' rows, never up to the family's most rows: its split sets its grid.
    assert high.xnumel == (32768, 65536) and high.rows == (32768, 65536)
    assert low.xnumel == (2048, 4096)
