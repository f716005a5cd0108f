"""The tuner's trial plans: forcing one trial's config into the kernels Inductor generates.

A ``CompilePlan`` says what one compile forces and records what it saw.  ``activate_plan`` registers
it with the runtime's Inductor hook (``runtime.registry.planning``) for the compiles inside the
block; the hook (``runtime.hook.InductorTuneChoices``, installed once per process by ``install``)
asks the plan first and the installed rules only outside a plan, so the runtime knows nothing of
trials and a user's process never imports this module.

For every reduction kernel of the graph being tuned the plan records a ``KernelSlot`` (so the probe
sees what Inductor generates) and, when it has a config for that slot, injects
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

from .runtime import registry
# The hook's names, as the tuner, its tests and its scripts know them: ``TrialChoices`` is the hook
# class itself (not a subclass), and ``install()`` routes every later compile through it.
from .runtime.hook import (  # noqa: F401
    SUPPORTED_TORCH, UnsupportedTorch, check_torch_supported, drop_cached_choices, force_config, torch_version_tuple,
)
from .runtime.hook import InductorTuneChoices as TrialChoices  # noqa: F401
from .runtime.hook import use_hook as install  # noqa: F401
from .runtime.torch_rules import envelope_of_features, kernel_reduction_types, reductions_key
from .space import KernelSlot, TrialConfig, slot_key

log = logging.getLogger(__name__)


@dataclasses.dataclass
class CompilePlan:
    """What one compile forces and what it observed (mutable: filled in while Inductor runs).

    While active (``activate_plan``) it decides every reduction kernel of its compiles, forced or left
    to Inductor: installed rules never reach a trial (``runtime.registry.Planner``)."""

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

    def cache_key(self) -> str:
        return hashlib.sha256(self.config.to_json().encode()).hexdigest()

    def kernel_kwargs(self, hook, features, groups, kernel_kwargs: dict[str, Any]) -> dict[str, Any]:
        """Record the kernel as a slot and force the plan's config for it, if any."""
        from torch._inductor.virtualized import V

        try:
            rnumel, xnumel = int(features.reduction_numel), int(features.numel)
        except TypeError:  # symbolic sizes: studies compile with static shapes, so this is not ours
            return kernel_kwargs
        if rnumel == 1 or bool(getattr(V.graph, "is_backward", False)) != self.backward:
            return kernel_kwargs
        tiling = groups[0] if groups and isinstance(groups[0], dict) else {}
        mix = bool(kernel_kwargs.get("mix_order_reduction"))
        key = slot_key(self.backward, mix, xnumel, rnumel, (s.key for s in self.slots))
        if set(tiling) - {"x", "r0_"}:
            self.untunable.append(f"{key}: tiling {sorted(tiling)} is not a plain x/r0_ reduction")
            return kernel_kwargs
        self.slots.append(KernelSlot(
            key, self.backward, xnumel, rnumel, mix, mix or _default_persistent(hook, features),
            reductions_key(kernel_reduction_types(features)), envelope_of_features(features) or "",
        ))
        cfg = None if self.config.inductor_default else self.config.slot_map().get(key)
        if cfg is None:
            return kernel_kwargs
        self.forced[key] = cfg.fixed_config()
        return force_config(kernel_kwargs, cfg, mix)


def _default_persistent(hook, features) -> bool:
    try:
        return bool(hook.should_use_persistent_reduction(features, False))
    except Exception as exc:  # recorded, not fatal: the flag only annotates the slot
        log.debug("could not evaluate Inductor's persistent decision: %s", exc)
        return False


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
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config
    from torch._inductor.graph import GraphLowering

    patches = {**CACHE_SETTINGS, **plan.inductor_config()}
    with registry.planning(plan), inductor_config.patch(patches), functorch_config.patch(
        enable_autograd_cache=False
    ), mock.patch.object(GraphLowering, "save_output_code", staticmethod(plan.sources.append)):
        yield plan


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
