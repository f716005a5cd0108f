"""Inner reductions for which Inductor times more configs beside its own kernel: a heuristic file's ``multi_kernel``.

A forced config rule must not be slower than Inductor's default beyond noise at any shape its group covers, so a
config that wins 2-3x at most shapes of a group and loses at one is not adopted (set 48's softmax_bwd 71581x1182:
2.865x the default was found, and the group's best candidate kept the default for a loss elsewhere).  An entry
keeps Inductor's kernel and adds one kernel per config of the entry, each with its config forced
(``FixedTritonConfig``); Inductor's ``MultiKernel`` builds them all, as ``triton.multi_kernel`` does with a
persistent kernel and its looped twin (torch 2.11-2.14: ``TritonScheduling.add_multi_kernel_choices`` returns the
list of kernels that ``codegen_node_schedule`` builds and wraps), and at the kernel's first run ``pick`` times them
and keeps Inductor's unless another wins every round beyond the noise band.  What an entry costs is compile time
(one more kernel per config) and that timing at first run.  An entry comes
before a config rule that covers the same kernel; its fit includes that rule's config among its own.

A config whose kernel fails to compile fails the compile like a forced config rule; ``fallback`` recompiles the
graph without the entry for that kernel, which then gets a config rule's config or Inductor's own.  The lookup is
torch_rules' own, so an entry keys on what a config rule keys on.  A patched torch (``inductor-tune patch``) carries
no entries.
"""

from __future__ import annotations

import functools
import logging

from . import fallback, registry, torch_rules
from .launch import force_config
from .rules import entry_table

log = logging.getLogger(__name__)


def lookup_table(specs, gpu: str, capability: int, sm_count: int) -> torch_rules.Table:
    """The entries as launch rules for ``torch_rules.lookup`` (``rules.entry_table``; their configs are forced one
    kernel each, never these rules')."""
    return entry_table(specs, gpu, capability, sm_count, None, persistent=False)


def entry_for(features, installed):
    """(entry, its lookup rule, the kernel's envelope) for the kernel of ``features``, or None; ``installed`` is
    (lookup table, entries) as ``registry.installed_multi_kernel`` keeps them."""
    if installed is None:
        return None
    table, specs = installed
    rule = torch_rules.rule_for_features(features, False, table)
    if rule is None:
        return None
    return specs[rule.RSPLIT_SIZE - 1], rule, torch_rules.envelope_of_features(features)


def covering(features, groups, kernel_kwargs):
    """``entry_for`` a kernel the entries may add kernels to, else None: a plain inner reduction of x and r0_ whose
    config and kind Inductor left free, outside a tuning plan.  The hook asks it before it forces a config rule (an
    entry comes first: its fit seeds it with the configs of the rules it overrides), and the wrapper below asks it
    again when Inductor builds the kernel."""
    installed = registry.installed_multi_kernel()
    if installed is None or registry.planner() is not None or features is None:
        return None
    tiling = groups[0] if groups and isinstance(groups[0], dict) else {}
    if set(tiling) - {"x", "r0_"} or kernel_kwargs.get("mix_order_reduction"):
        return None
    # A config Inductor forced, and a kind it forced (sort), stay as they are.
    if kernel_kwargs.get("fixed_config") is not None or "override_persistent_reduction" in kernel_kwargs:
        return None
    try:
        from torch._inductor.virtualized import V

        # The C++ wrapper (AOTInductor) launches each kernel by name and cannot pick among several at run time.
        if getattr(V.graph, "cpp_wrapper", False):
            return None
        return entry_for(features, installed)
    except Exception as exc:  # a lookup failure must never break a user's compile
        log.debug("multi-kernel lookup failed, keeping Inductor's kernel: %s", exc)
        return None


def choices_wrapper(original):
    """TritonScheduling.add_multi_kernel_choices: Inductor's kernels, and one more per config of the entry that
    covers the kernel."""

    @functools.wraps(original)
    def add_multi_kernel_choices(self, kernel, kernel_args, kernel_kwargs):
        kernels = original(self, kernel, kernel_args, kernel_kwargs)
        # Inductor's own multi-kernel (``triton.multi_kernel``) built its choices already; they stay its own.
        found = covering(kernel_kwargs.get("features"), kernel_args, kernel_kwargs) if len(kernels) == 1 else None
        if found is None:
            return kernels
        spec, rule, envelope = found
        added = []
        for cfg in spec.configs:
            forced = force_config(kernel_kwargs, cfg, False)
            added.append(self.kernel_type(*kernel_args, **forced))
            fallback.record(rule, envelope, forced["fixed_config"], f"multi-kernel {spec.describe()}")
        for other in added:
            # As Inductor's own multi-kernel: every kernel keeps the buffers a looped one needs, so that all take
            # the same arguments, and persistent kernels are generated last for that to hold.
            other.must_keep_buffers = kernel.must_keep_buffers
        kernels = sorted([kernel, *added], key=lambda k: k.persistent_reduction)
        features = kernel_kwargs["features"]
        registry.note_applied(f"multi-kernel {spec.describe()} -> x={features.numel} r={features.reduction_numel}")
        return kernels

    add_multi_kernel_choices.__inductor_tune_original__ = original
    return add_multi_kernel_choices
