"""Distillation on data cut from the recorded H200 databases (studies and crossmeasure records):
evidence, robust rules, fallbacks, row ranges, hold-out purity, provenance, the CLI."""

import collections
import dataclasses
import json
import math
import shutil
import statistics

import distill_fixtures as fx
import pytest
import sqlalchemy as sa
import yaml

from inductor_tune import cli, distill
from inductor_tune.heuristics import dump, load
from inductor_tune.kernels import CATALOG, Shape
from inductor_tune.records import Outcome
from inductor_tune.space import SlotConfig, TrialConfig, slot_violations
from inductor_tune.store import Store, TrialRecord
from inductor_tune.torch_rules import kernel_signature

X1_W4 = SlotConfig(persistent=True, XBLOCK=1, num_warps=4)
SOFTMAX = "online_softmax_reduce+online_softmax_reduce"
SIGNATURES = {"rmsnorm_fwd": "sum", "layernorm_fwd": "welford_reduce+welford_reduce", "softmax_fwd": SOFTMAX,
              "rmsnorm_bwd": "sum@backward", "layernorm_bwd": "sum+sum@backward"}
HELD = [f"{k} 16384x1536 bf16" for k in fx.KERNELS]


@pytest.fixture(scope="module")
def points():
    return list(fx.fixture_points()[1])


@pytest.fixture(scope="module")
def heur():
    dbs = fx.fixture_dbs()
    return distill.distill([f"sqlite:///{p}" for p in dbs], "H200", names=list(dbs))


def _point(points, label):
    return next(p for p in points if p.label == label)


def _rule(rules, kind, reductions, r, x=32768):
    return next(rule for rule in rules if rule.matches(kind, 2, r, x, reductions))


def _geomean(values):
    return math.exp(sum(map(math.log, values)) / len(values))


def test_only_single_kernel_studies_become_evidence(points):
    gpu, _, skipped = fx.fixture_points()
    assert gpu.fingerprint == fx.GPU
    (multi,) = skipped
    assert fx.MULTI_KERNEL in multi.study and "3 reduction kernels change together" in multi.reason
    expected = {fx._shape_key(n) for names in fx.FIXTURE_STUDIES.values() for n in names if n != fx.MULTI_KERNEL}
    assert {(p.kernel, p.rows, p.cols, p.dtype) for p in points} == expected
    assert {p.kind for p in points} == {"inner_persistent", "inner_looped", "mix_order"}
    assert all(p.slot.mix_order == (p.kind == "mix_order") for p in points)
    # quack and llm both measured 32768x2048: one shape, two studies pooled; records are no studies
    assert len(_point(points, "softmax_fwd 32768x2048 bf16").studies) == 2
    assert not any("crossmeasure" in s for p in points for s in p.studies)


def test_points_carry_the_probed_or_catalog_signature(points):
    assert {p.kernel: p.reductions for p in points} == SIGNATURES
    probed = [p for p in points if p.slot.reductions]
    from_catalog = [p for p in points if not p.slot.reductions]  # spaces probed before reductions were recorded
    assert probed and from_catalog
    for p in points:
        types = p.slot.reductions or CATALOG[p.kernel].reductions
        assert p.reductions == kernel_signature(types.split("+"), p.slot.backward)
    # Rules never pool kernels of different signatures, even at the same size.
    assert {len({p.reductions for p in g}) for g in distill.size_groups(points).values()} == {1}


