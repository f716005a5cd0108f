"""A GPU with no studies of its own (`crossmeasure --candidates-from`, `distill --candidates-from`): the
plan and the kernels come from another GPU's studies, every number fitted from this GPU's records.

The plan runs on the fixture's real H200 studies; the "H100" times come from a scripted pool (a
deterministic function of the config), so only the bookkeeping and the fit's logic are checked."""

import json

import distill_fixtures as fx
import fast_yaml
import pytest
from fake_pools import ScriptedPool, remeasured

from inductor_tune import cli, crossmeasure, distill
from inductor_tune.app import crossmeasure as app_crossmeasure
from inductor_tune.gpu import GpuIdentity
from inductor_tune.store import Store

H100 = GpuIdentity(name="NVIDIA H100 80GB HBM3", sm_count=132, compute_capability="9.0", memory_bytes=80 * 2**30,
                   l2_bytes=50 * 2**20, cuda_driver="580", cuda_runtime="13.0", torch="2.11.0+cu130", triton="3.6.0")


class TimedOnH100(ScriptedPool):
    """The default takes 1 ms; configs in ``times`` take what it says, every other config ``other`` ms."""

    fingerprint = H100

    def __init__(self, times=None, other=1.0):
        super().__init__(2, H100)
        self.times, self.other = times or {}, other

    def answer(self, task):
        out = []
        for config in task.configs:
            cfg = None if config.inductor_default else next(iter(config.slot_map().values()))
            out.append([1.0 if cfg is None else self.times.get(cfg, self.other)] * task.rounds)
        return remeasured(out)


def _request(dbs, **kw):
    return app_crossmeasure.CrossmeasureRequest(tuple(dbs), candidates_from="H200", rounds=3, **kw)


def _h100_records(tmp_path, pool, **kw):
    dbs = list(fx.fixture_dbs())
    items = app_crossmeasure._plan(_request(dbs, **kw), H100.key)
    storage = tmp_path / "h100.sqlite"
    counts = crossmeasure.run(items, pool, Store(f"sqlite:///{storage}"), rounds=3)
    assert counts == {"stored": len(items), "skipped": 0, "failed": 0}
    return dbs, str(storage), items


def test_the_plan_is_the_source_gpus_and_its_records_name_the_proposing_gpu(tmp_path):
    dbs = list(fx.fixture_dbs())
    items = app_crossmeasure._plan(_request(dbs), H100.key)
    own = app_crossmeasure._plan(app_crossmeasure.CrossmeasureRequest(tuple(dbs)), fx.GPU)
    led = crossmeasure.lead_with_rules(own, fx.fixture_points()[1], 10)
    assert [(i.point.label, i.configs) for i in items] == [(i.point.label, i.configs) for i in led]
    assert any(names for i in items for names in i.origins)
    assert all(o.startswith(fx.GPU + ": ") for i in items for names in i.origins for o in names)
    _, storage, _ = _h100_records(tmp_path, TimedOnH100())
    stored = Store(f"sqlite:///{storage}").crossmeasures()
    assert {r.gpu.fingerprint for r in stored} == {H100.key}
    assert any(fx.GPU in o for r in stored for names in json.loads(r.origin_json) for o in names)


def test_nothing_of_the_source_gpus_times_is_fitted_a_tie_everywhere_keeps_every_default(tmp_path):
    dbs, storage, items = _h100_records(tmp_path, TimedOnH100(other=1.0))  # every config ties the default
    opened = fx.stores([*dbs, storage])
    h100 = distill.select_gpu(opened, "H100")
    points, _ = distill.load_points(opened, h100, candidates_from=distill.select_gpu(opened, "H200"))
    assert points and all(p.speedups and set(p.speedups.values()) == {1.0} for p in points)
    assert all(not p.studies and not p.inductor_default and p.crossmeasured == 1 for p in points)
    assert {p.label for p in points} == {i.point.label for i in items}
    # The H200's own studies at these shapes gain, and its rules set configs: none of that crosses over.
    assert any(r.config is not None for r in distill.fit_rules(fx.fixture_points()[1]))
    assert all(r.config is None for r in distill.fit_rules(points))


