"""Which kernel of a multi-kernel entry runs: Inductor's own unless another is faster beyond the noise band.

Inductor's ``MultiKernelCall`` times each kernel at the first run with ``benchmarker.benchmark``: one launch from
Python between two CUDA events, each repeat.  A kernel of a few microseconds then measures its launch's CPU time,
which differs from kernel to kernel by more than the kernels do, and it keeps the least of the timings, a tie
included.  On the H200, set 49 (stop 58) found 10 of the 114 problems an entry touched slower than Inductor's default
beyond noise, every one at a kernel of 5-20 us; at one of them (``nn_layernorm_fwd`` 120x1018) it timed Inductor's
kernel at 37 us and another at 4.7 us, and a second compile of the same problems picked otherwise.

So the kernels of an entry (the fixed-config kernels ``multi_kernel.choices_wrapper`` adds beside Inductor's own)
are timed here instead: a burst of launches queued behind a GPU sleep long enough for Python to queue them all, so
the events time the GPU's work and not the launches', L2 zeroed before each launch as ``validate`` times, in
interleaved rounds.  Another kernel replaces Inductor's only where it is faster in every round and its median gain
clears the noise band (``NOISE_BAND``, and each kernel's own spread over the rounds), the verdict ``stats.compare``
gives studies and validation.  Inductor's own kernel is settled the same way first: where it has several candidate
configs, the fastest median of them replaces the pick of Inductor's autotuner, which times launches as its
MultiKernel does (``settle_own``).  Where the timing cannot be done, Inductor's kernel is kept and a WARNING says
why.  Multi-kernels of Inductor's own (``triton.multi_kernel``) are timed as Inductor times them.
"""

from __future__ import annotations

import functools
import logging
import math
import statistics
import time
from typing import Any, Callable, Sequence

from . import registry

log = logging.getLogger(__name__)

# stats.NOISE_FLOOR: the least gain any verdict of the tuner takes for a win (the runtime imports nothing of it).
NOISE_BAND = 0.015
ROUNDS = 3
LAUNCHES_PER_BURST = 30
# What Python takes to queue one launch with its L2 zeroing and two events is 30-60 us; a sleep shorter than the
# queueing leaves the GPU idle between launches, and the events time the launches again.
FIRST_SLEEP_MS = 4.0
SLEEP_TRIES = 4
# Python's queueing against what the sleep lasted: above this share, the burst is timed again with a longer sleep.
QUEUE_SHARE = 0.8


def inductors_own(kernels: Sequence[Any]) -> int | None:
    """The index of Inductor's own kernel among a multi-kernel's where all the others are an entry's fixed-config
    kernels, else None (a multi-kernel of Inductor's own)."""
    from torch._inductor.runtime.hints import HeuristicType

    own = [i for i, kernel in enumerate(kernels) if getattr(kernel, "heuristic_type", None) != HeuristicType.FIXED]
    return own[0] if len(kernels) > 1 and len(own) == 1 else None


def _spread(times: Sequence[float]) -> float:
    return (max(times) - min(times)) / statistics.median(times)


def choose(rounds: Sequence[Sequence[float]], own: int, band: float = NOISE_BAND) -> int:
    """The kernel to run, from ``rounds[r][k]``, kernel k's time in round r: the fastest median of those faster
    than Inductor's own (index ``own``) in every round by a median gain beyond ``band`` and both spreads; else
    ``own``."""
    per_kernel = list(zip(*rounds))
    own_times = per_kernel[own]
    best, best_median = own, statistics.median(own_times)
    for index, times in enumerate(per_kernel):
        if index == own or not all(t_own > t for t_own, t in zip(own_times, times)):
            continue
        noise = max(band, _spread(own_times), _spread(times))
        median = statistics.median(times)
        if statistics.median(own_times) / median > 1.0 + noise and median < best_median:
            best, best_median = index, median
    return best


@functools.lru_cache(maxsize=1)
def _sleep_cycles_per_ms() -> float:
    """GPU sleep cycles per millisecond, measured once per process."""
    import torch

    # The first sleep of a process also waits for its kernel's module to load, which the events would time: a
    # calibration that long made every later sleep too short (the GPU test at stop 59 could time nothing).
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    cycles = 10_000_000
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    end.synchronize()
    return cycles / max(start.elapsed_time(end), 1e-3)


def burst_median_ms(launch: Callable[[], Any], flush: Any, cycles_per_ms: float) -> float:
    """Median time of ``LAUNCHES_PER_BURST`` launches of ``launch``, queued behind a GPU sleep so that the GPU never
    waits for Python, each after zeroing ``flush`` (a buffer the size of L2)."""
    import torch

    sleep_ms = FIRST_SLEEP_MS
    for _ in range(SLEEP_TRIES):
        pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                 for _ in range(LAUNCHES_PER_BURST)]
        slept = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        torch.cuda.synchronize()
        slept[0].record()
        torch.cuda._sleep(int(sleep_ms * cycles_per_ms))
        slept[1].record()
        queued_from = time.perf_counter()
        for start, end in pairs:
            flush.zero_()
            start.record()
            launch()
            end.record()
        queued_ms = (time.perf_counter() - queued_from) * 1e3
        torch.cuda.synchronize()
        slept_ms = slept[0].elapsed_time(slept[1])
        if queued_ms < QUEUE_SHARE * slept_ms:
            return statistics.median(start.elapsed_time(end) for start, end in pairs)
        # Scaled by what the sleep lasted against what was asked, should the calibration be off.
        sleep_ms = 2 * queued_ms / QUEUE_SHARE * sleep_ms / max(slept_ms, 1e-3)
    raise RuntimeError(f"Python queued {LAUNCHES_PER_BURST} launches slower than a {sleep_ms:.0f} ms sleep lasts")