def test_crossmeasure_ratios_are_the_interleaved_ratios_of_the_stored_rounds(points):
    by_label = {p.label: p for p in points}
    (store,) = fx.stores(fx.fixture_dbs()[3:])
    ratio, failed, spread, records = {}, collections.defaultdict(set), collections.defaultdict(list), collections.Counter()
    replaced = 0
    for rec in store.crossmeasures():  # oldest first: a later record's ratio replaces an earlier one's
        p = by_label[f"{rec.kernel} {rec.rows}x{rec.cols} {rec.dtype}"]
        configs, rounds = json.loads(rec.configs_json), json.loads(rec.rounds_json)
        assert TrialConfig.from_json(configs[0]).inductor_default
        d_ms = statistics.median(rounds[0])
        spread[p.label].append((max(rounds[0]) - min(rounds[0])) / d_ms)
        records[p.label] += 1
        for text, times in zip(configs[1:], rounds[1:]):
            cfg = TrialConfig.from_json(text).slot_map()[p.slot.key]
            valid = [t for t in times if t is not None]
            if not valid:
                failed[p.label].add(cfg)
                continue
            failed[p.label].discard(cfg)
            replaced += (p.label, cfg) in ratio and ratio[(p.label, cfg)] != d_ms / statistics.median(valid)
            ratio[(p.label, cfg)] = d_ms / statistics.median(valid)
    assert set(records) == set(by_label) and replaced
    for (label, cfg), value in ratio.items():
        assert by_label[label].speedups[cfg] == pytest.approx(value, rel=1e-12) and cfg in by_label[label].interleaved
    for p in points:
        assert p.failed == failed[p.label] and p.crossmeasured == records[p.label]
        assert p.noise >= max(spread[p.label])
    # The one real failure: a split of 256 rows that ran out of shared memory at RMSNorm's backward.
    (oom,) = _point(points, "rmsnorm_bwd 32768x5120 bf16").failed
    assert (oom.XBLOCK, oom.num_warps, oom.RSPLIT_SIZE) == (4, 16, 256)
    assert sum(map(len, failed.values())) == 1
    # Crossmeasure adds configs the shapes' own studies never tried.
    studied = {p.label: p for p in fx.study_points()}
    assert any(set(p.interleaved) - set(studied[p.label].speedups) for p in points)


def test_a_failed_config_disqualifies_its_whole_size_group(heur, points):
    rule = _rule(heur.rules, "inner_looped", SOFTMAX, 2048)
    assert rule.config == SlotConfig(True, 1, 2) and len(rule.evidence.shapes) == 5
    first = _point(points, rule.evidence.shapes[0])
    broken = [dataclasses.replace(p, failed=p.failed | {rule.config}) if p is first else p for p in points]
    group = [p for p in broken if p.label in rule.evidence.shapes]
    assert rule.config not in {c.config for c in distill.candidates(group)}
    assert rule.config in {c.config for c in distill.candidates([p for p in points if p.label in rule.evidence.shapes])}
    # Failed at one shape, it is out at the other shapes of that size group too, not beyond it.
    refit = distill.fit_rules(broken)
    same, next_group = _rule(refit, "inner_looped", SOFTMAX, 2048), _rule(refit, "inner_looped", SOFTMAX, 4096)
    assert same.rnumel == (2048, 2048) and same.config not in (None, rule.config)
    assert next_group.rnumel == (4096, 4096) and next_group.config == rule.config


def test_a_config_never_timed_interleaved_is_not_adopted(heur, points):
    studies_only = list(fx.study_points())
    rule = _rule(distill.fit_rules(studies_only), "inner_looped", "sum", 2048)
    assert rule.config is None and "no config was timed interleaved at 3 or more of the 3 shapes" in rule.evidence.note
    # Trial ratios alone would adopt a config that was timed interleaved at only one of the shapes:
    lead = _rule(distill.fit_rules(studies_only, distill.FitParams(interleaved_only=False)), "inner_looped", "sum", 2048)
    assert lead.config is not None
    assert [lead.config in _point(studies_only, s).interleaved for s in lead.evidence.shapes].count(False) == 2
    # With the crossmeasure records every adopted config was timed interleaved at every shape of its rule.
    adopted = [r for r in heur.rules if r.config is not None]
    assert len(adopted) >= 8
    for r in adopted:
        assert r.evidence.measured == r.evidence.shapes and not r.evidence.unmeasured
        assert all(r.config in _point(points, s).interleaved for s in r.evidence.shapes)
    bare = [dataclasses.replace(p, interleaved=frozenset()) for p in points]
    assert all(r.config is None and "no config was timed interleaved" in r.evidence.note for r in distill.fit_rules(bare))


