"""Helpers the GPU tests share (imported as distill_fixtures is; nothing here needs a GPU to import)."""


def reduction_kernels(compiled, *args) -> int:
    """How many reduction kernels (looped or persistent) the compiled program's generated code defines."""
    from torch._inductor.utils import run_and_get_code

    _, codes = run_and_get_code(compiled, *args)
    return sum(code.count("@triton_heuristics.reduction(") + code.count("@triton_heuristics.persistent_reduction(")
               for code in codes)
