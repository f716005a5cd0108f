"""GPU tests (H100/H200): run with ``pytest -m gpu`` on the GPU host; skipped without CUDA."""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import types

import pytest
import torch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


@pytest.fixture(scope="module")
def hooked():
    import torch._inductor.config as inductor_config

    from inductor_tune import choices

    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    inductor_config.compile_threads = 1
    choices.install()
    yield


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _state(kernel: str, shape: str):
    from inductor_tune.evaluate import Problem, ProblemState
    from inductor_tune.kernels import Shape

    return ProblemState(Problem(kernel, Shape.parse(shape), "bf16"))


def test_forced_config_lands_in_generated_source_and_runs(hooked):
    from inductor_tune import choices, evaluate
    from inductor_tune.records import Outcome, TimingSpec
    from inductor_tune.space import SlotConfig, TrialConfig

    state = _state("rmsnorm_fwd", "8192x1024")
    _, probe_plan = evaluate.compile_plan(state, TrialConfig(inductor_default=True))
    (slot,) = probe_plan.slots
    forced = SlotConfig(persistent=False, XBLOCK=4, R0_BLOCK=256, num_warps=4, num_stages=2)
    config = TrialConfig(slots=((slot.key, forced),))
    _, plan = evaluate.compile_plan(state, config)
    assert choices.verify_source(plan) is None
    assert any(repr(forced.fixed_config()) in src for src in plan.sources)
    m = evaluate.evaluate(state, config, TimingSpec(rep_ms=10), ceiling_gbps=1.0, gpu_lock=_NoLock())
    assert m.outcome == Outcome.OK, m.reason
    assert m.rel_error < 1e-2 and m.time_ms > 0
    assert json.loads(m.timing)["cuda_graph"] is True


def test_backward_config_is_forced_on_the_backward_graph(hooked):
    from inductor_tune import evaluate
    from inductor_tune.records import Outcome, TimingSpec
    from inductor_tune.space import TrialConfig, slot_violations

    state = _state("rmsnorm_bwd", "16384x2048")
    m_default = evaluate.evaluate(state, TrialConfig(inductor_default=True), TimingSpec(rep_ms=10), 1.0, _NoLock())
    assert m_default.outcome == Outcome.OK, m_default.reason
    assert m_default.slots and all(s.backward for s in m_default.slots)
    mix = [s for s in m_default.slots if s.mix_order]
    assert mix, "Inductor fuses RMSNorm backward into a mix-order kernel at this shape"
    from inductor_tune.space import SlotConfig

    cfg = SlotConfig(persistent=True, XBLOCK=4, num_warps=8, RSPLIT_SIZE=64, NUM_STAGES=2)
    assert not slot_violations(mix[0], cfg)
    m = evaluate.evaluate(state, TrialConfig(slots=((mix[0].key, cfg),)), TimingSpec(rep_ms=10), 1.0, _NoLock())
    assert m.outcome == Outcome.OK, m.reason


def test_wrong_kernel_is_rejected_by_the_numerics_guard(hooked, monkeypatch):
    from inductor_tune import evaluate, kernels
    from inductor_tune.records import Outcome, TimingSpec
    from inductor_tune.space import TrialConfig

    good = kernels.CATALOG["rmsnorm_fwd"]

    def broken_build(acc):
        right = good.build(acc)
        if acc == torch.float64:
            return right  # the reference stays correct
        return lambda x, weight: right(x, weight) * 1.05  # a 5% error, as a miscompiled kernel might give

    monkeypatch.setitem(kernels.CATALOG, "rmsnorm_fwd", dataclasses.replace(good, build=broken_build))
    state = _state("rmsnorm_fwd", "4096x1024")
    m = evaluate.evaluate(state, TrialConfig(inductor_default=True), TimingSpec(rep_ms=10), 1.0, _NoLock())
    assert m.outcome == Outcome.WRONG_RESULT
    assert m.rel_error > kernels.TOLERANCES["bf16"]


# Physical range of a copy's bandwidth (bytes read + written) on the GPUs these tests run on: an H100
# SXM copied about 3.0 TB/s here (HBM3, 3.35 TB/s peak), an H200 about 4.25 TB/s (HBM3e, 4.8 TB/s peak).
CEILING_RANGE_GBPS = (1000, 5500)
# No recorded H200 trial (db/*.sqlite) moved its minimal bytes faster than 1.013x the copy ceiling.
MAX_FRACTION_OF_CEILING = 1.1


def _plausible(m, state, ceiling):
    """A measurement whose GB/s is its bytes over its median and within what the memory can do."""
    from inductor_tune.kernels import TOLERANCES

    assert m.time_p20_ms <= m.time_ms <= m.time_p80_ms, m
    assert m.gbps == pytest.approx(state.bytes / (m.time_ms * 1e-3) / 1e9, rel=1e-9)
    assert 0 < m.gbps < MAX_FRACTION_OF_CEILING * ceiling, (m.gbps, ceiling)
    assert m.rel_error <= TOLERANCES["bf16"]


