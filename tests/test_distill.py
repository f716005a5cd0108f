"""Distillation on studies cut from the recorded H200 databases: evidence, fallbacks, hold-out, provenance."""

import dataclasses
import json
import math
import statistics

import distill_fixtures as fx
import pytest

from inductor_tune import cli, distill
from inductor_tune.heuristics import dump, load
from inductor_tune.space import SlotConfig, TrialConfig
from inductor_tune.store import Store

X1_W4 = SlotConfig(persistent=True, XBLOCK=1, num_warps=4)


@pytest.fixture(scope="module")
def data():
    gpu, points, skipped = fx.fixture_points()
    return gpu, list(points), list(skipped)


@pytest.fixture(scope="module")
def heur():
    dbs = fx.fixture_dbs()
    return distill.distill([f"sqlite:///{p}" for p in dbs], "H200", names=list(dbs))


def _point(points, label):
    return next(p for p in points if p.label == label)


def test_only_single_kernel_studies_become_evidence(data):
    gpu, points, skipped = data
    assert gpu.fingerprint == "NVIDIA-H200/sm90x132/torch2.11.0+cu130/triton3.6.0"
    (multi,) = skipped
    assert "rmsnorm_bwd/8192x5120" in multi.study and "3 reduction kernels change together" in multi.reason
    assert {p.kind for p in points} == {"inner_persistent", "inner_looped", "mix_order"}
    assert all(p.slot.mix_order == (p.kind == "mix_order") for p in points)
    # quack and llm both measured 32768x2048: one shape, two studies
    assert len(_point(points, "softmax_fwd 32768x2048 bf16").studies) == 2


def test_finalists_carry_the_interleaved_ratio_and_noise_covers_trial_error(data):
    _, points, _ = data
    store = Store(f"sqlite:///{fx.fixture_dbs()[1]}", create=False)  # llm
    study = next(s for s in store.studies() if s.name.startswith("softmax_fwd/8192x2048/"))
    verdict = store.verdict(study.id)
    point = _point(points, "softmax_fwd 8192x2048 bf16")
    best = TrialConfig.from_json(verdict.best_config_json).slot_map()[point.slot.key]
    rounds = json.loads(verdict.rounds_json)
    assert point.speedups[best] == pytest.approx(verdict.speedup)
    spread = (max(rounds[0]) - min(rounds[0])) / statistics.median(rounds[0])
    assert point.noise >= spread


def test_rule_is_the_robust_config_and_its_evidence_is_recomputable(heur, data):
    _, points, _ = data
    (rule,) = [r for r in heur.rules if r.config is not None]
    assert (rule.kind, rule.rnumel, rule.xnumel, rule.config) == ("inner_looped", (2048, 2048), (8192, 32768), X1_W4)
    ev = rule.evidence
    assert sorted(ev.measured + ev.unmeasured) == sorted(ev.shapes) and len(ev.shapes) == 6
    gains = [_point(points, s).speedups[X1_W4] for s in ev.measured]
    assert ev.gain_geomean == pytest.approx(math.exp(sum(map(math.log, gains)) / len(gains)), abs=1e-4)
    assert ev.gain_min == pytest.approx(min(gains), abs=1e-4) and ev.gain_min > 1 + ev.noise
    assert ev.inductor_default == ("looped R0_BLOCK=2048 XBLOCK=2 warps=16 stages=1",)


def test_unsure_groups_keep_the_default_and_say_why(heur, data):
    _, points, _ = data
    by_range = {(r.kind, r.rnumel): r for r in heur.rules}
    loses = by_range[("inner_looped", (4096, 4096))]
    assert loses.config is None and "slower than the default beyond noise" in loses.evidence.note
    assert by_range[("mix_order", (2048, 2048))].config is None
    # Requiring every shape to be measured leaves no covered candidate at N=2048.
    strict = distill.fit_rules(points, distill.FitParams(min_coverage=1.0))
    rule = next(r for r in strict if r.kind == "inner_looped" and r.rnumel == (2048, 2048))
    assert rule.config is None and "no config was measured at 6 or more of the 6 shapes" in rule.evidence.note
    # The same evidence inside a larger noise band is not a gain.
    noisy = [dataclasses.replace(p, noise=1.0) for p in points]
    rule = next(r for r in distill.fit_rules(noisy) if r.rnumel == (2048, 2048) and r.kind == "inner_looped")
    assert rule.config is None and "does not exceed the noise" in rule.evidence.note