def _adoptable(pts, params=distill.FitParams()):
    """Per config a rule over these shapes may choose, its worst ratio to each shape's best: legal and
    timed interleaved at every shape, failed at none, nowhere slower than the default beyond the noise,
    geometric-mean gain above the noise and min_gain (recomputed from the points, not from distill)."""
    out = {}
    for cfg in set().union(*(p.interleaved for p in pts)):
        if any(slot_violations(p.slot, cfg) or cfg in p.failed or cfg not in p.interleaved for p in pts):
            continue
        gains = [p.speedups[cfg] for p in pts]
        noise = max(max(p.noise, params.noise_floor) for p in pts)
        if all(g >= 1 - max(p.noise, params.noise_floor) for g, p in zip(gains, pts)) and \
                _geomean(gains) > 1 + max(noise, params.min_gain):
            out[cfg] = min(g / max([1.0, *p.speedups.values()]) for g, p in zip(gains, pts))
    return out


def test_each_rule_is_the_best_worst_case_adoptable_config_and_its_evidence_is_recomputable(heur, points):
    assert _rule(heur.rules, "inner_looped", "sum", 4096).rnumel == (2048, 8192)
    assert _rule(heur.rules, "inner_looped", "sum", 2048).config == X1_W4
    for rule in heur.rules:
        pts = [_point(points, s) for s in rule.evidence.shapes]
        assert {p.reductions for p in pts} == {rule.reductions} and {p.kind for p in pts} == {rule.kind}
        adoptable = _adoptable(pts)
        if rule.config is None:
            assert not adoptable, rule.describe()
            continue
        assert adoptable[rule.config] == pytest.approx(max(adoptable.values()), abs=1e-12), rule.describe()
        ev, gains = rule.evidence, [p.speedups[rule.config] for p in pts]
        assert ev.gain_geomean == pytest.approx(_geomean(gains), abs=1e-4)
        assert (ev.gain_min, ev.gain_max) == (pytest.approx(min(gains), abs=1e-4), pytest.approx(max(gains), abs=1e-4))
        assert ev.worst_regret == pytest.approx(adoptable[rule.config], abs=1e-4)
        assert ev.noise == pytest.approx(max(max(p.noise, 0.015) for p in pts), abs=1e-4)
        assert set(ev.inductor_default) == {p.inductor_default for p in pts}
    # Robustness, not the typical gain: at RMSNorm's r=4096 the config with the best geomean gain is
    # not the one with the best worst case, and each size group picks the latter before merging.
    for key, group in distill.size_groups(points).items():
        adoptable, fit = _adoptable(group), distill.fit_group(group, distill.FitParams())
        assert (fit.config is None) == (not adoptable), key
        if fit.config is not None:
            assert adoptable[fit.config] == pytest.approx(max(adoptable.values()), abs=1e-12), key
    group = distill.size_groups(points)[("inner_looped", 2, "sum", 4096)]
    gains = {c: _geomean([p.speedups[c] for p in group]) for c in _adoptable(group)}
    assert distill.fit_group(group, distill.FitParams()).config != max(gains, key=gains.get)


