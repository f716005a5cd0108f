"""Which kernel of a multi-kernel entry runs (`runtime.pick`): Inductor's own unless another is faster in every
round beyond the noise band; Inductor's own multi-kernels are timed as Inductor times them; a timing that fails
keeps Inductor's kernel with a WARNING.  The GPU timing itself is tested in tests/test_gpu_multi_kernel.py."""

import logging
import math
import types

import pytest
from torch._inductor.runtime.hints import HeuristicType

import inductor_tune
from inductor_tune import stats
from inductor_tune.runtime import pick, registry

OWN, FIXED = HeuristicType.REDUCTION, HeuristicType.FIXED


def _call(*types_):
    kernels = [types.SimpleNamespace(heuristic_type=t) for t in types_]
    return types.SimpleNamespace(kernels=kernels, multi_kernel_name="multi_kernel_0")


def test_the_band_is_the_tuners_noise_floor():
    assert pick.NOISE_BAND == stats.NOISE_FLOOR


def test_inductors_own_kernel_is_the_one_without_a_fixed_config():
    assert pick.inductors_own(_call(FIXED, OWN, FIXED).kernels) == 1
    # Inductor's own multi-kernel (persistent and looped, neither fixed), a lone kernel, all fixed: not an entry's.
    for kinds in ((OWN, HeuristicType.PERSISTENT_REDUCTION), (OWN,), (FIXED, FIXED)):
        assert pick.inductors_own(_call(*kinds).kernels) is None


@pytest.mark.parametrize("rounds, expected", [
    # 10 % faster in every round: the entry's kernel.
    ([[10.0, 9.0], [10.0, 9.0], [10.0, 9.0]], 1),
    # A tie (1 % faster, inside the 1.5 % band) is not a win.
    ([[10.0, 9.9], [10.0, 9.9], [10.0, 9.9]], 0),
    # Faster in two rounds of three, by 15 % in the median, beyond both spreads: not every round.
    ([[9.0, 9.0], [10.0, 8.7], [10.0, 8.7]], 0),
    # Faster in every round by 5 %, but the rounds of Inductor's kernel spread 20 %: within noise.
    ([[10.0, 9.5], [12.0, 11.4], [10.0, 9.5]], 0),
    # Two that win: the faster median; one slower: never.
    ([[10.0, 9.0, 8.0, 11.0], [10.0, 9.0, 8.0, 11.0], [10.0, 9.0, 8.0, 11.0]], 2),
])
def test_another_kernel_runs_only_where_it_wins_every_round_beyond_the_band(rounds, expected):
    assert pick.choose(rounds, 0) == expected


def test_the_own_kernel_may_sit_anywhere():
    assert pick.choose([[9.0, 10.0], [9.0, 10.0], [9.0, 10.0]], 1) == 0
    assert pick.choose([[10.5, 10.0], [10.5, 10.0], [10.5, 10.0]], 1) == 1


def test_timings_make_inductors_pick_the_chosen_kernel(monkeypatch):
    rounds = [[10.0, 8.0, 9.0], [10.0, 8.0, 9.0], [10.0, 8.0, 9.0]]
    monkeypatch.setattr(pick, "time_kernels", lambda call, args, kwargs, own: rounds)
    wrapped = pick.benchmark_wrapper(lambda self, *a, **k: pytest.fail("Inductor's own timing ran"))
    before = len(registry.picks())
    timings = wrapped(_call(OWN, FIXED, FIXED), "buf0", stream=0)
    assert timings.index(min(timings)) == 1 and timings[0] == timings[2] == math.inf
    # What ran is kept for validate's records.
    (line,) = registry.picks()[before:]
    assert "an entry's kernel 1 of 3 (Inductor's is 0); medians ['10.0000', '8.0000', '9.0000']" in line


def test_inductors_own_multi_kernels_are_timed_by_inductor(monkeypatch):
    monkeypatch.setattr(pick, "time_kernels", lambda *a: pytest.fail("an Inductor multi-kernel was timed here"))
    wrapped = pick.benchmark_wrapper(lambda self, *a, **k: [2.0, 1.0])
    assert wrapped(_call(OWN, HeuristicType.PERSISTENT_REDUCTION)) == [2.0, 1.0]


def test_a_timing_that_fails_keeps_inductors_kernel_and_warns(monkeypatch, caplog):
    def broken(call, args, kwargs, own):
        raise RuntimeError("operation not permitted when stream is capturing\nmore")

    monkeypatch.setattr(pick, "time_kernels", broken)
    wrapped = pick.benchmark_wrapper(lambda self, *a, **k: pytest.fail("Inductor's own timing ran"))
    with caplog.at_level(logging.WARNING, logger=pick.__name__):
        timings = wrapped(_call(FIXED, OWN))
    assert timings == [math.inf, 0.0]
    assert registry.picks()[-1].endswith("Inductor's kernel, not timed (operation not permitted when stream is "
                                         "capturing)")
    (record,) = caplog.records
    assert "multi_kernel_0 keeps Inductor's kernel" in record.getMessage() and "capturing" in record.getMessage()
    assert "more" not in record.getMessage()


