"""The measurement and decision core, pinned by hand-computed numbers.

Each test here fails for one wrong number or one dropped condition (named in its docstring): a limit
doubled, a byte count or a GB/s formula off, a verdict condition dropped, a rule's range or a study's
end ignored.  Before this file the rest of the CPU suite let the RMSNorm backward's vector traffic, the
copy ceiling, the median, distill's no-loss band, the xnumel bound and validate's every-round condition
change unnoticed, and caught the tile limit only through a sweep fixture's error.  The numbers are
written out, not taken from the constants under test, so that changing a constant fails here.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import types

import pytest
import torch

from inductor_tune import distill, evaluate, kernels, stats, torch_rules, validate
from inductor_tune.evidence import ShapePoint
from inductor_tune.kernels import CATALOG, KernelSpec, Shape
from inductor_tune.records import Outcome, TimingSpec
from inductor_tune.stats import summarize_verdict as summarize
from inductor_tune.space import KernelSlot, SlotConfig, TrialConfig, slot_violations

# -- space.slot_violations: at most 256 tile elements per thread ------------------------------------

ROW = KernelSlot("fw.red.x32768.r512", False, 32768, 512, False, True)


@pytest.mark.parametrize("warps", [1, 2, 4])
def test_a_thread_may_hold_256_tile_elements_and_not_one_power_of_two_more(warps):
    """Catches the per-thread limit doubled (256 -> 512): the tiles of 512 elements per thread are legal then."""
    threads = 32 * warps
    # Persistent rows of 512: XBLOCK rows make a tile of 512 * XBLOCK elements.
    at_limit = SlotConfig(True, XBLOCK=256 * threads // 512, num_warps=warps)
    over = SlotConfig(True, XBLOCK=512 * threads // 512, num_warps=warps)
    assert slot_violations(ROW, at_limit) == []
    (reason,) = slot_violations(ROW, over)
    assert reason == "512 tile elements per thread exceed 256"
    # Looped: the tile is XBLOCK x R0_BLOCK.
    looped_slot = KernelSlot("fw.red.x32768.r65536", False, 32768, 65536, False, False)
    assert slot_violations(looped_slot, SlotConfig(False, 2, warps, R0_BLOCK=128 * threads)) == []
    assert slot_violations(looped_slot, SlotConfig(False, 2, warps, R0_BLOCK=256 * threads)) == [
        "512 tile elements per thread exceed 256"]


# -- kernels.KernelSpec.minimal_bytes: what GB/s is computed from -----------------------------------

M, N = 32768, 4096


@pytest.mark.parametrize("dtype, element", [("bf16", 2), ("fp16", 2), ("fp32", 4)])
def test_rmsnorm_backward_moves_x_dy_dx_and_w_dw(dtype, element):
    """Catches RMSNorm backward's traffic changed (catalog counts or the formula): x and dy read, dx
    written, the fp32 weight read and its fp32 gradient written."""
    assert CATALOG["rmsnorm_bwd"].minimal_bytes(Shape(M, N), dtype) == 3 * M * N * element + 2 * N * 4
    # The module kernel keeps its weight in the activation dtype.
    assert CATALOG["nn_rmsnorm_bwd"].minimal_bytes(Shape(M, N), dtype) == 3 * M * N * element + 2 * N * element
    # Forward: x in, y out, w in.
    assert CATALOG["rmsnorm_fwd"].minimal_bytes(Shape(M, N), dtype) == 2 * M * N * element + N * 4


def test_every_kernels_row_traffic_is_what_its_probed_kernel_reads_and_writes():
    """The catalog's (M, N) reads and writes against the envelopes Inductor reported on an H200."""
    for name, spec in CATALOG.items():
        envelope = dict(part.split("=") for part in kernels.PROBED_BF16[name][1].split(","))
        assert (spec.activation_reads, spec.activation_writes) == (
            int(envelope["row_reads"]), int(envelope["row_writes"])), name


