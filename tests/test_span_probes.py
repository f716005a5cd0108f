"""Span probes (`crossmeasure --span-probes`): random rows and N inside the span of every rule that sets
a config, timed with that config and its group's covered candidates; distill must make the rule hold
there.  The plan runs on the fixture's real H200 studies; the timings are made up by a scripted pool
(a deterministic function of the config), so only the bookkeeping and the fit's logic are checked."""

import collections
import dataclasses
import json
import os
import re

import distill_fixtures as fx
import pytest
from fake_pools import TimedByConfig

from inductor_tune import cli, crossmeasure, distill, gate
from inductor_tune.runtime import torch_rules
from inductor_tune.space import slot_violations
from inductor_tune.store import Store

GiB = 2**30


@pytest.fixture(scope="module")
def points():
    return list(fx.fixture_points()[1])


@pytest.fixture(scope="module")
def spanning(points):
    """The fixture's points with each size group's lowest study moved to N = r/2 + 1 and its highest to N = r (a
    lone study is copied there).  A rule covers only the N its shapes were measured at, and most of the fixture's
    groups were measured at one N, where one alignment class lies; here each rule covers its whole octave.  Moved,
    not added: more shapes would let the fit cut more groups in row bands."""
    spread, copies, studies = list(points), [], {}
    for i, p in enumerate(points):
        if not p.probe:
            studies.setdefault((*p.family, p.r_pow2), []).append(i)
    for (*_, r), indices in sorted(studies.items()):
        order = sorted(indices, key=lambda i: (points[i].cols, points[i].rows))
        low, high = order[0], order[-1]
        spread[high] = _with_cols(points[high], r)
        if low == high:
            copies.append(_with_cols(points[low], r // 2 + 1))
        else:
            spread[low] = _with_cols(points[low], r // 2 + 1)
    return [*spread, *copies]


def _with_cols(point, cols):
    return dataclasses.replace(point, cols=cols, slot=dataclasses.replace(point.slot, rnumel=cols))


def _rule_of(rules, point):
    return next((r for r in rules if r.config is not None and r.matches(
        point.kind, point.element_size, point.r_pow2, r.xnumel[0], point.reductions, point.envelope or None)), None)


def test_span_probes_lie_inside_config_rules_spans_off_every_studied_and_avoided_shape(spanning):
    points = spanning
    params = distill.FitParams()
    rules = distill.fit_rules(points, params)
    items = crossmeasure.span_probes(points, 3, seed=5)
    assert items and items == crossmeasure.span_probes(points, 3, seed=5)  # a pure function of its arguments
    assert [i.point.label for i in items] != [i.point.label for i in crossmeasure.span_probes(points, 3, seed=6)]
    studied = {(p.rows, p.cols) for p in points}
    groups = distill.size_groups(points)
    per_group = {}
    for item in items:
        p = item.point
        key = (*p.family, p.r_pow2)
        per_group[key] = per_group.get(key, 0) + 1
        rule = _rule_of(rules, p)
        assert rule is not None and item.configs[0] == rule.config  # what the rule claims, timed first
        assert rule.rows[0] <= p.rows <= rule.rows[1] and p.r_pow2 // 2 < p.cols <= p.r_pow2
        assert rule.cols[0] <= p.cols <= rule.cols[1]  # outside it the rule never applies: the probe says nothing
        assert (p.rows, p.cols) not in studied and p.probe and p.span and not p.speedups
        assert p.slot.xnumel == p.rows and p.slot.rnumel == p.cols and p.slot.key.endswith(f"x{p.rows}.r{p.cols}")
        assert not any(slot_violations(p.slot, c) for c in item.configs)
        assert gate.resident_bytes(p.kernel, p.rows, p.cols, p.dtype) <= crossmeasure.SPAN_PROBE_MAX_BYTES
        # The other configs are the group's covered candidates: timed at every shape of the group.
        for cfg in item.configs[1:]:
            assert all(cfg in q.speedups for q in groups[key]), cfg.describe()
    assert set(per_group.values()) == {3}
    for key, group in groups.items():
        probe = group[0]
        covered = _rule_of(rules, probe)
        assert (key in per_group) == (covered is not None), key  # keep-default groups get no probe
    # Held-out draws are kept out.
    taken = {(i.point.rows, i.point.cols) for i in items}
    again = crossmeasure.span_probes(points, 3, seed=5, avoid=taken)
    assert not taken & {(i.point.rows, i.point.cols) for i in again} and len(again) == len(items)


def _measured(points, tmp_path, slower):
    items = crossmeasure.span_probes(points, 2, seed=3)
    tmp_path.mkdir(exist_ok=True)
    store = Store(f"sqlite:///{tmp_path}/span.sqlite")
    assert crossmeasure.run(items, TimedByConfig(slower), store, rounds=3)["stored"] == len(items)
    assert all(not any(json.loads(r.origin_json)) for r in store.crossmeasures())  # no proposer: a span probe
    opened = fx.stores([*fx.fixture_dbs(), f"{tmp_path}/span.sqlite"])
    return items, distill.load_points(opened, distill.select_gpu(opened, "H200"))[0]


def test_a_rule_config_losing_at_a_span_probe_is_not_adopted_and_winning_ones_widen_the_span(points, tmp_path):
    before = distill.fit_rules(points)
    adopted = {r.config for r in before if r.config is not None}
    items, merged = _measured(points, tmp_path / "lose", slower=adopted)
    probes = [p for p in merged if p.probe and p.span]
    assert sorted(p.label for p in probes) == sorted(i.point.label for i in items)
    for p in probes:
        assert p.crossmeasured == 1 and (*p.family, p.r_pow2) in distill.size_groups(points)
    after = distill.fit_rules(merged)
    for item in items:
        rule = distill._rule_for(after, next(p for p in merged if p.label == item.point.label))
        assert rule is None or rule.config != item.configs[0]  # lost 23 % there: never adopted again

    _, merged = _measured(points, tmp_path / "win", slower=())
    after = distill.fit_rules(merged)
    widened = 0
    for item in items:
        rule = distill._rule_for(after, next(p for p in merged if p.label == item.point.label))
        assert rule is not None and rule.config is not None and item.point.label in rule.evidence.shapes
        assert rule.cols[0] <= item.point.cols <= rule.cols[1]
        widened += all(q.cols > item.point.cols for q in points if (*q.family, q.r_pow2) ==
                       (*item.point.family, item.point.r_pow2))
    assert widened  # some probe lies below every studied N of its bucket, and the rule now reaches it


def test_a_span_probe_is_derived_from_any_held_out_shape_of_its_size_group(points, tmp_path):
    items, merged = _measured(points, tmp_path, slower=())
    probe = next(p for p in merged if p.span)
    group = [p for p in points if (*p.family, p.r_pow2) == (*probe.family, probe.r_pow2)]
    other = [p for p in points if p.r_pow2 != probe.r_pow2 or p.family != probe.family]
    assert distill.derived_from(probe, group[:1]) and not distill.derived_from(probe, other)
    assert not distill.derived_from(group[0], group)  # a study is never derived


def test_validate_draw_out_fixes_a_draw_without_a_gpu_and_never_rewrites_it(tmp_path, capsys):
    dbs = ",".join(fx.fixture_dbs())
    out = tmp_path / "set.json"
    argv = ["validate", "heuristics/h200.yaml", "--random", "40", "--seed", "9", "--rows", "4096:65536", "--db", dbs]
    assert cli.main([*argv, "--draw-out", str(out)]) == 0
    assert f"draw written to {out}" in capsys.readouterr().out
    draw = gate.Draw.from_json(out.read_text())
    avoid = gate.studied_shapes(fx.stores())
    assert draw == gate.make_draw(40, 9, None, avoid, 4 * GiB, rows=(4096, 65536), avoided_from=tuple(dbs.split(",")))
    text = out.read_text()
    for extra, message in [
        (["--draw-out", str(out)], "exists; a fixed draw is never rewritten"),
        (["--draw-out", str(tmp_path / "absent" / "x.json")], "is not a directory"),
    ]:
        assert cli.main([*argv, *extra]) == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert line.startswith("inductor-tune: error: --draw-out: ") and message in line, line
    assert cli.main(["validate", "heuristics/h200.yaml", "--shapes", "8x8", "--draw-out", str(tmp_path / "y")]) == 2
    assert "give --random N too" in capsys.readouterr().err
    assert out.read_text() == text and not (tmp_path / "y").exists()


def test_a_draw_keeps_out_the_shapes_of_the_held_out_draws_it_is_told_to_avoid(tmp_path, capsys):
    # Two draws of one seed repeat each other wherever the databases are the same (stop 85: H100 sets 6-11 held
    # 288-292 problems of H200 sets 15-20); --avoid-draw keeps the first draw's shapes out of the second.
    dbs = ",".join(fx.fixture_dbs())
    argv = ["validate", "heuristics/h200.yaml", "--random", "40", "--seed", "9", "--rows", "4096:65536", "--db", dbs]
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    assert cli.main([*argv, "--draw-out", str(first)]) == 0
    assert cli.main([*argv, "--avoid-draw", str(first), "--draw-out", str(second)]) == 0
    a, b = (gate.Draw.from_json(f.read_text()) for f in (first, second))
    assert len(b.problems) == 40 and b.avoided_draws == (str(first),) and a.avoided_draws == ()
    assert not {(r, c) for _, r, c, _ in a.problems} & {(r, c) for _, r, c, _ in b.problems}
    capsys.readouterr()
    # A draw file that is not one, or --avoid-draw without --random: one line, exit 2, nothing written.
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert cli.main([*argv, "--avoid-draw", str(bad), "--draw-out", str(tmp_path / "third.json")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("inductor-tune: error: --avoid-draw: ") and "is not a draw" in line, line
    assert cli.main(["validate", "heuristics/h200.yaml", "--shapes", "8x8", "--avoid-draw", str(first)]) == 2
    assert "give --random N too" in capsys.readouterr().err
    assert not (tmp_path / "third.json").exists()


def test_the_held_out_draws_from_stop_85_on_share_no_shape_with_any_other_held_out_draw():
    import glob

    paths = sorted(glob.glob(os.path.join(fx.ROOT, "experiments", "heldout", "*.json")))
    shapes = {p: {(r, c) for _, r, c, _ in gate.Draw.from_json(open(p).read()).problems} for p in paths}
    for path in paths:
        if gate.Draw.from_json(open(path).read()).avoided_draws:
            for other in paths:
                assert other == path or not shapes[path] & shapes[other], (path, other)


@pytest.mark.parametrize("text, fragment", [
    ("[1, 2]", "a draw is a JSON object"),
    ('{"seed": 1, "n": 1, "kernels": [], "dtype": "bf16", "max_bytes": 1, "problems": [["k", "8", 8, "bf16"]]}',
     "a problem is [kernel, rows, cols, dtype]"),
    ('{"seed": 1}', "problems"),
    ("not json", "Expecting value"),
])
def test_crossmeasure_span_probe_arguments_and_bad_draw_files_are_one_line(tmp_path, capsys, monkeypatch, text,
                                                                          fragment):
    dbs = list(fx.fixture_dbs())
    storage = tmp_path / "cm.sqlite"
    good = tmp_path / "held.json"
    good.write_text(gate.make_draw(5, 1, ["rmsnorm_fwd"], set(), GiB).to_json())
    base = ["crossmeasure", *dbs, "--storage", str(storage), "--plan-only", "H200"]
    assert cli.main([*base, "--span-probes", "5", "--seed", "4", "--avoid-draw", str(good)]) == 0
    out = capsys.readouterr().out
    assert "0 shape(s) + 5 probe(s) where no study ran" in out and not storage.exists()
    # Edge probes alone also plan probes, not the studied shapes.
    assert cli.main([*base, "--edge-probes", "1", "--seed", "4", "--avoid-draw", str(good)]) == 0
    out = capsys.readouterr().out
    assert "0 shape(s) + 1 probe(s) where no study ran" in out and not storage.exists()
    # Hull probes go through to the draw (the fixture's rules have no odd evidence, so no hull to probe past).
    asked = []
    monkeypatch.setattr(crossmeasure, "span_probes",
                        lambda *a, span_probes=crossmeasure.span_probes, **k: asked.append(k) or span_probes(*a, **k))
    assert cli.main([*base, "--span-probes", "5", "--hull-probes", "2", "--seed", "4", "--avoid-draw", str(good)]) == 0
    assert [k["hull_per_rule"] for k in asked] == [2] and not storage.exists()
    monkeypatch.undo()
    capsys.readouterr()
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    for argv, message in [
        (["--span-probes", "5", "--avoid-draw", str(bad)], f"--avoid-draw: {bad} is not a draw"),
        (["--span-probes", "5", "--avoid-draw", str(tmp_path / "absent.json")], "--avoid-draw: cannot read"),
        (["--span-probes", "-1"], "--span-probes, --edge-probes, --hull-probes and --fill at least 0"),
        # A round of fewer probes than alignment classes cannot settle a rule (distill's settle_rules).
        (["--span-probes", "4"], "--span-probes 4: a span round needs at least 5 probes per rule"),
        (["--span-probes", "1", "--edge-probes", "1"], "--span-probes 1: a span round needs at least 5"),
        (["--edge-probes", "-1"], "--span-probes, --edge-probes, --hull-probes and --fill at least 0"),
        (["--span-probes", "5", "--hull-probes", "-1"],
         "--span-probes, --edge-probes, --hull-probes and --fill at least 0"),
        # Alone, a round of odd N would be the latest in its rules' spans and settle none of them.
        (["--hull-probes", "2"], "--hull-probes go with --span-probes"),
        (["--edge-probes", "1", "--hull-probes", "2"], "--hull-probes go with --span-probes"),
        (["--span-probes", "5", "--seed", "-3"], "--seed"),
        (["--span-probes", "5", "--replay", dbs[0]], "--span-probes, --edge-probes or --fill with --replay"),
        (["--edge-probes", "1", "--replay", dbs[0]], "--span-probes, --edge-probes or --fill with --replay"),
        (["--span-probes", "5", "--max-gib", "0"], "--max-gib must be a positive number of GiB"),
        (["--span-probes", "5", "--max-gib", "nan"], "--max-gib must be a positive number of GiB"),
    ]:
        assert cli.main([*base, *argv]) == 2, argv
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert line.startswith("inductor-tune: error: ") and message in line, line
        if "is not a draw" in message:
            assert fragment in line, line
    assert not storage.exists() and bad.read_text() == text


def test_span_probes_take_n_from_every_alignment_class_in_turn(spanning):
    """A rule lost 12-16 % on an H200 only where N = 4 (mod 8), a class a uniform N meets one time in
    eight: each group's successive probes take N from each alignment class in turn."""
    classes = crossmeasure.ALIGNMENT_CLASSES
    items = crossmeasure.span_probes(spanning, len(classes), seed=11)
    by_group = {}
    for item in items:
        p = item.point
        by_group.setdefault((*p.family, p.r_pow2), []).append(p.cols)
    assert by_group
    for key, cols in by_group.items():
        assert [c % m == r for c, (m, r) in zip(cols, classes)] == [True] * len(classes), (key, cols)


def test_span_probes_of_a_rule_keep_to_its_n_span(points):
    """A rule covers only the N its group was measured at (``distill.fit_rules``), so a probe above that span times
    N the rule never applies at and settles nothing (``settle``): a group measured only in the lower part of its
    octave of N is probed there alone, edge probes included."""
    for (*_, r), group in sorted(distill.size_groups(points).items()):
        if r < 1024 or len(group) < 2:
            continue
        span = (r // 2 + 1, r // 2 + r // 8)
        low = [_with_cols(p, span[k % 2]) for k, p in enumerate(group)]
        rules = [x for x in distill.fit_rules(low) if x.config is not None]
        if len(rules) == 1:
            break
    else:
        pytest.fail("the fixture has no size group whose config a fit adopts")
    [rule] = rules
    assert rule.cols == span and rule.cols[1] < r
    count = 2 * len(crossmeasure.ALIGNMENT_CLASSES)
    items = crossmeasure.span_probes(low, count, seed=7, edge_per_kernel=2)
    assert len(items) == count + 2  # the span holds N of every alignment class: none is dropped
    assert all(rule.cols[0] <= i.point.cols <= rule.cols[1] for i in items), sorted(i.point.cols for i in items)


def test_a_rule_of_one_n_gets_every_probe_asked_for(points):
    """A rule measured at one N holds one alignment class; probes take the classes its span holds, in turn.  With the
    classes of the whole octave in turn, the second probe waited for a class the span has no N of, and the fused
    backwards at N = 256..8192 of an H200 span round got 1 probe of 10 (stop 68)."""
    for (*_, r), group in sorted(distill.size_groups(points).items()):
        if r < 1024 or len(group) < 2:
            continue
        one = [_with_cols(p, r) for p in group]
        rules = [x for x in distill.fit_rules(one) if x.config is not None]
        if len(rules) == 1:
            break
    else:
        pytest.fail("the fixture has no size group whose config a fit adopts")
    assert rules[0].cols == (r, r)
    items = crossmeasure.span_probes(one, 6, seed=3)
    assert len(items) == 6 and {i.point.cols for i in items} == {r}


def test_no_probe_of_an_inner_reduction_lands_where_inductor_splits_it(points):
    """Below 2 x SMs rows Inductor splits an inner reduction of N above 8192 into two kernels, so a probe there
    times no kernel its rule matches (an H200's round 7 lost two alignment classes of a rule so; stop 39).  The
    fixture's N 4097..8192 studies, copied at twice their N and at rows from 5 up, give rules that reach there."""
    group = [p for p in points if not p.probe and p.kind == "inner_looped" and p.r_pow2 == 8192]
    long = [dataclasses.replace(p, rows=m, cols=2 * p.cols,
                                slot=dataclasses.replace(p.slot, xnumel=m, rnumel=2 * p.cols))
            for p, m in zip(group, (5, 40, 2000, 9000, 30000, 60000))]
    split_rows = 2 * 132

    def split(items):
        return [i.point.label for i in items
                if i.point.r_pow2 > 8192 and i.point.rows < split_rows and i.point.kind.startswith("inner")]

    unbounded = crossmeasure.span_probes([*points, *long], 5, seed=5, edge_per_kernel=1)
    assert split(unbounded)  # what the bound is for: the draw lands there otherwise
    bounded = crossmeasure.span_probes([*points, *long], 5, seed=5, edge_per_kernel=1, split_rows=split_rows)
    assert not split(bounded) and len(bounded) == len(unbounded)

    # Every group keeps its count: a draw in the split region is drawn again, not dropped.
    def per_group(items):
        return collections.Counter((*i.point.family, i.point.r_pow2) for i in items)
    assert per_group(bounded) == per_group(unbounded)


@pytest.mark.parametrize("cols, lo, hi, alignment, expected", [
    (5501, 4097, 8192, (8, 4), 5500), (5503, 4097, 8192, (8, 4), 5500), (5505, 4097, 8192, (8, 4), 5508),
    (8190, 4097, 8192, (16, 0), 8192), (4097, 4097, 8192, (16, 8), 4104), (8192, 4097, 8192, (2, 1), 8191),
    (65, 65, 66, (16, 0), None),
])
def test_aligned_cols_moves_n_to_the_nearest_member_of_its_class_inside_the_bucket(cols, lo, hi, alignment, expected):
    assert crossmeasure.aligned_cols(cols, lo, hi, alignment) == expected


def test_probes_keep_within_the_memory_bound_they_are_given(spanning, tmp_path, capsys):
    """A probe keeps at most ``max_bytes`` resident (``crossmeasure --max-gib``): the bound decides which rows
    of a rule's band a round can reach at all (docs/rules.md, stop 31)."""
    # Rules that reach the top of their octave of N, where the most rows keep the most resident.
    points = spanning

    def resident(items):
        return [gate.resident_bytes(i.point.kernel, i.point.rows, i.point.cols, i.point.dtype) for i in items]

    default = crossmeasure.span_probes(points, 5, seed=5, edge_per_kernel=1)
    assert default == crossmeasure.span_probes(points, 5, seed=5, edge_per_kernel=1,
                                               max_bytes=crossmeasure.SPAN_PROBE_MAX_BYTES)
    small_bound = sorted(resident(default))[len(default) // 2]
    small = crossmeasure.span_probes(points, 5, seed=5, edge_per_kernel=1, max_bytes=small_bound)
    assert small and max(resident(small)) <= small_bound < max(resident(default))
    large = crossmeasure.span_probes(points, 5, seed=5, edge_per_kernel=1, max_bytes=64 * GiB)
    assert max(resident(large)) > crossmeasure.SPAN_PROBE_MAX_BYTES, "no rule band of the fixture reaches 4 GiB"
    # The app passes --max-gib through to the plan.
    dbs = list(fx.fixture_dbs())
    base = ["crossmeasure", *dbs, "--storage", str(tmp_path / "cm.sqlite"), "--plan-only", "H200", "--span-probes", "5",
            "--seed", "5"]
    counts = []
    for gib in ("4", "0.01"):
        assert cli.main([*base, "--max-gib", gib]) == 0
        counts.append(sum(int(n) for n in re.findall(r"\+ (\d+) probe\(s\)", capsys.readouterr().out)))
    assert counts[0] > counts[1]


def _hull_items(points, seed, per_rule=2):
    """The hull probes of a round: what ``hull_per_rule`` adds to the same seed's span probes, which stay the same."""
    span = crossmeasure.span_probes(points, 5, seed=seed)
    both = crossmeasure.span_probes(points, 5, seed=seed, hull_per_rule=per_rule)
    assert both == crossmeasure.span_probes(points, 5, seed=seed, hull_per_rule=per_rule)  # a pure function
    labels = {i.point.label for i in span}
    assert labels <= {i.point.label for i in both}
    return [i for i in both if i.point.label not in labels]


def test_hull_probes_take_odd_n_outside_each_rules_odd_hull_inside_its_span(spanning):
    """At odd N a rule covers only the hull of its odd evidence; a hull probe lies where it does not yet reach (at
    ``prenorm_rmsnorm_train_fwd`` 32220x3159 an H200 rule's odd evidence stopped 0.5 % short in rows; stop 64)."""
    rules = distill.fit_rules(spanning)
    items = _hull_items(spanning, seed=9)
    assert items
    per_rule = collections.Counter()
    for item in items:
        p = item.point
        rule = _rule_of(rules, p)
        assert rule is not None and rule.odd_hull and item.configs[0] == rule.config
        assert p.cols % 2 == 1 and not torch_rules.within_odd_hull(rule.odd_hull, p.rows, p.cols)
        assert rule.rows[0] <= p.rows <= rule.rows[1] and rule.cols[0] <= p.cols <= rule.cols[1]
        assert p.probe and p.span and (p.rows, p.cols) not in {(q.rows, q.cols) for q in spanning}
        per_rule[id(rule), p.r_pow2] += 1  # a rule merged over several size groups is probed in each
    assert set(per_rule.values()) <= {1, 2} and 2 in per_rule.values()


def test_hull_probes_keep_out_of_a_hull_that_covers_half_the_span(spanning, monkeypatch):
    """The fixture's odd evidence lies at one N per group, so its hulls are thin; here each config rule's hull is
    the half of its rows and N span below the diagonal, and every hull probe lands above it."""
    def odd(n, step):
        return n if n % 2 else n + step

    def halved(rule):
        lo, hi = odd(rule.cols[0], 1), odd(rule.cols[1], -1)
        return dataclasses.replace(rule, odd_hull=((rule.rows[0], lo), (rule.rows[1], lo), (rule.rows[1], hi)))

    fit = crossmeasure.fit_rules
    monkeypatch.setattr(crossmeasure, "fit_rules", lambda *a, **k: [halved(r) if r.config is not None else r
                                                                    for r in fit(*a, **k)])
    rules = crossmeasure.fit_rules(spanning)
    items = _hull_items(spanning, seed=9, per_rule=4)
    assert len(items) > 10
    for item in items:
        rule = _rule_of(rules, item.point)
        assert not torch_rules.within_odd_hull(rule.odd_hull, item.point.rows, item.point.cols), item.point.label


def test_a_winning_hull_probe_grows_its_rules_odd_hull(spanning, tmp_path):
    """Measured winning, a hull probe joins its rule's odd evidence, and the refit's hull reaches it."""
    items = _hull_items(spanning, seed=9)
    round_ = crossmeasure.span_probes(spanning, 5, seed=9, hull_per_rule=2)
    store = Store(f"sqlite:///{tmp_path}/hull.sqlite")
    assert crossmeasure.run(round_, TimedByConfig(()), store, rounds=3)["stored"] == len(round_)
    opened = fx.stores([*fx.fixture_dbs(), f"{tmp_path}/hull.sqlite"])
    labels = {i.point.label for i in round_}
    probes = [p for p in distill.load_points(opened, distill.select_gpu(opened, "H200"))[0] if p.label in labels]
    assert len(probes) == len(round_)
    before, after = distill.fit_rules(spanning), distill.fit_rules([*spanning, *probes])
    for item in items:
        p = next(q for q in probes if q.label == item.point.label)
        assert distill._rule_for(before, p) is None or distill._rule_for(before, p).config is None
        rule = distill._rule_for(after, p)
        assert rule is not None and rule.config is not None and rule.odd_hull
        assert torch_rules.within_odd_hull(rule.odd_hull, p.rows, p.cols)