def test_install_times_entries_here_and_uninstall_gives_the_timing_back(monkeypatch):
    from torch._inductor.codegen.multi_kernel import MultiKernelCall

    from inductor_tune.runtime import installation

    monkeypatch.setattr(installation, "_current_device_props",
                        lambda: types.SimpleNamespace(name="NVIDIA H200", major=9, minor=0,
                                                      multi_processor_count=132))
    original = MultiKernelCall.benchmark_sub_kernels
    with inductor_tune.install("heuristics/h200.yaml") as handle:
        assert handle.active
        assert MultiKernelCall.benchmark_sub_kernels.__inductor_tune_original__ is original
    assert MultiKernelCall.benchmark_sub_kernels is original


def _launcher(name, spills=0):
    def launch(*args, **kwargs):
        return name

    launch.config, launch.n_spills = name, spills
    return launch


def _own_kernel(*launchers):
    return types.SimpleNamespace(launchers=list(launchers), inductor_meta={},
                                 precompile=lambda: pytest.fail("precompiled a kernel that has its launchers"))


def test_inductors_own_kernel_keeps_its_fastest_candidate_by_median_and_leaves_spilling_ones_out():
    slow, fast, spilling = _launcher("slow"), _launcher("fast"), _launcher("spilling", spills=40)
    # One noisy round of the slow candidate would win Inductor's least-of-timings; the median does not take it.
    times = {"slow": iter([0.5, 1.0, 1.0]), "fast": iter([0.8, 0.8, 0.8]), "spilling": iter([0.1, 0.1, 0.1])}
    kernel = _own_kernel(slow, fast, spilling)
    seen = []

    def time_one(launch):
        name = launch()
        seen.append((name, launch.keywords))
        return next(times[name])

    pick.settle_own(kernel, ("buf0",), {"stream": 7}, time_one)
    assert kernel.launchers == [fast]
    assert {name for name, _ in seen} == {"slow", "fast"} and all(kw == {"stream": 7} for _, kw in seen)


def test_a_kernel_with_one_candidate_is_left_as_it_is():
    only = _launcher("only")
    kernel = _own_kernel(only)
    pick.settle_own(kernel, (), {}, lambda launch: pytest.fail("timed a kernel with one candidate"))
    assert kernel.launchers == [only]


class _FakeGpu:
    """A GPU timeline for ``burst_median_ms``: a sleep of ``cycles`` lasts ``cycles / rate`` ms, each launch
    ``kernel_ms`` on the GPU and ``queue_ms`` of Python's time."""

    def __init__(self, rate, kernel_ms=0.005, queue_ms=0.06):
        self.rate, self.kernel_ms, self.queue_ms = rate, kernel_ms, queue_ms
        self.gpu = self.cpu = 0.0
        self.sleeps = []

    def event(self, enable_timing=True):
        gpu = self

        class Event:
            def record(self):
                self.at = gpu.gpu

            def elapsed_time(self, other):
                return other.at - self.at

        return Event()

    def sleep(self, cycles):
        self.sleeps.append(cycles / self.rate)
        self.gpu += cycles / self.rate

    def launch(self):
        self.gpu += self.kernel_ms
        self.cpu += self.queue_ms


@pytest.mark.parametrize("calibration_error", [1.0, 3.0])
def test_a_burst_waits_behind_a_sleep_longer_than_pythons_queueing_even_where_the_calibration_is_off(
        monkeypatch, calibration_error):
    """Queueing 30 launches takes 1.8 ms; a calibration 3x too low made every sleep a third as long as asked, and
    the retries, asked only for twice the queueing, never caught up (stop 59's GPU test timed nothing)."""
    import torch

    gpu = _FakeGpu(rate=1000.0)
    monkeypatch.setattr(torch.cuda, "Event", gpu.event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "_sleep", gpu.sleep, raising=False)
    monkeypatch.setattr(pick.time, "perf_counter", lambda: gpu.cpu)
    flush = types.SimpleNamespace(zero_=lambda: None)
    median = pick.burst_median_ms(gpu.launch, flush, cycles_per_ms=gpu.rate / calibration_error)
    assert median == pytest.approx(gpu.kernel_ms)
    assert gpu.sleeps[-1] > gpu.queue_ms * pick.LAUNCHES_PER_BURST / pick.QUEUE_SHARE
    assert len(gpu.sleeps) <= 2