@pytest.mark.parametrize("db", ["db/quack.sqlite", "db/llm.sqlite", "db/modules.sqlite"])
def test_recorded_gbps_is_the_catalogs_bytes_over_the_recorded_median(db):
    """Every recorded H200 trial's GB/s is minimal_bytes / time_ms: a changed byte count disagrees with them."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute(
        "select s.kernel, s.rows, s.cols, s.dtype, t.gbps, t.time_ms from it_trial t join it_study s "
        "on t.study_id = s.id where t.outcome = 'OK'").fetchall()
    assert len(rows) > 500
    for kernel, rows_, cols, dtype, gbps, time_ms in rows:
        expected = CATALOG[kernel].minimal_bytes(Shape(rows_, cols), dtype) / (time_ms * 1e-3) / 1e9
        assert gbps == pytest.approx(expected, rel=1e-9), (kernel, rows_, cols)
    assert {"rmsnorm_bwd", "nn_rmsnorm_bwd"} & {r[0] for r in rows}


# -- evaluate: the copy ceiling and a trial's GB/s, with the GPU faked ------------------------------


def test_the_copy_ceiling_counts_bytes_read_and_written(monkeypatch):
    """Catches the copy ceiling counting the copied bytes once instead of read + write."""
    timed = []

    def fake_time_call(call, timing):
        call()  # the timed call must be the copy itself
        timed.append(call)
        return 0.5, 2.0, 8.0  # p20, median, p80 in ms

    fake_torch = types.SimpleNamespace(
        empty=lambda n, dtype, device: torch.empty(n, dtype=dtype), empty_like=torch.empty_like, uint8=torch.uint8,
    )
    copies = []
    real_copy = torch.Tensor.copy_
    monkeypatch.setattr(torch.Tensor, "copy_", lambda dst, src: copies.append(dst.numel()) or real_copy(dst, src))
    monkeypatch.setattr(evaluate, "torch", fake_torch)
    monkeypatch.setattr(evaluate, "time_call", fake_time_call)
    ceiling = evaluate.copy_ceiling_gbps(TimingSpec(), nbytes=1_000_000)
    # 1 MB read and 1 MB written in the median 2 ms: 2e6 bytes / 2e-3 s = 1 GB/s.
    assert ceiling == pytest.approx(1.0)
    assert len(timed) == 1 and copies == [1_000_000]


class _FakeCall:
    """A compiled call whose run, numerics and capture all succeed; only the timing is scripted."""

    graph = None

    def run_eager(self):
        return torch.zeros(1)

    def capture(self):
        return ""

    def run(self):
        return torch.zeros(1)


def _fake_gpu(monkeypatch, times):
    """evaluate.evaluate on a CPU: the compile, the reference check and the timer are stand-ins."""
    plan = evaluate.choices.CompilePlan(TrialConfig(), backward=True)
    monkeypatch.setattr(evaluate, "compile_plan", lambda state, config: (_FakeCall(), plan))
    monkeypatch.setattr(evaluate, "verify_or_none", lambda plan: None)
    monkeypatch.setattr(evaluate, "reference_error", lambda *args: 1e-3)
    monkeypatch.setattr(evaluate, "time_call", lambda call, timing: times)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args: None)
    monkeypatch.setattr(torch.cuda, "max_memory_reserved", lambda *args: 0)
    # The problem's tensors on the CPU (ProblemState asks for "cuda").
    for method in ("make_inputs", "make_grad_output"):
        real = getattr(KernelSpec, method)
        monkeypatch.setattr(KernelSpec, method, lambda self, shape, dtype, device, seed, real=real:
                            real(self, shape, dtype, "cpu", seed))


def test_a_trials_gbps_is_its_bytes_over_the_median_time(monkeypatch):
    """Catches GB/s computed from the p20 (or p80) time instead of the median."""
    _fake_gpu(monkeypatch, (0.001, 0.002, 0.004))  # p20, median, p80 in ms
    state = evaluate.ProblemState(evaluate.Problem("rmsnorm_bwd", Shape(64, 256), "bf16"))
    # x, dy in and dx out (64 x 256 bf16), w in and dw out (256 fp32): 98304 + 2048 bytes.
    assert state.bytes == 100352
    m = evaluate.evaluate(state, TrialConfig(), TimingSpec(), 3000.0, contextlib.nullcontext())
    assert m.outcome == Outcome.OK, m.reason
    assert (m.time_p20_ms, m.time_ms, m.time_p80_ms) == (0.001, 0.002, 0.004)
    assert m.gbps == pytest.approx(50.176)  # 100352 bytes / 2 us
    assert m.ceiling_gbps == 3000.0 and json.loads(m.timing)["cuda_graph"] is True


def test_a_wrong_result_is_never_timed(monkeypatch):
    _fake_gpu(monkeypatch, (0.001, 0.002, 0.004))
    monkeypatch.setattr(evaluate, "reference_error", lambda *args: 0.5)
    monkeypatch.setattr(evaluate, "time_call", lambda *args: pytest.fail("a wrong result was timed"))
    state = evaluate.ProblemState(evaluate.Problem("rmsnorm_bwd", Shape(64, 256), "bf16"))
    m = evaluate.evaluate(state, TrialConfig(), TimingSpec(), 3000.0, contextlib.nullcontext())
    assert m.outcome == Outcome.WRONG_RESULT and m.gbps is None and m.rel_error == 0.5


# -- the study verdict: faster in every round AND beyond the noise band -----------------------------


class _Finalist:
    def __init__(self, number):
        self.trial_number, self.config_json = number, json.dumps({"finalist": number})


def test_summarize_needs_every_round_won():
    """Catches the verdict's "every round" condition dropped: a 17 % median gain lost one round."""
    default = [1.0, 1.0, 1.0, 1.0, 0.9]
    lost_one = [0.85, 0.85, 0.85, 0.85, 0.91]
    verdict = summarize([default, lost_one], [_Finalist(3)])
    assert verdict["speedup"] == pytest.approx(1 / 0.85) and verdict["speedup_low"] < 1
    assert verdict["best_trial_number"] == 3 and not verdict["improved"]
    assert summarize([default, [0.85, 0.85, 0.85, 0.85, 0.89]], [_Finalist(3)])["improved"]


