"""GPU tests (H100/H200): run with ``pytest -m gpu`` on the GPU host; skipped without CUDA."""

from __future__ import annotations

import dataclasses
import json
import os

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


def test_short_study_ends_at_least_as_fast_as_default(tmp_path):
    from inductor_tune import experiment
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
    (row,) = study_rows(store)
    assert row.trials == 16
    verdict = store.verdict(store.studies()[0].id)
    assert verdict is not None and verdict.default_ms > 0
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
