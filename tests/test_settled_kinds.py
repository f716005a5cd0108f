"""``FitParams(settle_by="kind")``, the shipped files' criterion up to stop 20: a kernel kind ships
configs only once span probing has settled there (``distill.unsettled_kinds``): where the latest round
of span probes caught the placing fit's config losing, every rule of that kind keeps Inductor's default.
(The default is now per rule: tests/test_settled_rules.py.)  The fixture's real H200 studies place the
probes; a scripted pool times them."""

import json
import time

import distill_fixtures as fx
import pytest
from fake_pools import TimedByConfig

from inductor_tune import crossmeasure, distill
from inductor_tune.store import Store


@pytest.fixture(scope="module")
def points():
    return list(fx.fixture_points()[1])


def _round(points, path, seed, slower, per_group=2):
    """One span-probe round placed by a fit of ``points``, stored in its own database."""
    items = crossmeasure.span_probes(points, per_group, seed=seed)
    store = Store(f"sqlite:///{path}")
    assert crossmeasure.run(items, TimedByConfig(slower), store, rounds=3, span_seed=seed)["stored"] == len(items)
    return items


def _load(paths):
    opened = fx.stores([*fx.fixture_dbs(), *map(str, paths)])
    return distill.load_points(opened, distill.select_gpu(opened, "H200"))[0]


def test_a_round_that_caught_the_rules_config_losing_leaves_its_kind_unsettled(points, tmp_path):
    adopted = {r.config for r in distill.fit_rules(points) if r.config is not None}
    items = _round(points, tmp_path / "r1.sqlite", 3, slower=adopted)
    stored = Store(f"sqlite:///{tmp_path / 'r1.sqlite'}").crossmeasures()
    assert {json.loads(r.timing_json)["span_seed"] for r in stored} == {3}
    merged = _load([tmp_path / "r1.sqlite"])
    probes = [p for p in merged if p.span]
    assert probes and all(p.placed_by == i.configs[0] for p in probes for i in items if i.point.label == p.label)
    assert {p.span_round[1:] for p in probes} == {(f"sqlite:///{tmp_path / 'r1.sqlite'}", "3")}
    unsettled = distill.unsettled_kinds(merged)
    assert set(unsettled) == {p.kind for p in probes}
    assert all("latest span-probe round" in why and "seed 3" in why for why in unsettled.values())


def test_only_the_latest_round_counts_and_a_clean_one_settles_the_kind(points, tmp_path):
    adopted = {r.config for r in distill.fit_rules(points) if r.config is not None}
    _round(points, tmp_path / "r1.sqlite", 3, slower=adopted)
    first = _load([tmp_path / "r1.sqlite"])
    lost_kinds = set(distill.unsettled_kinds(first))
    time.sleep(0.01)  # rounds are ordered by when their first record was stored
    _round(first, tmp_path / "r2.sqlite", 4, slower=())
    both = _load([tmp_path / "r1.sqlite", tmp_path / "r2.sqlite"])
    latest = {p.kind: p.span_round for p in both if p.span and p.span_round[2] == "4"}
    assert latest and distill.unsettled_kinds(both) == {k: v for k, v in distill.unsettled_kinds(first).items()
                                                       if k not in latest}
    assert lost_kinds  # round 1 lost somewhere; round 2 settled every kind it probed


def test_distill_ships_no_config_of_an_unsettled_kind_and_says_why(points, tmp_path):
    adopted = {r.config for r in distill.fit_rules(points) if r.config is not None}
    _round(points, tmp_path / "r1.sqlite", 3, slower=adopted)
    urls = [f"sqlite:///{p}" for p in (*fx.fixture_dbs(), tmp_path / "r1.sqlite")]
    heur = distill.distill(urls, "H200", distill.FitParams(settle_by="kind"))
    unsettled = heur.provenance["unsettled_kinds"]
    assert unsettled
    for rule in heur.rules:
        if rule.kind in unsettled:
            assert rule.config is None
    notes = [r.evidence.note for r in heur.rules if r.kind in unsettled and "not shipped" in r.evidence.note]
    assert notes and all(unsettled[next(iter(unsettled))][:20] in n or "latest span-probe round" in n for n in notes)
    loose = distill.distill(urls, "H200", distill.FitParams(settled_kinds_only=False))
    assert loose.provenance["unsettled_kinds"] == {} and loose.provenance["unsettled_rules"] == []
    assert any(r.config is not None and r.kind in unsettled for r in loose.rules)


def test_per_rule_settling_holds_back_only_the_rules_a_round_caught_losing(points, tmp_path):
    """The same round, judged per rule (the default): the config it caught losing ships nowhere (the refit
    or the settling drops it), every rule held back says why, and rules of a kind that "kind" settling
    held back whole still ship."""
    adopted = sorted({r.config for r in distill.fit_rules(points) if r.config is not None}, key=lambda c: c.describe())
    # One probe per alignment class and group: a rule ships only once probed in every class.
    _round(points, tmp_path / "r1.sqlite", 3, slower=adopted[:1], per_group=len(crossmeasure.ALIGNMENT_CLASSES))
    urls = [f"sqlite:///{p}" for p in (*fx.fixture_dbs(), tmp_path / "r1.sqlite")]
    by_kind = distill.distill(urls, "H200", distill.FitParams(settle_by="kind"))
    by_rule = distill.distill(urls, "H200")
    held = by_rule.provenance["unsettled_rules"]
    assert adopted[0] not in {r.config for r in by_rule.rules}
    assert all("latest span-probe round in its span" in h["why"] or "not yet timed" in h["why"]
                        or "no span-probe round" in h["why"] for h in held)
    assert by_rule.provenance["unsettled_kinds"] == {}
    dropped = set(by_kind.provenance["unsettled_kinds"])
    assert any(r.config is not None and r.kind in dropped for r in by_rule.rules)
    assert sum(r.config is not None for r in by_rule.rules) > sum(r.config is not None for r in by_kind.rules)