def test_summarize_needs_a_gain_beyond_the_band():
    """Catches the verdict's noise-band condition dropped: faster in every round by 1 %, 2 % and 6 %
    against a floor of 1.5 % and a default whose own rounds spread 5 %."""
    assert not summarize([[1.0] * 5, [0.99] * 5], [_Finalist(1)])["improved"]
    spread_default = [1.0, 1.05, 1.0, 1.0, 1.0]
    assert not summarize([spread_default, [0.98] * 5], [_Finalist(1)])["improved"]
    assert summarize([spread_default, [0.94] * 5], [_Finalist(1)])["improved"]


def test_summarize_picks_the_lowest_median_and_keeps_untimed_rounds_out():
    times = [[1.0, 1.0, 1.0], [0.7, 0.7, None], [0.8, 0.8, 0.8]]
    verdict = summarize(times, [_Finalist(4), _Finalist(9)])
    assert verdict["best_trial_number"] == 4 and verdict["best_ms"] == pytest.approx(0.7)
    # Not every round of the winner was timed: nothing was shown.
    assert not verdict["improved"]


@pytest.mark.parametrize("default, candidate, outcome", [
    ([1.0] * 3, [0.9, 0.9, 1.01], stats.WITHIN_NOISE),  # lost a round
    ([1.0] * 3, [0.99] * 3, stats.WITHIN_NOISE),  # inside the floor
    ([1.0] * 3, [0.9] * 3, stats.FASTER),
    ([1.0] * 3, [1.1, 1.1, 0.99], stats.WITHIN_NOISE),  # won a round
    ([1.0] * 3, [1.01] * 3, stats.WITHIN_NOISE),
    ([1.0] * 3, [1.1] * 3, stats.SLOWER),
])
def test_each_condition_of_faster_and_slower(default, candidate, outcome):
    assert stats.classify(default, candidate) == outcome


# -- distill: no loss beyond the noise band at any shape ---------------------------------------------

SLOT = KernelSlot("fw.red.x32768.r2048", False, 32768, 2048, False, False, "sum", "")
WIN = SlotConfig(True, 2, 8)


def _point(cols_label: int, speedup: float, noise: float = 0.0) -> ShapePoint:
    return ShapePoint("rmsnorm_fwd", 32768, cols_label, "bf16", "inner_looped", "sum", SLOT, {WIN: speedup}, noise,
                      ("study",), interleaved=frozenset({WIN}))


def test_a_config_slower_beyond_the_band_at_one_shape_is_a_loss():
    """Catches distill's no-loss band tripled: 3 % slower at one shape is beyond the 1.5 % floor (and
    inside 4.5 %), so the config is no candidate to adopt despite a 20 % gain elsewhere."""
    params = distill.FitParams()
    (candidate,) = distill.candidates([_point(2048, 1.20), _point(1536, 0.97)], params)
    assert not candidate.no_loss and not candidate.adoptable
    # 1 % slower is inside the floor: no loss.
    (candidate,) = distill.candidates([_point(2048, 1.20), _point(1536, 0.99)], params)
    assert candidate.no_loss and candidate.adoptable
    # The shape's own noise widens its band up to 2 %: 1.8 % slower at a shape whose rounds spread 4 % is
    # no loss ...
    (candidate,) = distill.candidates([_point(2048, 1.20), _point(1536, 0.982, noise=0.04)], params)
    assert candidate.no_loss
    # ... and 3 % slower there is one (the noise excuses no more than 2 %).
    (candidate,) = distill.candidates([_point(2048, 1.20), _point(1536, 0.97, noise=0.04)], params)
    assert not candidate.no_loss
    fit = distill.fit_group([_point(2048, 1.20), _point(1536, 0.97)], params)
    assert fit.config is None and "slower than the default beyond noise" in fit.evidence.note


# -- torch_rules.lookup: a rule covers its row range and no more ------------------------------------

def _rule(xnumel, XBLOCK):
    return torch_rules.Rule("inner_looped", 2, (2048, 4096), xnumel, False, XBLOCK, 8, R0_BLOCK=1024)


