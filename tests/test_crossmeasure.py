"""`inductor-tune crossmeasure`: the plan from the fixture's real H200 studies, and the run with a
scripted stand-in for the GPU worker pool whose made-up timings (a deterministic function of the
config) check bookkeeping only: records, resume, failures, memory-bound width, and that distill reads
the records back as interleaved evidence."""

import collections
import dataclasses
import json
import math
import statistics
import zlib

import distill_fixtures as fx
import pytest
from fake_pools import ScriptedPool

from inductor_tune import cli, crossmeasure, distill
from inductor_tune.gpu import GpuIdentity
from inductor_tune.kernels import Shape
from inductor_tune.records import Outcome
from inductor_tune.space import TrialConfig, slot_violations
from inductor_tune.store import Store
from inductor_tune.tasks import Remeasured, RemeasureTask
from inductor_tune.workers import WORKER_ACTIVATION_FACTOR, WORKER_FIXED_BYTES, TaskFailure

FP = GpuIdentity(name="NVIDIA H200", sm_count=132, compute_capability="9.0", memory_bytes=24 * 2**30, l2_bytes=60 * 2**20,
          cuda_driver="580", cuda_runtime="13.0", torch="2.11.0+cu130", triton="3.6.0")
DEFAULT_MS = 1.0
TIMED_OUT = ("rmsnorm_fwd", 8192, 4096)  # its whole task fails
HELD = (16384, 1536)  # the fixture's hold-out shape


def _fake_ms(cfg) -> float:
    """Made up: 0.2..0.3 ms, a fixed function of the config (every config beats the default 3x or more)."""
    return 0.2 + (zlib.crc32(cfg.describe().encode()) % 1000) * 1e-4


def _fails(cfg) -> bool:
    return cfg.num_warps == 32  # made up: "out of resources" wherever it is timed


class CrossmeasurePool(ScriptedPool):
    """Four workers answering crossmeasure's remeasures with ``_fake_ms``; ``fail_shape``'s task times out."""

    def __init__(self, size=4, fail_shape=TIMED_OUT, fails=_fails, slower=1.0):
        super().__init__(size, FP)
        self.fail_shape, self.fails, self.slower = fail_shape, fails, slower

    @property
    def dispatched(self):
        return self.tasks

    def answer(self, task):
        assert isinstance(task, RemeasureTask) and task.check is True
        p = task.problem
        if (p.kernel, p.shape.rows, p.shape.cols) == self.fail_shape:
            return TaskFailure(Outcome.TIMEOUT, "killed after exceeding the task timeout")
        times, errors, failures = [], [], []
        for config in task.configs:
            cfg = None if config.inductor_default else next(iter(config.slot_map().values()))
            if cfg is not None and self.fails(cfg):
                times.append([None] * task.rounds)
                errors.append(None)
                failures.append("out_of_resources: made up")
                continue
            ms = DEFAULT_MS if cfg is None else _fake_ms(cfg) * self.slower
            times.append([ms * (1 + 0.001 * r) for r in range(task.rounds)])
            errors.append(1e-3)
            failures.append(None)
        return Remeasured(times, errors, failures)


@pytest.fixture(scope="module")
def points():
    return list(fx.fixture_points()[1])


def _best(p, k):
    """The k fastest configs the shape's own studies tried."""
    return sorted((c for c in p.speedups if c in p.proposed), key=lambda c: (-p.speedups[c], c.describe()))[:k]