def test_copy_ceiling_and_a_known_kernels_gbps_are_physically_plausible(hooked):
    from inductor_tune import evaluate
    from inductor_tune.records import Outcome, TimingSpec
    from inductor_tune.space import INDUCTOR_DEFAULT

    ceiling = evaluate.copy_ceiling_gbps(TimingSpec())
    assert CEILING_RANGE_GBPS[0] < ceiling < CEILING_RANGE_GBPS[1], ceiling
    # RMSNorm forward at 32768x4096 bf16: x in, y out (256 MiB each), the fp32 weight in.
    state = _state("rmsnorm_fwd", "32768x4096")
    assert state.bytes == 2 * 32768 * 4096 * 2 + 4096 * 4
    m = evaluate.evaluate(state, INDUCTOR_DEFAULT, TimingSpec(), ceiling, _NoLock())
    assert m.outcome == Outcome.OK, m.reason
    _plausible(m, state, ceiling)
    # Inductor's default ran at 86-87 % of the copy ceiling there on an H200 (db/quack.sqlite, db/sweeps.sqlite):
    # below half of it, a byte count, the timer or the ceiling is off.
    assert m.gbps > 0.5 * ceiling, (m.gbps, ceiling)
    # The time itself, against the physical range alone (512 MiB at 5.5 TB/s at best, 0.5 TB/s at worst).
    assert state.bytes / 5500e9 < m.time_ms * 1e-3 < state.bytes / 500e9, m.time_ms


def test_short_study_ends_at_least_as_fast_as_default(tmp_path):
    from inductor_tune import experiment, stats
    from inductor_tune.kernels import CATALOG, Shape
    from inductor_tune.records import Outcome
    from inductor_tune.search import Tuner
    from inductor_tune.show import study_rows
    from inductor_tune.store import Store
    from inductor_tune.workers import WorkerPool

    exp = experiment.from_mapping(
        {"kernels": ["rmsnorm_fwd"], "shapes": ["32768x2048"], "dtypes": ["bf16"], "trials": 16, "seed": 1},
        "gpu-test",
    )
    store = Store(f"sqlite:///{tmp_path}/t.sqlite")
    with WorkerPool(0, 6, 120, lock_dir=str(tmp_path)) as pool:
        Tuner(exp, pool, store).run()
    (study,) = store.studies()
    ceiling = study.gpu.ceiling_gbps
    assert CEILING_RANGE_GBPS[0] < ceiling < CEILING_RANGE_GBPS[1], ceiling

    # The trials the experiment asked for: 16 measured (illegal combinations are recorded, not measured),
    # Inductor's default once, no trial number twice, every failure typed with its reason.
    records = store.trials(study.id)
    measured = [r for r in records if r.outcome != Outcome.CONSTRAINT]
    assert len(measured) == 16 and sum(r.inductor_default for r in records) == 1
    assert len({r.trial_number for r in records}) == len(records)
    assert all(r.reason for r in records if r.outcome not in (Outcome.OK, Outcome.CONSTRAINT))
    ok = [r for r in measured if r.outcome == Outcome.OK]
    (default,) = [r for r in ok if r.inductor_default]
    # In the 20-trial H200 study of this shape (db/quack.sqlite) all 20 measured trials ran.
    assert len(ok) >= 10, [(r.outcome, r.reason) for r in measured]
    nbytes = CATALOG["rmsnorm_fwd"].minimal_bytes(Shape(32768, 2048), "bf16")
    assert nbytes == 2 * 32768 * 2048 * 2 + 2048 * 4
    state = types.SimpleNamespace(bytes=nbytes)
    for r in ok:
        _plausible(r, state, ceiling)
    assert default.gbps > 0.5 * ceiling, (default.gbps, ceiling)

    # The verdict covers every measured trial and re-timed the default against the finalists, interleaved.
    verdict = store.verdict(study.id)
    assert verdict is not None and store.finished(study.name, exp.trials)
    assert verdict.trials_measured == len(ok)
    rounds = json.loads(verdict.rounds_json)
    assert 2 <= len(rounds) <= 1 + exp.finalists and all(len(r) == exp.rounds and None not in r for r in rounds)
    assert verdict.default_ms > 0 and verdict.best_ms > 0
    # Its best is the fastest finalist, not slower than the default beyond the noise band: in that H200 study
    # 10 of 19 configs were within it, so a study whose 15 configs all miss it measured something wrong.
    best = min(range(1, len(rounds)), key=lambda i: statistics.median(rounds[i]))
    assert verdict.best_ms == pytest.approx(statistics.median(rounds[best]))
    assert verdict.default_ms == pytest.approx(statistics.median(rounds[0]))
    band = max(stats.NOISE_FLOOR, stats.spread(rounds[0]), stats.spread(rounds[best]))
    assert verdict.best_ms <= verdict.default_ms * (1 + band), (verdict.best_ms, verdict.default_ms, band)
    # A winner of those rounds is re-timed in fresh ones, and improved only if it wins there too.
    confirmation = store.confirmation(study.id)
    assert (confirmation is not None) == stats.beats_default(rounds[0], rounds[best])
    assert verdict.improved == (confirmation is not None and confirmation.confirmed)
    (row,) = study_rows(store)
    assert row.trials == 16
    # The reported best is the re-measured winner when it beats the noise, else the default.
    assert row.best_gbps >= row.default_gbps


