"""Generate Inductor's CUDA Triton source on a machine without a GPU.

Used by the CPU tests to check that a forced config lands in the generated kernel, and by anyone
who wants to see what Inductor would emit for a shape on a given GPU model.  It patches the device
queries Inductor makes (see shared research notes, section 6) for the duration of ``fake_cuda`` and
captures the wrapper code instead of loading it (loading needs a real CUDA stream).

Only code generation is faithful here; nothing is timed.
"""

from __future__ import annotations

import contextlib
import types
from typing import Callable, Iterator
from unittest import mock

import torch

from .choices import CompilePlan, activate_plan


@contextlib.contextmanager
def fake_cuda(major: int = 9, sm_count: int = 132, name: str = "NVIDIA H200") -> Iterator[None]:
    """Pretend a CUDA device is present while Inductor generates code: by default an H200 (the GPU the
    committed rules were measured on), whose properties an H100 SXM shares but for its name."""
    import torch._inductor.compile_fx as compile_fx
    import torch._inductor.fx_passes.joint_graph as joint_graph
    import torch._inductor.fx_passes.post_grad as post_grad
    import torch._inductor.scheduler as scheduler
    import torch.utils._triton as triton_utils
    from torch._inductor.runtime.hints import DeviceProperties

    props = DeviceProperties(
        type="cuda", index=0, multi_processor_count=sm_count, cc=major * 10, major=major,
        regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024,
        warp_size=32,
    )
    cuda_props = types.SimpleNamespace(
        name=name, major=major, minor=0, multi_processor_count=sm_count, total_memory=80 * 2**30,
        regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024,
        warp_size=32, L2_cache_size=50 * 2**20, shared_memory_per_block_optin=232448, gcnArchName="",
    )
    patches = [
        mock.patch.object(DeviceProperties, "create", classmethod(lambda cls, device: props)),
        mock.patch("torch.cuda.get_device_properties", lambda *a, **k: cuda_props),
        mock.patch("torch.cuda.get_device_capability", lambda *a, **k: (major, 0)),
        mock.patch("torch.cuda.current_device", lambda: 0),
        mock.patch.object(triton_utils, "has_triton", lambda: True),
        mock.patch.object(triton_utils, "triton_hash_with_backend", lambda: "FAKEHASH"),
        mock.patch.object(scheduler, "has_triton", lambda: True),
        mock.patch.object(compile_fx, "_check_triton_bf16_support", lambda graph: None),
        # Pattern-matcher init traces real tensors on the target device, which does not exist here.
        mock.patch.object(joint_graph, "lazy_init", lambda *a, **k: None),
        mock.patch.object(post_grad, "lazy_init", lambda *a, **k: None),
    ]
    with contextlib.ExitStack() as stack:
        for p in patches:
            stack.enter_context(p)
        yield


def generate(
    fn: Callable[..., object], inputs: list[tuple[tuple[int, ...], torch.dtype]], plan: CompilePlan, major: int = 9
) -> CompilePlan:
    """Run Inductor codegen for ``fn`` on fake CUDA tensors under ``plan``; sources land in the plan."""
    import torch._inductor.config as inductor_config

    with fake_cuda(major), activate_plan(plan), inductor_config.patch(force_disable_caches=True, compile_threads=1):
        _compile_on_fake_cuda(fn, inputs, captured=lambda: bool(plan.sources))
    return plan


def _compile_on_fake_cuda(fn, inputs, captured: Callable[[], bool]) -> None:
    """Compile ``fn`` on fake CUDA tensors (inside ``fake_cuda``) until its code is captured."""
    from torch._guards import TracingContext, tracing
    from torch._inductor.compile_fx import compile_fx
    from torch._subclasses.fake_tensor import FakeTensorMode

    fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
    with fake_mode:
        args = [torch.empty(shape, device="cuda", dtype=dtype) for shape, dtype in inputs]
    gm = torch.fx.symbolic_trace(fn)
    try:
        with tracing(TracingContext(fake_mode)):
            compile_fx(gm, args)
    except Exception:
        # Loading the wrapper needs a CUDA stream, which a CPU build cannot give; by then the
        # code has been captured.  Anything that fails earlier leaves no source and re-raises.
        if not captured():
            raise


def generate_sources(
    fn: Callable[..., object], inputs: list[tuple[tuple[int, ...], torch.dtype]], major: int = 9, sm_count: int = 132,
    name: str = "NVIDIA H200",
) -> list[str]:
    """Inductor's wrapper code for ``fn`` with whatever choices hook is configured (no tuning plan)."""
    import torch._inductor.config as inductor_config
    from torch._inductor.graph import GraphLowering

    sources: list[str] = []
    with fake_cuda(major, sm_count, name), inductor_config.patch(force_disable_caches=True, compile_threads=1), \
            mock.patch.object(GraphLowering, "save_output_code", staticmethod(sources.append)):
        _compile_on_fake_cuda(fn, inputs, captured=lambda: bool(sources))
    return sources
