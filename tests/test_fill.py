"""``crossmeasure --fill``: where no adoptable config of a size group was timed at all of its shapes, its leading
adoptable candidates are timed at the shapes that lack them, and a span probe timed again that way stays
a span probe of its round."""

import math

import distill_fixtures as fx
import pytest
from fake_pools import TimedByConfig

from inductor_tune import cli, crossmeasure, distill, fill
from inductor_tune.evidence import ShapePoint
from inductor_tune.fitparams import FitParams
from inductor_tune.runtime.launch import KernelSlot
from inductor_tune.space import SlotConfig
from inductor_tune.store import Store

LEAD = SlotConfig(True, 1, 4)
SECOND = SlotConfig(True, 2, 8)
LOSER = SlotConfig(True, 1, 2)
UNCUT = FitParams(split_rows=False)


def _point(rows: int, speedups: dict, cols: int = 1500) -> ShapePoint:
    slot = KernelSlot(f"fw.red.x{rows}.r{cols}", False, rows, cols, False, False, "sum", "row_reads=1")
    return ShapePoint("rmsnorm_fwd", rows, cols, "bf16", "inner_looped", "sum", slot, speedups, 0.0, ("study",),
                      interleaved=frozenset(speedups))


def _group(extra=None):
    """Four shapes of one size group: LEAD timed at three, SECOND and LOSER at the first only."""
    return [_point(4096, {LEAD: 1.2, SECOND: 1.3, LOSER: 0.9}), _point(8192, {LEAD: 1.2}),
            _point(16384, {LEAD: 1.25}), _point(32768, extra or {})]


def _planned(items):
    return {(i.point.rows, i.configs) for i in items}


def test_the_leading_candidate_is_timed_where_it_is_missing_and_a_losing_one_never():
    assert _planned(fill.fill_plan(_group(), 1)) == {(32768, (LEAD,))}
    # The next candidate joins at every shape that lacks it; LOSER lost where it was timed and is never filled.
    for per_set in (2, 3):
        assert _planned(fill.fill_plan(_group(), per_set)) == {(8192, (SECOND,)), (16384, (SECOND,)),
                                                               (32768, (LEAD, SECOND))}
    (item,) = fill.fill_plan(_group(), 1)
    # A record naming proposers is no span probe (evidence._is_span); with none on record it names the fill.
    assert item.origins == ((fill.FILL_ORIGIN,),) and all(item.origins)


def test_a_group_with_a_covered_config_is_left_alone():
    assert fill.fill_plan(_group({LEAD: 1.1}), 2) == []


def test_a_group_whose_covered_config_loses_fills_its_next_candidate():
    # LEAD is timed at all four shapes but loses at 32768: the group keeps the default, so SECOND (no loss
    # where timed, at a quarter of the shapes) is timed where it is missing; LEAD is never planned again.
    assert _planned(fill.fill_plan(_group({LEAD: 0.8}), 2)) == {(8192, (SECOND,)), (16384, (SECOND,)),
                                                                (32768, (SECOND,))}


def test_a_candidate_timed_at_less_than_a_fifth_of_the_shapes_is_not_filled():
    six = [*_group(), _point(65536, {}), _point(131072, {})]
    # One set of six shapes: a row band of two (``rowbands.cuts``) would hold SECOND at half of its shapes.
    assert _planned(fill.fill_plan(six, 2, UNCUT)) == {(32768, (LEAD,)), (65536, (LEAD,)), (131072, (LEAD,))}  # SECOND: 1 of 6


def test_every_cut_of_a_group_is_filled_not_only_the_one_the_fit_chooses():
    # LEAD loses at 1024 rows and was never timed at 16384, so the fit cuts at 65536 rows today and both of that
    # cut's bands are settled (the low one by LEAD's loss). Timing LEAD at 16384 lets the cut move down to 4096 rows.
    group = [_point(1024, {LEAD: 0.9}), _point(4096, {LEAD: 1.2}), _point(8192, {LEAD: 1.2}), _point(16384, {}),
             _point(65536, {LEAD: 1.3}), _point(131072, {LEAD: 1.3})]
    bands = distill.row_bands("inner_looped", distill.fit_group(group, FitParams()), (1024, 131072), FitParams())
    assert [band.xnumel for band in bands] == [(1024, 16384), (65536, 131072)]
    assert _planned(fill.fill_plan(group, 1)) == {(16384, (LEAD,))}
    assert fill.fill_plan(group, 1, UNCUT) == []


def _load(paths):
    opened = fx.stores([*fx.fixture_dbs(), *map(str, paths)])
    return distill.load_points(opened, distill.select_gpu(opened, "H200"))[0]


def test_a_span_probe_timed_again_by_a_fill_keeps_its_round_and_placing_config(tmp_path):
    points = list(fx.fixture_points()[1])
    items = crossmeasure.span_probes(points, 1, seed=3)
    span_db = tmp_path / "span.sqlite"
    assert crossmeasure.run(items, TimedByConfig(), Store(f"sqlite:///{span_db}"), rounds=3, span_seed=3)["stored"]
    before = {p.label: p for p in _load([span_db]) if p.span}
    item = items[0]
    probe = before[item.point.label]
    extra = next(c for p in points for c in p.speedups
                 if c not in item.configs and c not in probe.speedups and (*p.family, p.r_pow2) ==
                 (*probe.family, probe.r_pow2))
    fill_db = tmp_path / "fill.sqlite"
    filled = crossmeasure.PlanItem(probe, (extra,), ((fill.FILL_ORIGIN,),))
    assert crossmeasure.run([filled], TimedByConfig(), Store(f"sqlite:///{fill_db}"), rounds=3)["stored"] == 1
    after = {p.label: p for p in _load([span_db, fill_db])}[probe.label]
    assert after.span and after.span_round == probe.span_round and after.placed_by == probe.placed_by
    assert after.speedups[extra] == pytest.approx(1 / 0.9) and extra in after.interleaved
    assert set(probe.speedups) < set(after.speedups)