def test_unsure_groups_keep_the_default_and_say_why(heur, points):
    slower = _rule(heur.rules, "mix_order", "sum@backward", 2048)
    assert slower.config is None and "slower than the default beyond noise" in slower.evidence.note
    # A gain below min_gain is not worth a rule: RMSNorm's configs gain at most 22 % at r=2048.
    group = distill.size_groups(points)[("inner_looped", 2, "sum", 2048)]
    best = max(_geomean([p.speedups[c] for p in group]) for c in set.intersection(*(set(p.interleaved) for p in group)))
    assert 1.20 < best < 1.25
    strict = distill.fit_rules(points, distill.FitParams(min_gain=0.25))
    rule = _rule(strict, "inner_looped", "sum", 2048)
    assert rule.config is None and "does not exceed the noise or 25%" in rule.evidence.note
    assert all(r.evidence.gain_geomean > 1.25 for r in strict if r.config is not None)
    rule = _rule(distill.fit_rules(points, distill.FitParams(min_gain=0.20)), "inner_looped", "sum", 2048)
    assert rule.config is not None and rule.evidence.gain_geomean > 1.20
    # The same evidence inside a noise band as wide as each shape's best gain is no gain anywhere.
    noisy = distill.fit_rules([dataclasses.replace(p, noise=p.best - 1) for p in points])
    assert all(r.config is None for r in noisy)
    for adopted in (r for r in heur.rules if r.config is not None):
        assert "does not exceed the noise" in _rule(noisy, adopted.kind, adopted.reductions, adopted.rnumel[0]).evidence.note


def test_rules_cover_rows_from_the_fewest_measured_up_and_mix_order_only_its_own_rows(heur, points):
    mix_own = _rule(heur.rules, "mix_order", "sum@backward", 8192)
    assert mix_own.config is not None and mix_own.evidence.shapes == ("rmsnorm_bwd 32768x5120 bf16",)
    assert mix_own.xnumel == (32768, 32768)  # its family was measured at 8192 rows too, it only at 32768
    assert not mix_own.matches("mix_order", 2, 8192, 65536, "sum@backward")
    for rule in heur.rules:
        family = [p for p in points if p.family == (rule.kind, rule.element_size, rule.reductions)]
        own = [p for p in family if p.label in rule.evidence.shapes]
        if rule.kind == "mix_order":
            assert rule.xnumel == (min(p.x_pow2 for p in own), max(p.x_pow2 for p in own)), rule.describe()
        else:
            assert rule.xnumel == (min(p.x_pow2 for p in family), distill.X_UNBOUNDED), rule.describe()
    looped = _rule(heur.rules, "inner_looped", SOFTMAX, 2048)
    assert looped.xnumel[0] == 8192 and not looped.matches("inner_looped", 2, 2048, 4096, SOFTMAX)
    # A looped rule measured only at 32768 rows still covers 8192 (its family was measured there).
    fewer = distill.fit_rules([p for p in points if p.label != "layernorm_fwd 8192x4096 bf16"])
    rule = _rule(fewer, "inner_looped", "welford_reduce+welford_reduce", 4096)
    assert rule.evidence.shapes == ("layernorm_fwd 32768x4096 bf16",) and rule.xnumel[0] == 8192


@pytest.mark.parametrize("scheme", list(distill.HOLDOUT_SCHEMES))
def test_holdout_never_scores_a_shape_it_was_fitted_on(points, scheme, monkeypatch):
    calls, real_fit = [], distill.fit_rules

    def spy(pts, params=distill.FitParams(), allowed=None):
        rules = real_fit(pts, params, allowed)
        calls.append(({p.label for p in pts}, allowed, rules))
        return rules

    monkeypatch.setattr(distill, "fit_rules", spy)
    rows = distill.holdout(points, distill.FitParams(), scheme)["shapes"]
    everything = {p.label for p in points}
    assert sorted(r["shape"] for r in rows) == sorted(everything)  # each shape scored once
    folds = ([{p.label for p in points if p.cols == n} for n in sorted({p.cols for p in points})]
             if scheme == "leave_one_n_out" else [{p.label} for p in points])
    assert len(calls) == len(folds)
    narrowed = 0
    for (train, allowed, rules), held in zip(calls, folds):
        assert not train & held and train | held == everything
        assert allowed == frozenset().union(*(p.proposed for p in points if p.label in train))
        assert all(r.config in allowed for r in rules if r.config is not None)
        narrowed += any(p.proposed - allowed for p in points if p.label in held)
    assert narrowed  # the held-out shapes' own proposals were withheld from some fold
    for r in rows:
        p = _point(points, r["shape"])
        if r["status"] == "measured":
            cfg = next(c for c in p.speedups if c.describe() == r["rule"])
            assert r["speedup"] == pytest.approx(p.speedups[cfg], abs=1e-4)
        elif r["status"] == "unmeasured":
            assert r["speedup"] is None and all(c.describe() != r["rule"] for c in p.speedups)
        else:
            assert r["speedup"] == 1.0 and r["rule"] == "inductor default"