def settle_own(kernel: Any, args: Sequence[Any], kwargs: dict, time_one: Callable[[Callable[[], Any]], float]) -> None:
    """Inductor's own kernel of an entry, where it has several candidate configs, keeps the one ``time_one``
    times fastest (median of ``ROUNDS``), in place of the pick of Inductor's autotuner, which times launches the
    same way as its MultiKernel: two compiles of one program then settle on different configs (set 50, stop 58:
    ``llama_rmsnorm_train_fwd`` 7608x7496 ran R0_BLOCK 2048 under the entry and 8192 in the default's compile,
    0.966x, twice).  Candidates that spill past Inductor's threshold are left out, as its autotuner leaves them."""
    if not kernel.launchers:
        kernel.precompile()
    threshold = kernel.inductor_meta.get("spill_threshold", 16)
    launchers = [launcher for launcher in kernel.launchers if (getattr(launcher, "n_spills", 0) or 0) <= threshold]
    if len(kernel.launchers) < 2 or not launchers:
        return
    rounds: dict[Any, list[float]] = {launcher: [] for launcher in launchers}
    for _ in range(ROUNDS):
        for launcher in launchers:
            rounds[launcher].append(time_one(functools.partial(launcher, *args, **kwargs)))
    medians = {launcher: statistics.median(times) for launcher, times in rounds.items()}
    kernel.launchers = [min(medians, key=medians.get)]
    log.debug("inductor_tune: Inductor's own kernel keeps %s of %d candidates (medians %s ms)",
              getattr(kernel.launchers[0], "config", "?"), len(launchers), ["%.4f" % m for m in medians.values()])


def time_kernels(call: Any, args: tuple, kwargs: dict, own: int) -> list[list[float]]:
    """``rounds[r][k]`` for the kernels of ``call`` (a MultiKernelCall), each launched on clones of its arguments
    as Inductor's own timing does, Inductor's own kernel (index ``own``) settled first (``settle_own``); the order
    of the kernels turns each round."""
    import torch

    l2_bytes = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0)
    flush = torch.empty(max(l2_bytes, 1 << 20) // 4, dtype=torch.int, device="cuda")
    cycles_per_ms = _sleep_cycles_per_ms()
    launches = []
    for index, kernel in enumerate(call.kernels):
        cloned_args, cloned_kwargs = kernel.clone_args(*call._get_filtered_args(args, index), **kwargs)
        if index == own:
            settle_own(kernel, cloned_args, {"stream": torch.cuda.current_stream().cuda_stream, **cloned_kwargs},
                       lambda launch: burst_median_ms(launch, flush, cycles_per_ms))
        launches.append(functools.partial(kernel.run, *cloned_args, **cloned_kwargs))
    for launch in launches:
        launch()  # compiles the entry's kernels
    rounds = []
    for r in range(ROUNDS):
        order = [(r + i) % len(launches) for i in range(len(launches))]
        times = {i: burst_median_ms(launches[i], flush, cycles_per_ms) for i in order}
        rounds.append([times[i] for i in range(len(launches))])
    return rounds


def benchmark_wrapper(original: Callable[..., list[float]]) -> Callable[..., list[float]]:
    """MultiKernelCall.benchmark_sub_kernels: for an entry's kernels, timings whose least is the kernel ``choose``
    picks (the others Inductor's own verdict would take read as infinite)."""

    @functools.wraps(original)
    def benchmark_sub_kernels(self, *args, **kwargs):
        own = inductors_own(self.kernels)
        if own is None:
            return original(self, *args, **kwargs)
        name = getattr(self, "multi_kernel_name", "multi-kernel")
        hints = getattr(self.kernels[own], "size_hints", None)
        try:
            rounds = time_kernels(self, args, kwargs, own)
        except Exception as exc:  # a pick must never fail the user's first run: Inductor's kernel is always correct
            reason = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
            log.warning("inductor_tune: %s keeps Inductor's kernel; its kernels could not be timed: %s", name, reason)
            registry.note_pick(f"size hints {hints}: Inductor's kernel, not timed ({reason})")
            return [0.0 if i == own else math.inf for i in range(len(self.kernels))]
        picked = choose(rounds, own)
        medians = [statistics.median(times) for times in zip(*rounds)]
        line = (f"size hints {hints}: {'Inductor' if picked == own else 'an entry'}'s kernel {picked} of "
                f"{len(medians)} (Inductor's is {own}); medians {['%.4f' % m for m in medians]} ms over {len(rounds)} "
                f"rounds")
        log.debug("inductor_tune: %s %s", name, line)
        registry.note_pick(line)
        return [medians[i] if i == picked else math.inf for i in range(len(medians))]

    benchmark_sub_kernels.__inductor_tune_original__ = original
    return benchmark_sub_kernels