def test_plan_times_each_groups_own_best_then_its_neighbours_where_legal(points):
    groups = distill.size_groups(points)
    items = crossmeasure.plan(points, top=3, neighbours=2, max_configs=100, probe_kinds=())  # test_probes.py
    assert sorted(i.point.label for i in items) == sorted(p.label for p in points)
    by_group = collections.defaultdict(list)
    for item in items:
        by_group[(*item.point.family, item.point.r_pow2)].append(item)
    dropped = 0
    for key, group in groups.items():
        kind, size, reductions, envelope, r = key  # neighbours: the same family, envelope included
        assert {p.envelope for p in group} == {envelope}
        plans = {i.configs for i in by_group[key]}
        assert len(plans) == 1  # every shape of the group times the same configs
        (configs,) = plans
        own = list(dict.fromkeys(c for p in group for c in _best(p, 3)))
        near = list(dict.fromkeys(c for a in (r // 2, r * 2) for p in groups.get((kind, size, reductions, envelope, a), ())
                                  for c in _best(p, 2)))
        legal = [c for c in dict.fromkeys(own + near) if not any(slot_violations(p.slot, c) for p in group)]
        assert list(configs) == legal
        dropped += len(dict.fromkeys(own + near)) - len(legal)
        assert [c for c in configs if c in own] == list(configs[:len([c for c in configs if c in own])])  # own first
        for item in by_group[key]:
            for cfg, origin in zip(item.configs, item.origins):
                assert origin == tuple(sorted(p.label for p in points if cfg in p.proposed)) and origin
            assert [TrialConfig.from_json(c) for c in crossmeasure.payload_configs(item)] == item.trial_configs()
            assert item.trial_configs()[0].inductor_default
            assert all(t.slot_map() == {item.point.slot.key: c} for t, c in zip(item.trial_configs()[1:], configs))
    assert dropped  # some neighbour's best config is illegal here and was left out
    assert any(len(i.configs) > len(dict.fromkeys(c for p in groups[(*i.point.family, i.point.r_pow2)]
                                                  for c in _best(p, 3))) for i in items)  # neighbours added
    capped = crossmeasure.plan(points, top=3, neighbours=2, max_configs=4, probe_kinds=())
    full = {i.point.label: i.configs for i in items}
    assert all(i.configs == full[i.point.label][:4] for i in capped)
    alone = crossmeasure.plan(points, top=1, neighbours=0, probe_kinds=())
    for item in alone:
        group = groups[(*item.point.family, item.point.r_pow2)]
        assert set(item.configs) <= {c for p in group for c in _best(p, 1)}


def test_plan_with_hold_out_times_the_training_shapes_candidates_at_the_held_out_shapes_too(points):
    """Held-out shapes propose no config and place no probe (so a hold-out fit on the records stays
    pure), yet get items timing the training shapes' candidates, so that the fit can be scored there."""
    held = [p for p in points if (p.rows, p.cols) == HELD]
    training = [p for p in points if p not in held]
    assert {p.kernel for p in held} == set(fx.KERNELS)
    items = crossmeasure.plan(points, top=3, neighbours=2, max_configs=100, hold_out=[Shape(*HELD)])
    studied = [i for i in items if not i.point.probe]
    assert sorted(i.point.label for i in studied) == sorted(p.label for p in points)  # held-out shapes included
    groups, proposing = distill.size_groups(points), distill.size_groups(training)
    by_group = collections.defaultdict(set)
    for item in studied:
        by_group[(*item.point.family, item.point.r_pow2)].add(item.configs)
    for key, group in groups.items():
        kind, size, reductions, envelope, r = key
        (configs,) = by_group[key]  # one plan per group, held-out shapes' items included
        own = [c for p in proposing.get(key, ()) for c in _best(p, 3)]
        near = [c for a in (r // 2, r * 2) for p in proposing.get((kind, size, reductions, envelope, a), ())
                for c in _best(p, 2)]
        assert list(configs) == [c for c in dict.fromkeys(own + near) if not any(slot_violations(p.slot, c) for p in group)]
    for item in items:
        for cfg, origin in zip(item.configs, item.origins):
            assert origin == tuple(sorted(p.label for p in training if cfg in p.proposed)) and origin
    assert all(i.configs for i in studied if i.point in held)
    # Without the hold-out the held-out shapes' own best configs are timed; with it, those that no
    # training shape put forward are not.
    unplanned = {c for p in held for c in _best(p, 3)} - {c for p in training for c in _best(p, 3)}
    default = crossmeasure.plan(points, top=3, neighbours=2, max_configs=100)
    assert unplanned & {c for i in default for c in i.configs}
    assert not unplanned & {c for i in items for c in i.configs}
    # Probes only at 3/2 of the training shapes' rows: none at 24576x1536 (3/2 of the held-out shape).
    probes = {(i.point.kernel, i.point.rows, i.point.cols) for i in items if i.point.probe}
    assert probes == {(p.kernel, p.rows * 3 // 2, p.cols) for p in training if p.kind == "mix_order"}
    assert {(k, 24576, 1536) for k in ("rmsnorm_bwd", "layernorm_bwd")} <= \
        {(i.point.kernel, i.point.rows, i.point.cols) for i in default if i.point.probe} - probes


def _width(item):
    need = crossmeasure.bytes_needed(item, WORKER_FIXED_BYTES, WORKER_ACTIVATION_FACTOR)
    return max(1, min(4, math.floor(0.85 * FP.memory_bytes / need)))


def _run(points, tmp_path):
    items = crossmeasure.plan(points)
    store = Store(f"sqlite:///{tmp_path}/cm.sqlite")
    pool = CrossmeasurePool()
    counts = crossmeasure.run(items, pool, store, rounds=3)
    return items, store, pool, counts


def test_run_stores_a_record_per_shape_resumes_and_records_failures(points, tmp_path):
    items, store, pool, counts = _run(points, tmp_path)
    assert counts == {"stored": len(items) - 1, "skipped": 0, "failed": 1}
    records = store.crossmeasures()
    assert len(records) == len(items) == len(pool.dispatched)
    by_shape = {(r.kernel, r.rows, r.cols, r.dtype): r for r in records}
    for item in items:
        p = item.point
        rec = by_shape[(p.kernel, p.rows, p.cols, p.dtype)]
        assert rec.gpu.fingerprint == fx.GPU and not rec.replayed
        assert json.loads(rec.configs_json) == crossmeasure.payload_configs(item)
        assert json.loads(rec.origin_json) == [list(o) for o in item.origins]
        timing = json.loads(rec.timing_json)
        assert timing["rounds"] == 3 and timing["interleaved"] and timing["rep_ms"] == crossmeasure.TIMING.rep_ms
        rounds, checks = json.loads(rec.rounds_json), json.loads(rec.checks_json)
        if (p.kernel, p.rows, p.cols) == TIMED_OUT:
            assert rounds == [] and checks == {"errors": [], "failures": ["timeout: killed after exceeding the task timeout"]}
            continue
        assert len(rounds) == len(item.configs) + 1 and all(len(r) == 3 for r in rounds)
        failed = [i for i, c in enumerate(item.configs, 1) if _fails(c)]
        assert [i for i, f in enumerate(checks["failures"]) if f] == failed
        assert all(rounds[i] == [None] * 3 for i in failed)
    # Memory: never more workers at once than the most demanding task among them allows.
    item_of = {(i.point.kernel, i.point.rows, i.point.cols, i.point.dtype): i for i in items}
    widths = {t.task_id: _width(item_of[(t.problem.kernel, t.problem.shape.rows, t.problem.shape.cols,
                                         t.problem.dtype)]) for t in pool.dispatched}
    assert min(widths.values()) < pool.size and max(len(c) for c in pool.concurrent) == pool.size
    for running in pool.concurrent:
        assert len(running) <= min(widths[t.task_id] for t in running)
    # Idle workers beyond a narrower width are told to free their memory, the width only shrinking.
    assert pool.released and pool.released == sorted(pool.released, reverse=True) and pool.released[0] < pool.size

    # Resume: only the shape without a complete record is measured again.
    again = CrossmeasurePool(fail_shape=None)
    assert crossmeasure.run(items, again, store, rounds=3) == {"stored": 1, "skipped": len(items) - 1, "failed": 0}
    assert [(t.problem.kernel, t.problem.shape.rows, t.problem.shape.cols) for t in again.dispatched] == [TIMED_OUT]
    done = CrossmeasurePool()
    assert crossmeasure.run(items, done, store, rounds=3)["skipped"] == len(items) and not done.dispatched
    # A different config list for a shape is a different measurement.
    fewer = crossmeasure.plan(points, max_configs=2)[:1]
    assert crossmeasure.run(fewer, done, store, rounds=3) == {"stored": 1, "skipped": 0, "failed": 0}


def test_distill_reads_the_records_back_as_interleaved_evidence(points, tmp_path):
    items, store, _, _ = _run(points, tmp_path)
    opened = [*fx.stores(fx.study_dbs()), store]
    merged, _ = distill.load_points(opened, distill.select_gpu(opened, "H200"))
    by_label = {p.label: p for p in merged}
    default = statistics.median(DEFAULT_MS * (1 + 0.001 * r) for r in range(3))
    checked = 0
    for item in items:
        p = by_label[item.point.label]
        if (p.kernel, p.rows, p.cols) == TIMED_OUT:
            assert p.crossmeasured == 0 and not p.failed  # an empty record is no evidence
            continue
        assert p.crossmeasured == 1 and p.failed == {c for c in item.configs if _fails(c)}
        for cfg in item.configs:
            if not _fails(cfg):
                assert p.speedups[cfg] == pytest.approx(default / (_fake_ms(cfg) * 1.001)) and cfg in p.interleaved
                checked += 1
    assert checked > 100
    # Each fully crossmeasured size group adopts its fastest made-up config that failed nowhere.
    params = distill.FitParams()
    for key, group in distill.size_groups(merged).items():
        if any((p.kernel, p.rows, p.cols) == TIMED_OUT for p in group):
            continue
        (configs,) = {i.configs for i in items if i.point.label in {p.label for p in group}}
        usable = [c for c in configs if not _fails(c)]
        fit = distill.fit_group(group, params)
        assert fit.config == min(usable, key=_fake_ms), key
        assert fit.evidence.gain_geomean == pytest.approx(default / (_fake_ms(fit.config) * 1.001), abs=1e-4)
    # A later record replaces an earlier one's ratios, and a config failed before but timed now is usable.
    item = next(i for i in items if any(map(_fails, i.configs)) and i.point.label.startswith("softmax_fwd 8192x2048"))
    again = dataclasses.replace(item, configs=item.configs[:1] + tuple(filter(_fails, item.configs)),
                                origins=item.origins[:1] + tuple(o for c, o in zip(item.configs, item.origins) if _fails(c)))
    assert crossmeasure.run([again], CrossmeasurePool(fails=lambda c: False, slower=2.0), store, rounds=3)["stored"] == 1
    merged, _ = distill.load_points(opened, distill.select_gpu(opened, "H200"))
    p = next(p for p in merged if p.label == item.point.label)
    assert p.crossmeasured == 2 and not p.failed
    for cfg in again.configs:
        assert p.speedups[cfg] == pytest.approx(default / (_fake_ms(cfg) * 2 * 1.001)) and cfg in p.interleaved


def test_cli_plan_only_prints_the_plan_and_bad_arguments_are_one_line(points, tmp_path, capsys):
    dbs = list(fx.fixture_dbs())
    storage = tmp_path / "cm.sqlite"
    assert cli.main(["crossmeasure", *dbs, "--storage", str(storage), "--plan-only", "H200"]) == 0
    items = crossmeasure.plan(points)
    expected = f"{crossmeasure.describe(items)}\n{len(items)} shapes, {sum(len(i.configs) for i in items)} (shape, config) pairs"
    assert capsys.readouterr().out.strip() == expected
    assert "inner_looped sum r=2048: 3 shape(s) x " in expected and not storage.exists()
    assert cli.main(["crossmeasure", *dbs, "--storage", str(storage), "--kernels", "rmsnorm_bwd", "--plan-only", "H200"]) == 0
    assert {line.split()[1] for line in capsys.readouterr().out.splitlines()[:-1]} == {"sum@backward"}
    absent = str(tmp_path / "absent.sqlite")
    for argv, message in [
        ([*dbs, "--rounds", "1"], "--rounds must be at least 2"),
        ([*dbs, "--top", "0"], "--top and --max-configs at least 1"),
        ([absent, *dbs, "--plan-only", "H200"], f"no database at {absent}"),
        ([*dbs, "--plan-only", "A100"], "no studies or crossmeasure records of a GPU matching 'A100'"),
    ]:
        assert cli.main(["crossmeasure", *argv, "--storage", str(storage)]) == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert line.startswith("inductor-tune: error: ") and message in line, line
    assert not storage.exists()
