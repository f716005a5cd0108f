"""GPU test of a multi-kernel entry (H200): Inductor builds its kernel and the entry's, times them at the first run,
and the compiled function returns what eager does.  ``pytest -m gpu``; skipped without CUDA or on another GPU."""

from __future__ import annotations

import dataclasses
import os

import pytest
import torch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _entry_file():
    from inductor_tune import heuristics, kernels
    from inductor_tune.heuristics import MultiKernelSpec, SlotConfig

    heur = heuristics.load(os.path.join(ROOT, "heuristics", "h200.yaml"))
    if torch.cuda.get_device_name() != heur.gpu.name:
        pytest.skip(f"the entry is written for {heur.gpu.name}")
    entry = MultiKernelSpec("inner_looped", 2, (4096, 16384), (4000, 4096),
                            (SlotConfig(True, 2, 8), SlotConfig(False, 1, 8, R0_BLOCK=1024, num_stages=1)),
                            (("sum", kernels.get_kernel("rmsnorm_fwd").envelope),))
    return dataclasses.replace(heur, rules=(), unsplit=(), mix_autotune=(), multi_kernel=(entry,))


def test_an_entry_builds_its_kernels_beside_inductors_and_the_compiled_result_is_eagers():
    import torch._inductor.config as inductor_config
    from torch._inductor.utils import run_and_get_code

    from inductor_tune import heuristics, kernels
    from inductor_tune.runtime import registry

    fn = kernels.get_kernel("rmsnorm_fwd").build(torch.float32)
    x = torch.randn(8192, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, device="cuda", dtype=torch.float32)
    expected = fn(x, w)
    torch._dynamo.reset()
    before = len(registry.applied_rules())
    with heuristics.install(_entry_file()) as handle, inductor_config.patch(force_disable_caches=True):
        assert handle.active, handle.reason
        out, (code, *_) = run_and_get_code(torch.compile(fn), x, w)
        again = torch.compile(fn)(x, w)  # the kernel picked at the first run serves the next
    torch._dynamo.reset()
    assert code.count("async_compile.multi_kernel(") == 1 and code.count("@triton_heuristics.fixed_config(") == 2
    assert any(line.startswith("multi-kernel inner_looped") for line in registry.applied_rules()[before:])
    torch.testing.assert_close(out, expected, rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(again, expected, rtol=2e-2, atol=2e-2)


def test_the_pick_times_without_launch_overhead_and_keeps_inductors_kernel_against_a_slow_config():
    import re

    from inductor_tune import heuristics, kernels
    from inductor_tune.heuristics import SlotConfig
    from inductor_tune.runtime import registry

    slow = SlotConfig(False, 1, 1, R0_BLOCK=16, num_stages=1)  # one warp walking 4096 columns 16 at a time
    heur = _entry_file()
    entry = dataclasses.replace(heur.multi_kernel[0], configs=(slow,))
    fn = kernels.get_kernel("rmsnorm_fwd").build(torch.float32)
    x = torch.randn(8192, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, device="cuda", dtype=torch.float32)
    torch._dynamo.reset()
    before = len(registry.picks())
    with (heuristics.install(dataclasses.replace(heur, multi_kernel=(entry,))),
          torch._inductor.config.patch(force_disable_caches=True)):
        torch.compile(fn)(x, w)
    torch._dynamo.reset()
    (line,) = registry.picks()[before:]
    picked, own, medians = re.search(r"Inductor's kernel (\d+) of 2 \(Inductor's is (\d+)\); medians \[([^]]*)\]",
                                     line).groups()
    times = [float(t.strip("' ")) for t in medians.split(",")]
    assert picked == own and times[1 - int(own)] > 1.5 * times[int(own)], line
    # 64 MiB read and 64 MiB written: no kernel below 10 us on any GPU this project knows.
    assert all(t > 0.01 for t in times), line