def test_catalog_reductions_match_what_the_probe_sees(hooked):
    """Studies probed before slots recorded their reductions and envelopes fall back to the catalog's entry."""
    from inductor_tune import evaluate
    from inductor_tune.kernels import CATALOG
    from inductor_tune.space import INDUCTOR_DEFAULT

    for name, spec in CATALOG.items():
        _, plan = evaluate.compile_plan(_state(name, "8192x2048"), INDUCTOR_DEFAULT)
        main = [s for s in plan.slots if s.mix_order] or plan.slots
        assert len(main) == 1, (name, plan.slots)
        assert main[0].reductions == spec.reductions, (name, main[0])
        assert main[0].envelope == spec.envelope, (name, main[0])


def test_inductor_autotuning_takes_the_gpu_lock(hooked):
    """A default compile that autotunes several candidate configs must not run beside a timing."""
    from inductor_tune import evaluate, workers
    from inductor_tune.space import INDUCTOR_DEFAULT

    entered = []

    class RecordingLock(_NoLock):
        def __enter__(self):
            entered.append(1)
            return self

    workers._lock_inductor_benchmarks(RecordingLock())
    # RMSNorm at N=4096 is looped with Inductor's extra persistent-RBLOCK candidate: it autotunes.
    call, _ = evaluate.compile_plan(_state("rmsnorm_fwd", "8192x4096"), INDUCTOR_DEFAULT)
    assert entered, "Inductor's autotuning benchmark ran without the GPU lock"


@pytest.mark.parametrize("kernel, rows, cols, role", [
    ("softmax_bwd", 8, 40000, "split"), ("layernorm_bwd", 16409, 173, "column_split"),
])
def test_focused_study_varies_only_the_split_kernel(tmp_path, kernel, rows, cols, role):
    """A study focused on the split kernel (few rows at long N; stop 45) or on the column split of a weight gradient
    (stop 46) forces a config onto that kernel alone, its evidence is that kernel at its own sizes, compiled as the
    problem, and Inductor split it as ``split_probes`` predicts, which is how span probes of its rules are placed."""
    from inductor_tune import experiment, split_probes
    from inductor_tune.evidence import load_points, part_role, select_gpu
    from inductor_tune.records import Outcome
    from inductor_tune.search import Tuner
    from inductor_tune.space import DEFAULT_FLAGS, SearchSpace, TrialConfig, slot_role
    from inductor_tune.store import Store
    from inductor_tune.workers import WorkerPool

    exp = experiment.from_mapping({"kernels": [kernel], "shapes": [f"{rows}x{cols}"], "dtypes": ["bf16"], "trials": 8,
                                   "seed": 1, "focus": role, "warm_start": 0}, "gpu-focus")
    store = Store(f"sqlite:///{tmp_path}/t.sqlite")
    with WorkerPool(0, 6, 120, lock_dir=str(tmp_path)) as pool:
        Tuner(exp, pool, store).run()
    (study,) = store.studies()
    space = SearchSpace.from_json(study.space_json)
    (key,) = space.focus
    slots = space.structure(DEFAULT_FLAGS)
    (split,) = [s for s in slots if s.key == key]
    assert len(slots) >= 2 and slot_role(split, rows, cols) == role, [s.key for s in slots]
    ok = [r for r in store.trials(study.id) if r.outcome == Outcome.OK and not r.inductor_default]
    assert len(ok) >= 4, [(r.outcome, r.reason) for r in store.trials(study.id)]
    configs = [TrialConfig.from_json(r.config_json) for r in ok]
    assert all(c.flags == DEFAULT_FLAGS and set(c.slot_map()) == {key} for c in configs)
    (point,), _ = load_points([store], select_gpu([store], study.gpu.fingerprint))
    assert point.problem == (rows, cols) and (point.rows, point.cols) == (split.xnumel, split.rnumel)
    assert part_role(point) == role
    sm_count = torch.cuda.get_device_properties(0).multi_processor_count
    predicted = (split_probes.inductor_inner_split(rows, cols, sm_count) if role == "split"
                 else split_probes.inductor_outer_split(rows, cols, sm_count))
    assert split.xnumel == predicted * (rows if role == "split" else cols)