def test_held_out_shapes_stay_out_of_the_fit_and_are_scored_with_the_files_rules(points, monkeypatch):
    calls, real_fit = [], distill.fit_rules
    monkeypatch.setattr(distill, "fit_rules", lambda pts, params=distill.FitParams(), allowed=None: (
        calls.append(({p.label for p in pts}, allowed)) or real_fit(pts, params, allowed)))
    dbs = fx.fixture_dbs()
    heur = distill.distill([f"sqlite:///{p}" for p in dbs], "H200", names=list(dbs), hold_out=[Shape(16384, 1536)])
    fitted = [p for p in points if p.label not in HELD]
    assert calls[0] == ({p.label for p in fitted}, frozenset().union(*(p.proposed for p in fitted)))
    assert all(not labels & set(HELD) for labels, _ in calls)  # nor in the schemes' folds
    assert not any(s in HELD for r in heur.rules for s in r.evidence.shapes)
    assert heur.provenance["held_out_shapes"] == sorted(HELD)
    assert not any("16384x1536" in s for s in heur.provenance["studies"])
    section = heur.holdout[distill.NAMED_SCHEME]
    assert sorted(r["shape"] for r in section["shapes"]) == sorted(HELD) and section["summary"]["all"]["shapes"] == 5
    for row in section["shapes"]:
        p = _point(points, row["shape"])
        rule = _rule(heur.rules, p.kind, p.reductions, p.r_pow2, p.x_pow2)
        if rule.config is None:
            assert (row["status"], row["speedup"]) == ("keep default", 1.0)
        else:
            assert row["rule"] == rule.config.describe() and row["status"] == "measured"
            assert row["speedup"] == pytest.approx(p.speedups[rule.config], abs=1e-4)
    scored = [r for r in section["shapes"] if r["speedup"] is not None]
    assert section["summary"]["all"]["geomean_vs_best_found"] == pytest.approx(
        _geomean([r["speedup"] / r["best_found"] for r in scored]), abs=1e-3)


def test_file_records_provenance_and_round_trips(heur, tmp_path):
    prov = heur.provenance
    assert prov["gpu_fingerprint"] == heur.gpu.fingerprint and prov["torch"] == "2.11.0+cu130"
    assert prov["triton"] == "3.6.0" and prov["databases"] == list(fx.fixture_dbs())
    assert prov["parameters"] == dataclasses.asdict(distill.FitParams()) and prov["held_out_shapes"] == []
    n_studies = sum(len(v) for v in fx.FIXTURE_STUDIES.values())
    assert len(prov["studies"]) + len(prov["skipped_studies"]) == n_studies == len(set(prov["studies"])) + 1
    assert sum(len(v) for v in prov["shapes"].values()) == 31 == prov["crossmeasured_shapes"]
    assert set(heur.holdout) == {"note", *distill.HOLDOUT_SCHEMES}
    assert heur.not_covered and "outer" in heur.not_covered[0]
    path = tmp_path / "h.yaml"
    dump(heur, str(path))
    again = load(str(path))
    assert again.digest() == heur.digest() and again.rules == heur.rules and again.gpu == heur.gpu
    assert {r.reductions for r in again.rules} == set(SIGNATURES.values())
    assert again.holdout == json.loads(json.dumps(heur.holdout))


