"""The Inductor hook: one ``InductorChoices`` subclass that forces launch configs into reduction kernels.

``InductorTuneChoices`` is set as ``config.inductor_choices_class``, by ``install`` for a user's rules
and by the tuner's workers for its trials.  Inductor caches the choices object per thread on first
use (``virtualized._choices_default``) and compiles backward graphs lazily on the autograd thread, so
the object reads what to force from ``registry`` at every kernel rather than carry it: a tuning plan
registered there first (``registry.planning``), else the installed rules, else nothing, and with
nothing it behaves exactly like ``InductorChoices``.

A forced config is written into the kernel source (``FixedTritonConfig``), so every cache keyed by
source serves the right kernel.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import torch
from torch._inductor.choices import InductorChoices

from . import fallback, mix_autotune, multi_kernel, registry, torch_rules, versions
from .launch import SlotConfig, force_config
from .versions import SUPPORTED_TORCH  # noqa: F401  (the tuner's name for it)

log = logging.getLogger(__name__)


class UnsupportedTorch(RuntimeError):
    pass


def torch_version_tuple(version: str | None = None) -> tuple[int, int] | None:
    return versions.version_tuple(version or torch.__version__)


def check_torch_supported(version: str | None = None) -> None:
    """Fail with one line unless this torch is one whose Inductor hooks were checked (``versions``)."""
    problem = versions.refusal(version or torch.__version__)
    if problem:
        raise UnsupportedTorch(problem)
    from torch._inductor.codegen import triton as triton_codegen

    if not hasattr(InductorChoices, "triton_kernel_kwargs") or not hasattr(triton_codegen, "FixedTritonConfig"):
        raise UnsupportedTorch(
            f"torch {torch.__version__} lacks InductorChoices.triton_kernel_kwargs or FixedTritonConfig"
        )


def apply_rules(features, groups, kernel_kwargs):
    """The installed rules' config for one kernel, as TritonKernel kwargs (unchanged where none applies)."""
    table = registry.installed_table()
    if table is None:
        return kernel_kwargs
    mix = bool(kernel_kwargs.get("mix_order_reduction"))
    tiling = groups[0] if groups and isinstance(groups[0], dict) else {}
    if kernel_kwargs.get("fixed_config") is not None or set(tiling) - {"x", "r0_"}:
        return kernel_kwargs
    # Inductor forces the persistent choice where only one works (sort; torch 2.14's strict multi-row sums);
    # a rule must not undo it.  The mix-order kernel is forced persistent too, and its rules keep that.
    if not mix and "override_persistent_reduction" in kernel_kwargs:
        return kernel_kwargs
    # A multi-kernel entry comes first: Inductor builds the entry's configs beside its own kernel (multi_kernel).
    if not mix and multi_kernel.covering(features, groups, kernel_kwargs) is not None:
        return kernel_kwargs
    try:
        rule = torch_rules.rule_for_features(features, mix, table)
        envelope = torch_rules.envelope_of_features(features) if rule is not None else None
    except Exception as exc:  # a lookup failure must never break a user's compile
        log.debug("heuristic lookup failed, keeping Inductor's config: %s", exc)
        return kernel_kwargs
    if rule is None:
        return kernel_kwargs
    if mix:
        import torch._inductor.config as inductor_config

        # The split was fixed before this hook runs; a mismatch would size the workspace wrongly.
        if inductor_config.triton.mix_order_reduction_split_size != rule.RSPLIT_SIZE:
            return kernel_kwargs
    cfg = SlotConfig(
        persistent=rule.persistent, XBLOCK=rule.XBLOCK, num_warps=rule.num_warps, R0_BLOCK=rule.R0_BLOCK,
        num_stages=rule.num_stages, RSPLIT_SIZE=rule.RSPLIT_SIZE, NUM_STAGES=rule.NUM_STAGES,
    )
    log.debug("heuristic rule %s -> %s", rule, cfg.describe())
    forced = force_config(kernel_kwargs, cfg, mix)
    fallback.record(rule, envelope, forced["fixed_config"])
    registry.note_applied(f"{torch_rules.describe_rule(rule)} -> x={features.numel} r={features.reduction_numel}")
    return forced


def apply_unsplit(device, reduction_numel, numel, inner_reduction: bool, split: int) -> int:
    """Inductor's split factor, or 1 where an installed unsplit rule keeps the reduction in one kernel.

    A tuning plan never gets here: its trial sets ``split_reductions`` itself."""
    table = registry.installed_table()
    if table is None or not table.unsplit or split <= 1:
        return split
    try:
        keep = torch_rules.unsplit_decision(device, reduction_numel, numel, inner_reduction, table)
    except Exception as exc:  # a lookup failure must never break a user's compile
        log.debug("unsplit lookup failed, keeping Inductor's split: %s", exc)
        return split
    if not keep:
        return split
    registry.note_applied(f"unsplit (Inductor: {split} parts) -> x={numel} r={reduction_numel}")
    return 1


