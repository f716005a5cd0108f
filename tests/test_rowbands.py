"""Where no config serves a whole size group, the fit splits its rows in two bands and fits each
(``rowbands``, ``FitParams.split_rows``).  On an H200 a persistent RMSNorm forward config won 1.2-1.8x
at 114003 and 262144 rows and lost at one probe of 2076 rows, so the one rule of its group kept the
default everywhere.  Or in N (``FitParams.split_cols``), where a config loses at the power of two only.  The
fixture's real H200 points carry the slots; rows, N and speedups are set here."""

import dataclasses

import distill_fixtures as fx
import fast_yaml
import pytest

from inductor_tune import crossmeasure, distill, heuristics, rowbands

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
    # A clean round in the high band, one probe of every alignment class of N.
    clean = [_probe(point, cfg, 70000 + k, cols, 1.3) for k, cols in enumerate(_aligned(point.r_pow2))]
    # Measured at one N, the rule covers that N alone, and probes at any other N say nothing of it.
    rules = distill.fit_rules(group)
    assert rules[1].cols == (point.cols, point.cols) and not any(p.cols == point.cols for p in clean)
    unsettled = distill.unsettled_rules(rules, [*group, *clean])
    assert unsettled == {1: "no span-probe round has timed it inside its span yet"}
    # Measured across the octave, the rule covers it, and the probes settle it.
    group[2] = _with_cols(group[2], point.r_pow2 // 2 + 1)
    rules = distill.fit_rules(group)
    assert not distill.unsettled_rules(rules, [*group, *clean])
    assert not distill.unsettled_rules(rules, [*group, *clean, _probe(point, cfg, 3000, point.cols, 0.80)])
    assert list(distill.unsettled_rules(rules, [*group, *clean, _probe(point, cfg, 100000, point.cols, 0.80)])) == [1]


def _probe(point, cfg, rows, cols, ratio):
    return _with_cols(_at(point, cfg, rows, ratio, probe=True, span=True, span_round=SPAN_ROUND, placed_by=cfg), cols)


def _with_cols(point, cols):
    return dataclasses.replace(point, cols=cols, slot=dataclasses.replace(point.slot, rnumel=cols))


def _aligned(r_pow2):
    from inductor_tune.shapes import ALIGNMENT_CLASSES
    return [crossmeasure.aligned_cols(r_pow2 * 3 // 4, r_pow2 // 2 + 1, r_pow2, a) for a in ALIGNMENT_CLASSES]


def test_span_probes_of_a_band_stay_in_its_rows(base):
    point, cfg = base
    group = _group(point, cfg, LOSES_LOW)
    # The high band measured across its octave of N, so that its rule's N span holds every alignment class.
    group[2] = _with_cols(group[2], point.r_pow2 // 2 + 1)
    high = distill.fit_rules(group)[1]
    assert high.config == cfg and high.cols == (point.r_pow2 // 2 + 1, point.r_pow2)
    items = crossmeasure.span_probes(group, 6, seed=3)
    assert len(items) == 6
    assert all(65536 <= i.point.rows <= 262144 and i.configs[0] == cfg for i in items)
    assert all(high.cols[0] <= i.point.cols <= high.cols[1] for i in items)


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


def _at_n(point, cfg, rows, cols, ratio):
    return _with_cols(_at(point, cfg, rows, ratio), cols)


def _octave(r):
    """Three N below the power of two r, in three eighths of its octave, and r itself."""
    return r // 2 + r // 8, r // 2 + r // 4, r - r // 8, r


def test_a_group_whose_config_loses_at_the_power_of_two_is_cut_in_n(base):
    """On an H200 the LayerNorm forwards at N 4097..8192 had configs that won at N 4272..7374 and lost at N = 8192
    exactly, where Inductor's default needs no mask (stop 41): a cut in N serves the rest of the octave."""
    point, cfg = base
    *below, r = _octave(point.r_pow2)
    group = [_at_n(point, cfg, rows, cols, 1.3) for rows in (2048, 65536) for cols in below]
    group += [_at_n(point, cfg, rows, r, 0.85) for rows in (2048, 65536)]
    assert [x.config for x in distill.fit_rules(group, distill.FitParams(split_cols=False))] == [None]
    low, high = distill.fit_rules(group)
    assert low.config == cfg and low.cols == (below[0], below[-1]) and len(low.evidence.shapes) == 6
    assert high.config is None and high.cols == (r, r)
    # Both cover the family's rows; N between the two sides, never measured, has no rule.
    assert low.xnumel == high.xnumel == (2048, 65536) and low.rows == high.rows == (2048, 65536)
    assert not any(x.matches(point.kind, point.element_size, r, 4096, point.reductions, point.envelope or None,
                             cols=below[-1] + 1) for x in (low, high))
    # The file keeps them as two rules: their N spans part them (``heuristics.parse``).
    text = heuristics.to_yaml(heuristics.Heuristics(fx.fixture_points()[0], (low, high)))
    parsed = heuristics.parse(fast_yaml.safe_load(text), "h.yaml").rules
    assert [(x.xnumel, x.cols, x.config) for x in parsed] == [(x.xnumel, x.cols, x.config) for x in (low, high)]


def test_a_row_band_no_config_serves_is_cut_again_in_n(base):
    """Few rows won at every N; many rows won at the top quarter of the octave only: three bands."""
    point, cfg = base
    octave = _octave(point.r_pow2)
    group = [_at_n(point, cfg, rows, cols, 1.3) for rows in (2048, 4096, 8192) for cols in octave]
    group += [_at_n(point, cfg, rows, cols, 1.3 if cols >= octave[2] else 0.85) for rows in (65536, 131072)
              for cols in octave]
    rules = distill.fit_rules(group)
    assert [(x.xnumel, x.cols, x.config) for x in rules] == [
        ((2048, 8192), (octave[0], octave[3]), cfg), ((65536, 131072), (octave[0], octave[1]), None),
        ((65536, 131072), (octave[2], octave[3]), cfg)]
    assert [x.config for x in distill.fit_rules(group, distill.FitParams(split_cols=False))] == [cfg, None]


def test_cuts_in_n_fall_between_eighths_of_the_octave_and_below_its_power_of_two():
    r = 8192
    assert [rowbands.n_part(n, r) for n in (4097, 4608, 4609, 7374, 8191, 8192)] == [1, 1, 2, 7, 8, 9]
    point = fx.fixture_points()[1][0]

    def at(*ns):
        return [dataclasses.replace(point, cols=n, slot=dataclasses.replace(point.slot, rnumel=n)) for n in ns]

    assert not list(rowbands.col_cuts(at(5, 6, 7, 8), 1))  # an octave of four N is not cut
    assert len(list(rowbands.col_cuts(at(10, 12, 14, 16), 1))) == 3  # one of eight is