def test_cli_distill_writes_the_file_and_bad_input_is_one_line(tmp_path, capsys):
    dbs = list(fx.fixture_dbs())
    out = tmp_path / "heuristics" / "h200.yaml"
    assert cli.main(["distill", *dbs, "--gpu", "H200", "--hold-out", "16384x1536", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "inner_looped reductions=sum elem=2B r=2048..8192 x=8192..2147483648: persistent XBLOCK=1 warps=4" in printed
    assert "held out (leave_one_n_out)" in printed and "held out (held_out_shapes): 5 shapes" in printed
    doc = yaml.safe_load(out.read_text())
    assert doc["provenance"]["held_out_shapes"] == sorted(HELD)
    assert sorted(r["shape"] for r in doc["holdout"]["held_out_shapes"]["shapes"]) == sorted(HELD)
    before = out.read_text()
    for argv, message in [
        (["--hold-out", "16384x1536,99x7"], "no usable study of the held-out shape(s) 99x7"),
        (["--hold-out", "16384"], "'16384' is not MxN"),
        (["--gpu", "A100"], "no studies of a GPU matching 'A100'"),
        (["--min-coverage", "2"], "--min-coverage"),
    ]:
        assert cli.main(["distill", *dbs, "--gpu", "H200", *argv, "--out", str(out)]) == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert line.startswith("inductor-tune: error: ") and message in line
    assert cli.main(["distill", str(tmp_path / "none.sqlite"), "--gpu", "H200", "--out", str(out)]) == 2
    assert "no database at" in capsys.readouterr().err
    assert out.read_text() == before


def test_finalists_are_ranked_among_the_trials_the_verdict_covered(tmp_path):
    """A run stopped after more trials but before its next verdict: a later, faster trial (a real one,
    llm's of the same shape) must not shift which interleaved rounds belong to which finalist."""
    quack, llm = fx.study_dbs()[:2]
    path = tmp_path / "quack.sqlite"
    shutil.copyfile(quack, path)
    store, other = Store(f"sqlite:///{path}", create=False), Store(f"sqlite:///{llm}", create=False)
    name = "layernorm_fwd/32768x2048/bf16"
    study = next(s for s in store.studies() if s.name.startswith(name + "@"))
    trials = store.trials(study.id)
    ok = [t for t in trials if t.outcome == Outcome.OK and t.time_ms]
    verdict = store.verdict(study.id)
    budget = sum(t.outcome != Outcome.CONSTRAINT for t in trials)
    assert verdict.trials_measured == len(ok) and store.finished(study.name, budget)
    donor = next(s for s in other.studies() if s.name.startswith(name + "@"))
    seen = {t.config_json for t in trials}
    faster = min((t for t in other.trials(donor.id) if not t.inductor_default and t.outcome == Outcome.OK
                  and t.config_json not in seen), key=lambda t: t.time_ms)
    assert faster.time_ms < min(t.time_ms for t in ok if not t.inductor_default)
    row = {c.name: getattr(faster, c.name) for c in TrialRecord.__table__.columns if c.name != "id"}
    with store.engine.begin() as conn:
        conn.execute(sa.insert(TrialRecord.__table__), [{**row, "study_id": study.id, "trial_number": trials[-1].trial_number + 1}])
    assert not store.finished(study.name, budget)  # the verdict no longer covers every OK trial

    def point(db):
        opened = [Store(f"sqlite:///{db}", create=False)]
        (p,) = [p for p in distill.load_points(opened, distill.select_gpu(opened, "H200"))[0]
                if p.label == "layernorm_fwd 32768x2048 bf16"]
        return p

    before, after = point(quack), point(path)
    added = TrialConfig.from_json(faster.config_json).slot_map()[before.slot.key]
    assert after.interleaved == before.interleaved and added not in after.interleaved
    assert {c: after.speedups[c] for c in before.interleaved} == {c: before.speedups[c] for c in before.interleaved}
    best = TrialConfig.from_json(verdict.best_config_json).slot_map()[before.slot.key]
    assert after.speedups[best] == pytest.approx(verdict.speedup)
    assert added in after.speedups and added in after.proposed