def mix_split_wrapper(original):
    """Set the split size of one mix-order kernel from the rules (Inductor reads it from config), or let
    Inductor autotune it where a split-autotune entry covers the kernel and no config rule does."""

    @functools.wraps(original)
    def wrapper(self, node1, node2):
        import torch._inductor.config as inductor_config
        from torch._inductor import scheduler

        table = registry.installed_table()
        split, autotune, sizes, tail = None, None, None, None
        # A tuning plan sets the split itself, through config, for the trial it measures.
        if table is not None and registry.planner() is None \
                and inductor_config.triton.mix_order_reduction_split_size is None:
            try:
                numel, rnumel = scheduler.MixOrderReduction.get_numel_rnumel(node1)
                sizes = f"x={numel} r={rnumel}"
                split = torch_rules.mix_order_split_size(node1, numel, rnumel, table)
                if split is None:
                    autotune = mix_autotune.entry_for(node1, numel, rnumel, registry.installed_mix_autotune())
                if autotune is not None and autotune.end_to_end:
                    tail = partial_sums_tail(node1, node2, numel, rnumel)
            except Exception as exc:
                autotune = None  # an end-to-end entry without its tail would time the fused kernel alone
                log.debug("mix-order split lookup failed, keeping Inductor's split: %s", exc)
        if autotune is not None:
            timings: dict = {}
            try:
                with mix_autotune.split_autotuned(autotune, sizes, timings, tail):
                    return original(self, node1, node2)
            finally:
                registry.note_applied(f"{autotune.describe()} -> {sizes}: {mix_autotune.describe_timings(timings)}")
        if split is None:
            return original(self, node1, node2)
        with inductor_config.patch({"triton.mix_order_reduction_split_size": split}):
            return original(self, node1, node2)

    wrapper.__inductor_tune_original__ = original
    return wrapper


def partial_sums_tail(node1, node2, numel, rnumel):
    """What Inductor's wrapper reduces after the fused kernel: one workspace of partial sums per reduction of
    ``node2`` (the column side, whose reductions the fused kernel accumulates by split).  The sizes are static
    here: an entry covers only kernels whose sizes ``torch_rules`` could read as integers."""
    partial_sums = sum(1 for node in node2.get_nodes() if node.is_reduction())
    return mix_autotune.Tail(int(numel), int(rnumel), partial_sums, str(node1.get_device()))


class InductorTuneChoices(InductorChoices):
    """InductorChoices that applies the registered tuning plan to reduction kernels and, outside a plan,
    the rules installed by ``inductor_tune.install`` (a tuning plan wins over installed rules)."""

    def uuid(self) -> str | None:
        # torch 2.13 and 2.14 fold this into the FX-graph cache key (config._cache_config_factory_keys);
        # the tuner disables that cache anyway.
        plan = registry.planner()
        if plan is not None:
            return plan.cache_key()
        digest = registry.installed_digest()
        return f"inductor-tune-heuristics-{digest}" if digest else "inductor-default"

    def reduction_split_factor(self, device, reduction_numel_hint, numel_hint, inner_reduction):
        # A static method up to torch 2.13 and an instance method from 2.14 on; ir.Reduction.num_splits asks
        # it through V.choices, and super() calls either one right.
        split = super().reduction_split_factor(device, reduction_numel_hint, numel_hint, inner_reduction)
        return split if registry.planner() is not None else apply_unsplit(
            device, reduction_numel_hint, numel_hint, inner_reduction, split)

    def triton_kernel_kwargs(self, kernel_cls, features, groups, kernel_kwargs):
        kernel_kwargs = super().triton_kernel_kwargs(kernel_cls, features, groups, kernel_kwargs)
        plan = registry.planner()
        planned = plan.kernel_kwargs(self, features, groups, kernel_kwargs) if plan is not None else None
        return planned if planned is not None else apply_rules(features, groups, kernel_kwargs)


def drop_cached_choices() -> None:
    """Inductor caches its choices object per thread on first use; drop this thread's so that the next
    compile builds the configured class.  Threads that compiled before keep theirs."""
    from torch._inductor import virtualized

    virtualized.threadlocal.__dict__.pop(virtualized._choices._key, None)


def use_hook() -> None:
    """Make every later compile in this process go through ``InductorTuneChoices`` (rules or not)."""
    import torch._inductor.config as inductor_config

    check_torch_supported()
    inductor_config.inductor_choices_class = InductorTuneChoices
    drop_cached_choices()