@pytest.mark.parametrize("scheme", list(distill.HOLDOUT_SCHEMES))
def test_holdout_never_scores_a_shape_it_was_fitted_on(data, scheme, monkeypatch):
    _, points, _ = data
    fitted_on = []
    real_fit = distill.fit_rules
    monkeypatch.setattr(distill, "fit_rules", lambda pts, params=distill.FitParams(): (
        fitted_on.append({p.label for p in pts}) or real_fit(pts, params)))
    result = distill.holdout(points, distill.FitParams(min_coverage=0, min_shapes=1), scheme)
    rows = result["shapes"]
    assert sorted(r["shape"] for r in rows) == sorted(p.label for p in points)  # each shape scored once
    scored_by_fold = ([{p.label for p in points if p.cols == n} for n in sorted({p.cols for p in points})]
                      if scheme == "leave_one_n_out" else [{p.label} for p in points])
    assert len(fitted_on) == len(scored_by_fold)
    for train, scored in zip(fitted_on, scored_by_fold):
        assert not train & scored and train | scored == {p.label for p in points}
    statuses = {r["status"] for r in rows}
    assert "measured" in statuses or scheme == "leave_one_n_out"
    for r in rows:
        p = _point(points, r["shape"])
        if r["status"] == "measured":
            cfg = next(c for c in p.speedups if c.describe() == r["rule"])
            assert r["speedup"] == pytest.approx(p.speedups[cfg], abs=1e-4)
        elif r["status"] == "unmeasured":
            assert r["speedup"] is None and all(c.describe() != r["rule"] for c in p.speedups)
        else:
            assert r["speedup"] == 1.0 and r["rule"] == "inductor default"


def test_file_records_provenance_and_round_trips(heur, tmp_path):
    prov = heur.provenance
    assert prov["gpu_fingerprint"] == heur.gpu.fingerprint and prov["torch"] == "2.11.0+cu130"
    assert prov["triton"] == "3.6.0" and prov["databases"] == list(fx.fixture_dbs())
    n_studies = sum(len(v) for v in fx.FIXTURE_STUDIES.values())
    assert len(prov["studies"]) + len(prov["skipped_studies"]) == n_studies == len(set(prov["studies"])) + 1
    assert sum(len(v) for v in prov["shapes"].values()) == 25
    assert set(heur.holdout) == {"note", *distill.HOLDOUT_SCHEMES}
    assert heur.not_covered and "outer" in heur.not_covered[0]
    path = tmp_path / "h.yaml"
    dump(heur, str(path))
    again = load(str(path))
    assert again.digest() == heur.digest() and again.rules == heur.rules and again.gpu == heur.gpu
    assert again.holdout == json.loads(json.dumps(heur.holdout))


def test_cli_distill_writes_the_file_and_bad_input_is_one_line(tmp_path, capsys):
    dbs = list(fx.fixture_dbs())
    out = tmp_path / "heuristics" / "h200.yaml"
    assert cli.main(["distill", *dbs, "--gpu", "H200", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "inner_looped elem=2B r=2048..2048 x=8192..32768: persistent XBLOCK=1 warps=4" in printed
    assert "held out (leave_one_n_out)" in printed and "held out (leave_one_shape_out)" in printed
    before = out.read_text()
    for argv, message in [
        (["distill", *dbs, "--gpu", "A100", "--out", str(out)], "no studies of a GPU matching 'A100'"),
        (["distill", str(tmp_path / "none.sqlite"), "--gpu", "H200", "--out", str(out)], "no database at"),
        (["distill", *dbs, "--gpu", "H200", "--min-coverage", "2", "--out", str(out)], "--min-coverage"),
    ]:
        assert cli.main(argv) == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert line.startswith("inductor-tune: error: ") and message in line
    assert out.read_text() == before


def test_remeasure_plan_and_new_measurements_feed_the_next_fit(data):
    """The validate step's loop: measure what the plan lists, add it, fit again."""
    _, points, _ = data
    plan = distill.remeasure_plan(points)
    rule_gaps = {p.label for p, cfg in plan if cfg == X1_W4}
    assert rule_gaps == {"layernorm_fwd 8192x2048 bf16", "rmsnorm_fwd 8192x2048 bf16", "rmsnorm_fwd 32768x2048 bf16"}
    assert all(cfg not in p.speedups for p, cfg in plan)
    # Suppose the GPU finds the rule's config slower than the default at one of those shapes:
    slower = distill.with_measurements(points, {("rmsnorm_fwd 8192x2048 bf16", X1_W4): 0.9})
    rule = next(r for r in distill.fit_rules(slower) if r.kind == "inner_looped" and r.rnumel == (2048, 2048))
    assert rule.config != X1_W4