def test_a_rule_covers_no_rows_past_its_upper_bound():
    """Catches the xnumel upper bound ignored in torch_rules.lookup (used by install and the patched torch)."""
    small, large = _rule((1024, 8192), 1), _rule((16384, 32768), 4)
    table = torch_rules.Table("NVIDIA H200", 90, 132, (small, large))
    lookup = lambda x: torch_rules.lookup("inner_looped", 2, 4096, x, table)  # noqa: E731
    assert lookup(1024) is small and lookup(8192) is small
    assert lookup(16384) is large and lookup(32768) is large
    assert lookup(512) is None and lookup(65536) is None
    alone = torch_rules.Table("NVIDIA H200", 90, 132, (small,))
    assert torch_rules.lookup("inner_looped", 2, 4096, 16384, alone) is None
    assert torch_rules.lookup("inner_looped", 2, 8192, 4096, alone) is None  # rnumel past its range too


# -- store.finished: a study short of its budget or its verdict runs again -----------------------------


def test_a_study_short_of_a_larger_budget_is_resumed_to_it(tmp_path):
    """Catches store.finished always true: the second run, asked for 10 trials, would measure nothing."""
    from inductor_tune.search import Tuner
    from inductor_tune.store import Store
    from fake_pools import StudyPool, study_experiment

    store = Store(study_experiment(tmp_path, 6).storage_url)
    Tuner(study_experiment(tmp_path, 6), StudyPool(), store).run()
    (study,) = store.studies()
    measured = lambda: [t for t in store.trials(study.id) if t.outcome != Outcome.CONSTRAINT]  # noqa: E731
    assert len(measured()) == 6 and store.finished(study.name, 6) and not store.finished(study.name, 10)
    pool = StudyPool()
    Tuner(study_experiment(tmp_path, 10), pool, store).run()
    # (the sampler repeats some configs, whose measurements are reused rather than dispatched)
    assert pool.dispatched > 0 and len(measured()) == 10 and store.finished(study.name, 10)
    ok = [t for t in measured() if t.outcome == Outcome.OK]
    assert store.verdict(study.id).trials_measured == len(ok)  # the verdict was taken again, over all 10
    again = StudyPool()
    Tuner(study_experiment(tmp_path, 10), again, store).run()
    assert again.dispatched == 0  # finished: nothing measured


# -- validate: a regression is slower in every round and beyond the band -----------------------------


def _validation(heuristics, default=(1.0, 1.0, 1.0, 1.0, 1.0)):
    return {"times": {"inductor_default": list(default), "heuristics": list(heuristics)}, "notes": [],
            "bytes": 1e9, "rules_applied": ["a rule"], "studied": False}


def test_a_regression_is_slower_in_every_round():
    """Catches validate's "slower in every round" condition dropped: 10 % slower at the median, one round faster."""
    row = validate.summarize_problem("rmsnorm_fwd", "32768x4096", "bf16",
                                     _validation([1.1, 1.1, 1.1, 1.1, 0.99]), 4000.0)
    heur = row.variant(validate.HEURISTICS)
    assert heur.ratio_to_default == pytest.approx(1 / 1.1) and heur.ratio_high > 1
    assert not row.regressed
    assert validate.summarize_problem("rmsnorm_fwd", "32768x4096", "bf16",
                                      _validation([1.1, 1.1, 1.1, 1.1, 1.01]), 4000.0).regressed
    # Slower in every round but inside the floor, or inside the default's own spread: no regression.
    assert not validate.summarize_problem("rmsnorm_fwd", "32768x4096", "bf16", _validation([1.01] * 5),
                                          4000.0).regressed
    spread = [1.0, 1.1, 1.0, 1.0, 1.0]  # the default's rounds spread 10 %; the rules lose 9.5 %
    assert not validate.summarize_problem("rmsnorm_fwd", "32768x4096", "bf16",
                                          _validation([1.105] * 5, spread), 4000.0).regressed
    # No rule applied: never a regression.
    unapplied = dict(_validation([1.2] * 5), rules_applied=[])
    assert not validate.summarize_problem("rmsnorm_fwd", "32768x4096", "bf16", unapplied, 4000.0).regressed


def test_a_rule_that_reached_only_the_untimed_graph_leaves_the_problem_untouched():
    """Catches validate counting every rule application, when a backward problem times its backward graph only:
    set 45's softmax_bwd 121x4886 read 0.962, "regressed", where the one rule applied was the forward graph's."""
    forward_only = dict(_validation([1.04] * 5), rules_applied=["a forward rule"], timed_rules_applied=[])
    row = validate.summarize_problem("softmax_bwd", "121x4886", "bf16", forward_only, 4000.0)
    assert not row.regressed and not row.heuristics_applied
    timed = dict(forward_only, timed_rules_applied=["a backward rule [backward graph]"])
    row = validate.summarize_problem("softmax_bwd", "121x4886", "bf16", timed, 4000.0)
    assert row.regressed and row.heuristics_applied
