"""Forcing a trial's config into the kernels Inductor generates, through Inductor's own extension point.

``TrialChoices`` is installed once per process as ``config.inductor_choices_class``.  Inductor caches
the choices object per thread on first use (``virtualized._choices_default``), and compiles backward
graphs lazily on the autograd thread, so the object must exist before any compile and read the
active plan from module state rather than carry it.  Outside ``activate_plan`` it behaves exactly
like ``InductorChoices``.

For every reduction kernel of the graph being tuned it records a ``KernelSlot`` (so the probe sees
what Inductor generates) and, when the plan has a config for that slot, injects
``fixed_config=FixedTritonConfig(...)`` and ``override_persistent_reduction``.  The config is then
written into the kernel source, so every cache keyed by source serves the right kernel, and
``verify_source`` checks that it landed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import re
from typing import Any, Iterator
from unittest import mock

import torch

from .space import KernelSlot, SlotConfig, TrialConfig, slot_key

log = logging.getLogger(__name__)

SUPPORTED_TORCH = ((2, 11), (2, 13))


class UnsupportedTorch(RuntimeError):
    pass


def torch_version_tuple(version: str | None = None) -> tuple[int, int]:
    text = (version or torch.__version__).split("+")[0]
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


def check_torch_supported(version: str | None = None) -> None:
    """Fail with one line unless this torch has the hooks the tuner drives (2.11 .. 2.13 checked)."""
    found = torch_version_tuple(version)
    low, high = SUPPORTED_TORCH
    if not (low <= found <= high):
        raise UnsupportedTorch(
            f"torch {version or torch.__version__} is not supported: inductor_tune drives Inductor hooks "
            f"checked on torch {low[0]}.{low[1]} to {high[0]}.{high[1]}"
        )
    from torch._inductor import choices
    from torch._inductor.codegen import triton as triton_codegen

    if not hasattr(choices.InductorChoices, "triton_kernel_kwargs") or not hasattr(
        triton_codegen, "FixedTritonConfig"
    ):
        raise UnsupportedTorch(
            f"torch {torch.__version__} lacks InductorChoices.triton_kernel_kwargs or FixedTritonConfig"
        )


@dataclasses.dataclass
class CompilePlan:
    """What one compile forces and what it observed (mutable: filled in while Inductor runs)."""

    config: TrialConfig
    backward: bool
    slots: list[KernelSlot] = dataclasses.field(default_factory=list)
    forced: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    untunable: list[str] = dataclasses.field(default_factory=list)
    sources: list[str] = dataclasses.field(default_factory=list)

    def inductor_config(self) -> dict[str, Any]:
        """Inductor settings this trial needs on top of the cache settings every trial uses."""
        patches = self.config.flags.inductor_config()
        for _, cfg in self.config.slots:
            if cfg.RSPLIT_SIZE is not None:
                # The split size also sizes the workspace at codegen, so it must agree with the
                # RSPLIT_SIZE in the forced launch config.
                patches["triton.mix_order_reduction_split_size"] = cfg.RSPLIT_SIZE
        return patches


_ACTIVE: CompilePlan | None = None


def _choices_base():
    from torch._inductor.choices import InductorChoices

    return InductorChoices


class TrialChoices(_choices_base()):
    """InductorChoices that applies the active CompilePlan to reduction kernels and, outside a plan,
    the rules installed by ``inductor_tune.install`` (a tuning plan wins over installed rules)."""

    def uuid(self) -> str | None:
        # torch 2.13 folds this into the FX-graph cache key; the tuner disables that cache anyway.
        plan = _ACTIVE
        if plan is not None:
            return hashlib.sha256(plan.config.to_json().encode()).hexdigest()
        from .heuristics import installed_digest

        digest = installed_digest()
        return f"inductor-tune-heuristics-{digest}" if digest else "inductor-default"

    def triton_kernel_kwargs(self, kernel_cls, features, groups, kernel_kwargs):
        kernel_kwargs = super().triton_kernel_kwargs(kernel_cls, features, groups, kernel_kwargs)
        plan = _ACTIVE
        if plan is None:
            from .heuristics import apply_rules

            return apply_rules(features, groups, kernel_kwargs)
        from torch._inductor.virtualized import V

        try:
            rnumel, xnumel = int(features.reduction_numel), int(features.numel)
        except TypeError:  # symbolic sizes: studies compile with static shapes, so this is not ours
            return kernel_kwargs
        if rnumel == 1 or bool(getattr(V.graph, "is_backward", False)) != plan.backward:
            return kernel_kwargs
        tiling = groups[0] if groups and isinstance(groups[0], dict) else {}
        mix = bool(kernel_kwargs.get("mix_order_reduction"))
        key = slot_key(plan.backward, mix, xnumel, rnumel, (s.key for s in plan.slots))
        if set(tiling) - {"x", "r0_"}:
            plan.untunable.append(f"{key}: tiling {sorted(tiling)} is not a plain x/r0_ reduction")
            return kernel_kwargs
        from .torch_rules import envelope_of_features, kernel_reduction_types, reductions_key

        plan.slots.append(KernelSlot(
            key, plan.backward, xnumel, rnumel, mix, mix or self._default_persistent(features),
            reductions_key(kernel_reduction_types(features)), envelope_of_features(features) or "",
        ))
        cfg = None if plan.config.inductor_default else plan.config.slot_map().get(key)
        if cfg is None:
            return kernel_kwargs
        plan.forced[key] = cfg.fixed_config()
        return force_config(kernel_kwargs, cfg, mix)

    def _default_persistent(self, features) -> bool:
        try:
            return bool(self.should_use_persistent_reduction(features, False))
        except Exception as exc:  # recorded, not fatal: the flag only annotates the slot
            log.debug("could not evaluate Inductor's persistent decision: %s", exc)
            return False


def force_config(kernel_kwargs: dict[str, Any], cfg: SlotConfig, mix_order: bool) -> dict[str, Any]:
    """The TritonKernel kwargs that make Inductor emit ``cfg`` (also used by installed heuristics)."""
    from torch._inductor.codegen.triton import FixedTritonConfig

    kernel_kwargs = dict(kernel_kwargs)
    kernel_kwargs["fixed_config"] = FixedTritonConfig(cfg.fixed_config())
    kernel_kwargs["override_cooperative_reduction"] = False
    if not mix_order:  # Inductor asserts the mix-order kernel is persistent; it is forced already
        kernel_kwargs["override_persistent_reduction"] = cfg.persistent
    return kernel_kwargs


def install() -> None:
    """Make every later compile in this process go through TrialChoices."""
    import torch._inductor.config as inductor_config

    check_torch_supported()
    inductor_config.inductor_choices_class = TrialChoices
    drop_cached_choices()


def drop_cached_choices() -> None:
    """Inductor caches its choices object per thread on first use; drop this thread's so that the next
    compile builds the configured class.  Threads that compiled before keep theirs."""
    from torch._inductor import virtualized

    virtualized.threadlocal.__dict__.pop(virtualized._choices._key, None)


# Caches that key on Inductor config or graph, not on the choices hook, would replay a kernel
# compiled for another trial; those keyed on kernel source are safe because the config is in it.
CACHE_SETTINGS: dict[str, Any] = {
    "fx_graph_cache": False,
    "autotune_local_cache": False,
    "coordinate_descent_tuning": False,
}


@contextlib.contextmanager
def activate_plan(plan: CompilePlan) -> Iterator[CompilePlan]:
    """Apply ``plan`` to every Inductor compile inside the block and capture their sources."""
    global _ACTIVE
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config
    from torch._inductor.graph import GraphLowering

    if _ACTIVE is not None:
        raise RuntimeError("a compile plan is already active in this process")
    patches = {**CACHE_SETTINGS, **plan.inductor_config()}
    _ACTIVE = plan
    try:
        with inductor_config.patch(patches), functorch_config.patch(enable_autograd_cache=False), mock.patch.object(
            GraphLowering, "save_output_code", staticmethod(plan.sources.append)
        ):
            yield plan
    finally:
        _ACTIVE = None


_FIXED_RE = re.compile(r"@triton_heuristics\.fixed_config\(\s*config=(\{[^}]*\})")


def verify_source(plan: CompilePlan) -> str | None:
    """Why the generated source does not carry the plan's configs, or None when it does."""
    found = [m.group(1) for src in plan.sources for m in _FIXED_RE.finditer(src)]
    if plan.config.inductor_default:
        return f"Inductor default compile contains forced configs {found}" if found else None
    wanted = plan.config.slot_map()
    missing = sorted(set(wanted) - set(plan.forced))
    if missing:
        seen = ", ".join(s.key for s in plan.slots) or "none"
        return f"config names kernels {missing} that this compile did not generate (generated: {seen})"
    for key, fixed in plan.forced.items():
        if repr(fixed) not in found:
            return f"forced config {fixed} for {key} is not in the generated source"
    if len(found) < len(plan.forced):
        return f"{len(plan.forced)} kernels were forced but the source has {len(found)} fixed configs"
    return None


def source_hash(plan: CompilePlan) -> str:
    return hashlib.sha256("\n".join(plan.sources).encode()).hexdigest()[:16]
