"""What one torch decides for a few catalog kernels on the CPU harness (fake H200), as JSON on stdout.

``python tests/patched_torch_probe.py install RULES``: this torch, with RULES installed (``inductor_tune.install``);
``python tests/patched_torch_probe.py patched``: this torch as it is (a torch patched by ``inductor-tune patch``).

For each case it prints the heuristic of every reduction kernel and the launch configs Inductor would start
from: a forced ``fixed_config`` as it stands in the source, else what the kernel's decorator returns with
``return_configs=True``.  tests/test_patch_torch.py runs it once per torch and compares.  One process imports
one torch, hence a script.
"""

from __future__ import annotations

import json
import re
import sys
import types
from unittest import mock

import torch

CASES = (  # (catalog kernel, rows, cols): rules of heuristics/h200.yaml cover some, not others
    ("rmsnorm_fwd", 8192, 2048), ("rmsnorm_fwd", 8192, 4096), ("rmsnorm_fwd", 8192, 8192),
    ("rmsnorm_fwd", 8192, 1024), ("layernorm_fwd", 8192, 2048), ("layernorm_fwd", 8192, 4096),
    ("layernorm_fwd", 16384, 8192), ("add_rmsnorm_fwd", 8192, 2048), ("add_rmsnorm_fwd", 16384, 4096),
)
_DECORATOR = re.compile(r"@triton_heuristics\.(\w+)\((.*?)\)\n@triton\.jit", re.S)
_FIXED = re.compile(r"@triton_heuristics\.fixed_config\(\s*config=(\{[^}]*\})")


def _configs(source: str) -> list:
    from torch._inductor.runtime import triton_heuristics
    from torch._inductor.runtime.hints import DeviceProperties, ReductionHint

    kernels = []
    for fixed in _FIXED.findall(source):
        config = eval(fixed)  # noqa: S307 - a dict literal Inductor wrote
        warps, stages = config.pop("num_warps"), config.pop("num_stages")
        kernels.append(["persistent" if "R0_BLOCK" not in config else "looped", [[config, warps, stages]]])
    for name, args in _DECORATOR.findall(source):
        if name not in ("reduction", "persistent_reduction"):
            continue
        kwargs = eval(f"dict({args})", {"DeviceProperties": DeviceProperties, "ReductionHint": ReductionHint,
                                        "__file__": None})  # noqa: S307
        kwargs.pop("filename", None)
        with mock.patch("torch.cuda.is_available", lambda: True):
            found = getattr(triton_heuristics, name)(filename=None, return_configs=True, **kwargs)
        kind = "persistent" if name == "persistent_reduction" else "looped"
        kernels.append([kind, [[dict(c.kwargs), c.num_warps, c.num_stages] for c in found]])
    return kernels


def main(argv: list[str]) -> None:
    from inductor_tune import cpu_codegen, kernels
    from inductor_tune.runtime import installation

    handle = None
    if argv[0] == "install":
        props = types.SimpleNamespace(name="NVIDIA H200", major=9, minor=0, multi_processor_count=132)
        installation._current_device_props = lambda: props
        handle = installation.install(argv[1])
        assert handle.active
    result = {"torch": torch.__version__, "file": torch.__file__, "cases": []}
    for name, rows, cols in CASES:
        spec = kernels.get_kernel(name)
        inputs = [((rows, cols), torch.bfloat16) if n in ("x", "residual") else ((cols,), torch.float32)
                  for n in spec.inputs]
        sources = cpu_codegen.generate_sources(spec.build(torch.float32), inputs)
        result["cases"].append([name, rows, cols, [k for src in sources for k in _configs(src)]])
    if handle is not None:
        handle.uninstall()
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