def test_cli_fill_plans_and_refuses_what_it_cannot_do(tmp_path, capsys):
    dbs = [str(p) for p in fx.fixture_dbs()]
    storage = tmp_path / "fill.sqlite"
    base = ["crossmeasure", *dbs, "--storage", str(storage), "--plan-only", "H200"]
    assert cli.main([*base, "--fill", "1"]) == 0
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1].endswith("(shape, config) pairs") and not storage.exists()
    for argv, message in [
        (["--fill", "-1"], "--fill at least 0"),
        (["--fill", "1", "--span-probes", "5"], "--fill times the shapes already measured"),
        (["--fill", "1", "--replay", dbs[0]], "--fill with --replay"),
    ]:
        assert cli.main([*base, *argv]) == 2, argv
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert line.startswith("inductor-tune: error: ") and message in line, line
    assert not storage.exists()


def test_a_lower_share_fills_a_candidate_timed_at_fewer_shapes():
    six = [*_group(), _point(65536, {}), _point(131072, {})]
    planned = _planned(fill.fill_plan(six, 2, UNCUT, min_share=0.1))  # SECOND, timed at 1 of 6, now passes
    assert (65536, (LEAD, SECOND)) in planned and (8192, (SECOND,)) in planned


@pytest.mark.parametrize("argv, message", [
    (["--fill-share", "0.1"], "--fill-share goes with --fill"),
    (["--fill", "1", "--fill-share", "1.5"], "0 to 1, not 1.5"),
    (["--fill", "1", "--fill-share", "-0.1"], "0 to 1, not -0.1"),
    (["--fill-shapes", "10"], "--fill-shapes goes with --fill"),
    (["--fill", "1", "--fill-shapes", "0"], "at least 1, not 0"),
])
def test_fill_share_or_shapes_out_of_range_or_alone_is_refused(capsys, argv, message):
    assert cli.main(["crossmeasure", "db/quack.sqlite", "--plan-only", "H200", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("inductor-tune: error:") and message in err and err.count("\n") == 1


def test_both_sides_of_a_cut_in_n_are_filled():
    """LEAD wins below the power of two and loses at it, at few rows and at many: no cut in rows isolates the N it
    wins at, a cut in N does (``rowbands.col_cuts``), and the fill plans LEAD where that side lacks it."""
    def at(rows, cols, speedups):
        slot = KernelSlot(f"fw.red.x{rows}.r{cols}", False, rows, cols, False, False, "sum", "row_reads=1")
        return ShapePoint("rmsnorm_fwd", rows, cols, "bf16", "inner_looped", "sum", slot, speedups, 0.0, ("study",),
                          interleaved=frozenset(speedups))

    group = [at(4096, 2048, {LEAD: 0.8}), at(8192, 1100, {LEAD: 1.2}), at(16384, 1300, {LEAD: 1.2}),
             at(32768, 1500, {}), at(65536, 2048, {LEAD: 0.8})]
    assert fill.fill_plan(group, 1, FitParams(split_cols=False)) == []
    assert _planned(fill.fill_plan(group, 1)) == {(32768, (LEAD,))}


def test_a_shape_budget_takes_the_sets_furthest_from_the_best_found_per_shape_to_time():
    # The first group's default is 1.95x short of its best found over 1 shape to time (0.668 in log per shape), the
    # second's 4x over 2 (0.693 per shape): the second comes first, and a budget of 1 passes it for the first.
    first = _group()
    second = [_point(4096, {LEAD: 4.0}, 3000), _point(8192, {}, 3000), _point(16384, {}, 3000)]
    assert _planned(fill.fill_plan(first + second, 1, UNCUT, min_share=0)) == {(32768, (LEAD,)), (8192, (LEAD,)),
                                                                              (16384, (LEAD,))}
    assert _planned(fill.fill_plan(first + second, 1, UNCUT, min_share=0, max_shapes=2)) == {(8192, (LEAD,)),
                                                                                            (16384, (LEAD,))}
    assert _planned(fill.fill_plan(first + second, 1, UNCUT, min_share=0, max_shapes=1)) == {(32768, (LEAD,))}


def test_a_set_a_rule_already_serves_is_ranked_by_what_the_rule_leaves_not_by_the_default():
    # The first set's default is 1.95x short over 1 shape to time and the second's 4x over 2; but where a rule
    # already launches the second set's best found, nothing is left there to win and the first comes first.
    first, second = _group(), [_point(4096, {LEAD: 4.0}, 3000), _point(8192, {}, 3000), _point(16384, {}, 3000)]
    chosen = [(tuple(s), fill.leading_uncovered(s, 1, UNCUT, 0)) for s in (first, second)]
    by_default = {fill._key(p): math.log(p.best) for p in first + second}
    served = {**by_default, **{fill._key(p): 0.0 for p in second}}
    assert [s[0][0].cols for s in fill.within(chosen, 2, by_default)] == [3000]
    assert [s[0][0].cols for s in fill.within(chosen, 2, served)] == [1500]
