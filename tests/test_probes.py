"""Crossmeasure probes: the plan times each fused-backward size group's configs at 3/2 of every studied
shape's rows, and distill makes a rule hold there too.  The distil tests use real H200 probe records
(distill_fixtures.PROBE_SHAPES): at 24576x2048 the split-32 config that won at 8192 and 32768 rows
lost, as it did at the held-out 16384 rows."""

import dataclasses
import json
import shutil

import distill_fixtures as fx
import pytest

from inductor_tune import cli, crossmeasure, distill
from inductor_tune.kernels import Shape
from inductor_tune.space import SlotConfig, slot_violations
from inductor_tune.store import Store

SPLIT32 = SlotConfig(persistent=True, XBLOCK=2, num_warps=8, RSPLIT_SIZE=32, NUM_STAGES=3)
HELD = (16384, 1536)


@pytest.fixture(scope="module")
def points():
    return list(fx.fixture_points()[1])


def _load(*extra):
    opened = fx.stores([*fx.fixture_dbs(), *extra])
    return distill.load_points(opened, distill.select_gpu(opened, "H200"))[0]


@pytest.fixture(scope="module")
def probed():
    return _load(fx.probe_db())


def test_plan_probes_each_fused_backward_shape_at_three_halves_of_its_rows(points):
    items = crossmeasure.plan(points)
    studied = [i for i in items if not i.point.probe]
    assert [i.point.label for i in studied] == [i.point.label for i in crossmeasure.plan(points, probe_kinds=())]
    shapes = {(p.kernel, p.rows, p.cols, p.dtype) for p in points}
    expected = {(p.kernel, p.rows * 3 // 2, p.cols, p.dtype) for p in points if p.kind == "mix_order"} - shapes
    probes = [i for i in items if i.point.probe]
    assert expected and {(i.point.kernel, i.point.rows, i.point.cols, i.point.dtype) for i in probes} == expected
    group_configs = {(*i.point.family, i.point.r_pow2): i.configs for i in studied}
    for item in probes:
        p = item.point
        assert p.label.endswith(" (probe)") and p.kind == "mix_order"
        assert (p.slot.xnumel, p.slot.key) == (p.rows, f"bw.mix.x{p.rows}.r{p.slot.rnumel}")
        assert not p.speedups and not p.proposed and not p.studies and p.crossmeasured == 0
        assert item.configs == group_configs[(*p.family, p.r_pow2)] and item.configs
        assert not any(slot_violations(p.slot, c) for c in item.configs)
        assert all(t.slot_map() == {p.slot.key: c} for t, c in zip(item.trial_configs()[1:], item.configs))
    # Other kinds only when asked; a shape a study ran is never probed.
    looped = crossmeasure.probes(points, ("inner_looped",))
    assert looped and {p.kind for p in looped} == {"inner_looped"}
    parent = next(p for p in points if p.kind == "mix_order")
    studied_there = dataclasses.replace(parent, rows=parent.rows * 3 // 2,
                                        slot=dataclasses.replace(parent.slot, xnumel=parent.rows * 3 // 2))
    again = {(p.kernel, p.rows, p.cols) for p in crossmeasure.probes([*points, studied_there])}
    assert (parent.kernel, parent.rows * 3 // 2, parent.cols) not in again
    # Probe points handed back (a crossmeasure database among the inputs) never spawn probes themselves.
    assert crossmeasure.plan([*points, *(i.point for i in probes)]) == items


def test_probe_records_join_their_group_and_a_config_losing_at_a_probe_is_not_adopted(probed):
    probes = [p for p in probed if p.probe]
    assert {(p.kernel, p.rows, p.cols, p.dtype) for p in probes} == fx.PROBE_SHAPES
    for p in probes:
        assert p.label.endswith(" (probe)") and p.crossmeasured and p.speedups and not p.proposed and not p.studies
        assert p.slot.xnumel == p.rows and p.slot.key == f"bw.mix.x{p.rows}.r{p.slot.rnumel}"
    # The real evidence: split 32 won at 8192 and 32768 rows and lost at the 24576-row probe.
    at = {p.label: p for p in probed}
    lost = at["layernorm_bwd 24576x2048 bf16 (probe)"]
    assert lost.speedups[SPLIT32] < 1 - max(lost.noise, distill.FitParams().noise_floor)
    assert all(at[f"layernorm_bwd {m}x2048 bf16"].speedups[SPLIT32] > 1.1 for m in (8192, 32768))

    def fit_and_score(points, params=distill.FitParams()):
        # As distill(hold_out=...) does: the held-out shapes and the probes derived from them (24576x1536) out.
        held = [p for p in points if (p.rows, p.cols) == HELD and not p.probe]
        train = [p for p in points if p not in held and not distill.derived_from(p, held)]
        assert len(train) == len(points) - len(held) - 2 * any(p.probe for p in points)
        rules = distill.fit_rules(train, params, distill.proposed_by(train))
        # Scored on the pow2 buckets alone: the measured spans (below) keep every rule off the held-out
        # N = 1536, which no training shape of the 2048 bucket measured; the probes' effect shows without them.
        buckets = [dataclasses.replace(r, rows=None, cols=None, aligned_cols=()) for r in rules]
        rows = {r["shape"]: r for r in distill.score(buckets, held)}
        spans = {r["shape"]: r for r in distill.score(rules, held)}
        assert spans["layernorm_bwd 16384x1536 bf16"]["status"] == "no rule"
        return rules, rows["layernorm_bwd 16384x1536 bf16"]

    rules, without = fit_and_score([p for p in probed if not p.probe])
    assert distill._rule_for(rules, at["layernorm_bwd 32768x2048 bf16"]).config == SPLIT32
    assert without["status"] == "measured" and without["speedup"] < 1 - without["noise"]  # the held-out regression
    rules, with_probes = fit_and_score(probed)
    rule = distill._rule_for(rules, at["layernorm_bwd 32768x2048 bf16"])
    assert rule.config != SPLIT32 and "layernorm_bwd 24576x2048 bf16 (probe)" in rule.evidence.shapes
    assert "layernorm_bwd 24576x1536 bf16 (probe)" not in rule.evidence.shapes  # derived from the held-out shape
    assert with_probes["speedup"] >= 1 - with_probes["noise"]
    # Probes widen a mix-order rule's rows only as far as they reach (49152 rows: next_pow2 65536). Since stop 41 the
    # group is cut in row bands, and the band of 32768x2048 starts at its own lowest shape; fitted whole, it starts
    # at the group's.
    assert rule.xnumel == (32768, 65536)
    whole, _ = fit_and_score(probed, distill.FitParams(split_mix_rows=False))
    assert distill._rule_for(whole, at["layernorm_bwd 32768x2048 bf16"]).xnumel == (8192, 65536)


@pytest.mark.parametrize("scheme", list(distill.HOLDOUT_SCHEMES))
def test_probes_are_never_scored_and_leave_one_n_out_fits_without_that_ns_probes(probed, scheme, monkeypatch):
    calls, real_fit = [], distill.fit_rules
    monkeypatch.setattr(distill, "fit_rules", lambda pts, params=distill.FitParams(), allowed=None: (
        calls.append(list(pts)) or real_fit(pts, params, allowed)))
    rows = distill.holdout(probed, distill.FitParams(), scheme)["shapes"]
    assert sorted(r["shape"] for r in rows) == sorted(p.label for p in probed if not p.probe)
    assert all(any(p.probe for p in fold) for fold in calls)  # probes are fitted on
    if scheme == "leave_one_n_out":
        for fold in calls:
            held_n = {p.cols for p in probed if not p.probe} - {p.cols for p in fold if not p.probe}
            assert held_n and not any(p.probe and p.cols in held_n for p in fold)


def test_distill_file_lists_probes_in_evidence_and_provenance():
    dbs = [*fx.fixture_dbs(), fx.probe_db()]
    heur = distill.distill([f"sqlite:///{p}" for p in dbs], "H200", names=dbs, hold_out=[Shape(*HELD)])
    # The two probes at 24576x1536 (3/2 of the held-out 16384x1536) are derived from it and not fitted on.
    assert heur.provenance["probe_shapes"] == len(fx.PROBE_SHAPES) - 2
    assert distill.distill([f"sqlite:///{p}" for p in dbs], "H200", names=dbs).provenance["probe_shapes"] == \
        len(fx.PROBE_SHAPES)
    assert not any("(probe)" in s for s in heur.provenance["held_out_shapes"])
    assert any(s.endswith("(probe)") for r in heur.rules for s in r.evidence.shapes)
    # A probe is no study: it cannot be held out.
    with pytest.raises(distill.DistillError, match="no usable study of the held-out shape.s. 24576x2048"):
        distill.distill([f"sqlite:///{p}" for p in dbs], "H200", names=dbs, hold_out=[Shape(24576, 2048)])


def test_a_hold_out_fit_drops_the_probes_placed_because_of_a_held_out_shape(probed, monkeypatch):
    """A probe at 3/2 of a held-out shape's rows exists only because that shape was studied (the plan
    placed it there), so distill(hold_out=...) fits neither on the shape nor on its probe; the probes
    placed because of training shapes (12288, 24576 and 49152 rows at N = 2048) stay in."""
    held = [p for p in probed if (p.rows, p.cols) == HELD and not p.probe]
    assert {p.kernel for p in held} == set(fx.KERNELS)
    derived = {p.label for p in probed if distill.derived_from(p, held)}
    assert derived == {f"{k} 24576x1536 bf16 (probe)" for k in ("rmsnorm_bwd", "layernorm_bwd")}
    # Per kernel: a probe is derived from its own kernel's held-out shape only; a study is never derived.
    layernorm = [p for p in held if p.kernel == "layernorm_bwd"]
    assert {p.label for p in probed if distill.derived_from(p, layernorm)} == {"layernorm_bwd 24576x1536 bf16 (probe)"}
    parent = next(p for p in probed if p.label == "layernorm_bwd 16384x1536 bf16")
    studied_there = dataclasses.replace(parent, rows=24576, slot=dataclasses.replace(parent.slot, xnumel=24576))
    assert not distill.derived_from(studied_there, held)
    probe = next(p for p in probed if p.label == "layernorm_bwd 24576x1536 bf16 (probe)")
    assert distill.derived_from(probe, [parent]) and not distill.derived_from(probe, [])
    assert not distill.derived_from(probe, [dataclasses.replace(parent, cols=2048)])  # another N
    assert not distill.derived_from(probe, [dataclasses.replace(parent, rows=8192)])  # 3/2 of other rows
    calls, real_fit = [], distill.fit_rules
    monkeypatch.setattr(distill, "fit_rules", lambda pts, params=distill.FitParams(), allowed=None: (
        calls.append({p.label for p in pts}) or real_fit(pts, params, allowed)))
    dbs = [*fx.fixture_dbs(), fx.probe_db()]
    heur = distill.distill([f"sqlite:///{p}" for p in dbs], "H200", names=dbs, hold_out=[Shape(*HELD)])
    probes = {p.label for p in probed if p.probe}
    assert calls[0] == {p.label for p in probed if p not in held} - derived
    assert calls[0] & probes == probes - derived and len(probes - derived) == 6
    assert all(not fold & derived for fold in calls)  # nor in the hold-out schemes' folds
    assert not any(s in derived for r in heur.rules for s in r.evidence.shapes)
    assert heur.provenance["probe_shapes"] == len(probes - derived)


def test_probe_records_naming_other_kernels_or_without_a_study_of_that_n_are_not_used(tmp_path):
    path = tmp_path / "probes.sqlite"
    shutil.copyfile(fx.probe_db(), path)
    store = Store(f"sqlite:///{path}", create=False)
    template = next(r for r in store.crossmeasures() if (r.kernel, r.rows, r.cols) == ("rmsnorm_bwd", 12288, 2048))
    fields = {c: getattr(template, c) for c in ("gpu_id", "kernel", "dtype", "configs_json", "rounds_json",
                                                 "origin_json", "timing_json", "replayed")}
    checks = json.loads(template.checks_json)
    other = dict(checks, failures=[None, "config names kernels ['bw.mix.x98304.r2048'] that this compile did not "
                                         "generate (generated: bw.red.x98304.r2048)"])

    def at(rows, cols):  # a record forces its configs onto the kernel at its own sizes
        return dict(fields, configs_json=fields["configs_json"].replace("x12288.r2048", f"x{rows}.r{cols}"))

    assert "bw.mix.x12288.r2048" in fields["configs_json"]
    store.add_crossmeasure(**at(98304, 2048), rows=98304, cols=2048, checks_json=json.dumps(other))
    # No study of rmsnorm_bwd in N=3072's power-of-two bucket (4096): nothing to be a probe of.
    store.add_crossmeasure(**at(12288, 3072), rows=12288, cols=3072, checks_json=template.checks_json)
    store.add_crossmeasure(**at(196608, 2048), rows=196608, cols=2048, checks_json=template.checks_json)  # control
    # A record that forced the row kernel of another program, which no study of rmsnorm_bwd knows: not used.
    row = dict(fields, configs_json=fields["configs_json"].replace("bw.mix.x12288.r2048", "bw.red.x147456.r2048"))
    store.add_crossmeasure(**row, rows=147456, cols=2048, checks_json=template.checks_json)
    store.engine.dispose()
    labels = {p.label for p in _load(str(path)) if p.probe}
    assert "rmsnorm_bwd 196608x2048 bf16 (probe)" in labels
    assert not {"rmsnorm_bwd 98304x2048 bf16 (probe)", "rmsnorm_bwd 12288x3072 bf16 (probe)",
                "rmsnorm_bwd 147456x2048 bf16 (probe)"} & labels


def test_cli_probes_option(tmp_path, capsys):
    dbs = list(fx.fixture_dbs())
    storage = str(tmp_path / "cm.sqlite")
    assert cli.main(["crossmeasure", *dbs, "--storage", storage, "--plan-only", "H200"]) == 0
    assert "probe(s) where no study ran" in capsys.readouterr().out
    assert cli.main(["crossmeasure", *dbs, "--storage", storage, "--probes", "none", "--plan-only", "H200"]) == 0
    assert "probe" not in capsys.readouterr().out
    assert cli.main(["crossmeasure", *dbs, "--storage", storage, "--probes", "mix_order,outer", "--plan-only", "H200"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("inductor-tune: error: --probes: unknown kind(s) outer")


def test_replayed_crossmeasure_plans_no_probes(tmp_path, caplog, capsys):
    dbs = list(fx.fixture_dbs())
    argv = ["crossmeasure", *dbs, "--replay", dbs[0], "--storage", str(tmp_path / "cm.sqlite"), "--plan-only", "H200"]
    with caplog.at_level("WARNING", logger="inductor_tune"):
        assert cli.main(argv) == 0
    assert "--replay: no probes" in caplog.text
    out = capsys.readouterr().out
    assert "mix_order" in out and "probe" not in out
