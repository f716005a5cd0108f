"""The torch versions inductor_tune drives, declared once for ``install`` and ``inductor-tune patch``.

Both depend on Inductor internals that move between minor releases (``InductorChoices.triton_kernel_kwargs``,
``FixedTritonConfig``, the config functions' source), so a version is supported only once its sources were
read and its CPU codegen tests ran; one between two supported ones (2.12) is as unknown as a newer one.
No torch import here: ``patch`` names the versions without importing torch, which costs seconds.
"""

from __future__ import annotations

import re

# (major, minor) of every torch whose Inductor was checked (docs/torch-versions.md says how, and what moved).
SUPPORTED_TORCH = ((2, 11), (2, 13), (2, 14))
# The first release where config functions ask Inductor's heuristics registry
# (torch/_inductor/heuristics/triton_codegen/reduction.py) for their candidates.
REGISTRY_TORCH = (2, 14)


def version_tuple(version: str) -> tuple[int, int] | None:
    """(major, minor) of a torch version text ('2.14.1+cu130' -> (2, 14)); None where it is not one."""
    found = re.match(r"(\d+)\.(\d+)(?:\.|\+|$|[a-z])", version.strip())
    return (int(found.group(1)), int(found.group(2))) if found else None


def supported_text() -> str:
    """'2.11, 2.13 and 2.14'."""
    names = [f"{a}.{b}" for a, b in SUPPORTED_TORCH]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


def refusal(version: str) -> str | None:
    """Why this torch version is not driven, in one line; None when it is supported."""
    if version_tuple(version) in SUPPORTED_TORCH:
        return None
    return f"torch {version} is not supported: inductor_tune knows the Inductor sources of torch {supported_text()}"