def test_distill_fits_the_measured_gpus_wins_only_and_says_where_the_candidates_came_from(tmp_path, capsys):
    h200_rules = distill.fit_rules(fx.fixture_points()[1])
    adopted_on_h200 = {r.config for r in h200_rules if r.config is not None}
    # On the "H100", the H200's winners lose 20 %; every other candidate gains 10 %.
    pool = TimedOnH100({cfg: 1.2 for cfg in adopted_on_h200}, other=1 / 1.1)
    dbs, storage, _ = _h100_records(tmp_path, pool)
    out = tmp_path / "h100.yaml"
    argv = ["distill", *dbs, storage, "--gpu", "H100", "--out", str(out)]
    assert cli.main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("inductor-tune: error: no usable single-kernel study of NVIDIA-H100") \
        and "--candidates-from" in line, line
    assert not out.exists()
    assert cli.main([*argv, "--candidates-from", "H200"]) == 0
    data = fast_yaml.safe_load(out.read_text())
    assert data["gpu"]["fingerprint"] == H100.key
    assert data["provenance"]["candidates_from"] == fx.GPU and data["provenance"]["studies"] == []
    configs = [r for r in data["rules"] if r.get("config")]
    assert configs
    assert all(r["evidence"]["gain_geomean"] == pytest.approx(1.1, abs=1e-3) for r in configs)
    fitted = distill.fit_rules(distill.load_points(fx.stores([*dbs, storage]), H100.spec(),
                                                   candidates_from=distill.select_gpu(fx.stores(), "H200"))[0])
    assert not {r.config for r in fitted if r.config is not None} & adopted_on_h200


def test_span_probes_follow_the_measured_gpus_fit_and_keep_out_held_out_draws(tmp_path):
    from inductor_tune import gate

    dbs, storage, items = _h100_records(tmp_path, TimedOnH100(other=1 / 1.1))
    span = app_crossmeasure._plan(_request([*dbs, storage], span_probes=2, seed=4), H100.key)
    assert span and all(i.point.span and i.point.probe for i in span)
    assert all(not any(names) for i in span for names in i.origins)  # a span probe names no proposer
    # A held-out draw at a row probe's shape keeps that probe out of the training plan.
    probe = next(i.point for i in items if i.point.probe)
    draw = tmp_path / "held.json"
    draw.write_text(gate.Draw(1, 1, (probe.kernel,), "bf16", 2**30, ((probe.kernel, probe.rows, probe.cols, "bf16"),))
                    .to_json())
    kept = app_crossmeasure._plan(_request(dbs, avoid_draws=(str(draw),)), H100.key)
    assert len(kept) < len(items) and all((i.point.rows, i.point.cols) != (probe.rows, probe.cols) for i in kept)


def test_candidates_from_a_gpu_not_in_the_databases_or_the_measured_one_is_one_line(tmp_path, capsys):
    dbs = list(fx.fixture_dbs())
    storage = tmp_path / "cm.sqlite"
    for argv, message in [
        (["--plan-only", "H100", "--candidates-from", "A100"],
         "--candidates-from: no studies or crossmeasure records of a GPU matching 'A100'"),
        (["--plan-only", "H200", "--candidates-from", "H200", "--span-probes", "5"],
         "--candidates-from 'H200' names the GPU measured"),
    ]:
        assert cli.main(["crossmeasure", *dbs, "--storage", str(storage), *argv]) == 2, argv
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert line.startswith("inductor-tune: error: ") and message in line, line
    assert cli.main(["distill", *dbs, "--gpu", "H200", "--candidates-from", "H200", "--out", str(tmp_path / "x")]) == 2
    assert "names the GPU fitted" in capsys.readouterr().err
    assert not storage.exists() and not (tmp_path / "x").exists()


def test_the_source_gpus_fitted_rules_lead_each_groups_configs_and_a_group_keeps_one_set():
    dbs = list(fx.fixture_dbs())
    rules = [r for r in distill.fit_rules(fx.fixture_points()[1]) if r.config is not None]
    items = app_crossmeasure._plan(_request(dbs, max_configs=3), H100.key)
    led = 0
    for item in items:
        p = item.point
        rule = next((r for r in rules if r.matches(p.kind, p.element_size, p.r_pow2, r.xnumel[0], p.reductions,
                                                   p.envelope or None)), None)
        assert len(item.configs) <= 3 and len(item.origins) == len(item.configs)
        if rule is not None:
            assert rule.config in item.configs
            led += item.origins[0] == (f"{fx.GPU}: {crossmeasure.FITTED_RULE}",)
    assert led  # somewhere the studies' own top three missed the rule
    groups = {}
    for item in items:
        groups.setdefault((*item.point.family, item.point.r_pow2), set()).add(item.configs)
    assert all(len(sets) == 1 for sets in groups.values())
