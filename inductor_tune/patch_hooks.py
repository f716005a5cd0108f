"""Where ``inductor-tune patch`` hooks into each supported torch's Inductor, and what it inserts there.

Every torch gets the rules module (``RULES_PATH``: ``runtime/torch_rules.py`` with the table written out) and
source hooks in ``choices.py`` (the persistent threshold), ``codegen/simd.py`` (the mix-order split size),
``codegen/triton.py`` (the kernel's signature, envelope, GPU and sizes in its ``inductor_meta``) and
``runtime/triton_heuristics.py`` (Inductor's own configs when a rule's config does not compile or load).

The launch configs reach the config functions two ways.  Up to torch 2.13 they are source hooks after the
config-list calls in ``reduction`` and ``persistent_reduction`` and in the latter's mix-order block.  From
torch 2.14 on those functions ask Inductor's heuristics registry
(``heuristics/triton_codegen/reduction.py``, ``register_codegen_heuristic``) for their candidates, so the
patch registers ``REGISTRY_MODULE`` for CUDA instead: a subclass of Inductor's ``ReductionHeuristic`` that
asks the rules first.  An extension point Inductor declares moves less between releases than the lines
around a call.

Each anchor must occur exactly once in the torch being patched; ``patch.generate`` refuses the tree
otherwise rather than patch it blindly.
"""

from __future__ import annotations

import dataclasses

from .runtime.versions import REGISTRY_TORCH

RULES_PATH = "torch/_inductor/runtime/distilled_reduction_rules.py"
REGISTRY_PATH = "torch/_inductor/heuristics/triton_codegen/distilled_reduction.py"
_HOOK = "# Per-GPU distilled rule (runtime/distilled_reduction_rules.py); None keeps Inductor's own choice."


@dataclasses.dataclass(frozen=True)
class Hook:
    path: str
    anchor: str  # must occur exactly once; the hook goes right after it
    code: str
    what: str
    # Other (anchor, code) pairs for torch versions whose source differs there; exactly one of all the
    # anchors must be found, exactly once.
    variants: tuple[tuple[str, str], ...] = ()
    # None: every torch; False: only before REGISTRY_TORCH (the registry does it from there on); True: from then.
    registry: bool | None = None

    def choices(self) -> tuple[tuple[str, str], ...]:
        return ((self.anchor, self.code), *self.variants)


def _meta_hook(target: str) -> str:
    return f"""        # Per-GPU distilled rules (runtime/distilled_reduction_rules.py) key on the fused reductions,
        # on what the kernel reads, writes and computes, and on the GPU's name.
        # (Names distinct from codegen_kernel's own locals, e.g. its `signature` of kernel arguments.)
        from ..runtime.distilled_reduction_rules import reduction_device as _distilled_device
        from ..runtime.distilled_reduction_rules import reduction_envelope as _distilled_envelope
        from ..runtime.distilled_reduction_rules import reduction_signature as _distilled_signature
        from ..runtime.distilled_reduction_rules import reduction_sizes as _distilled_sizes

        if distilled_signature := _distilled_signature(getattr(self, "features", None)):
            {target}["reduction_signature"] = distilled_signature
        if distilled_envelope := _distilled_envelope(getattr(self, "features", None)):
            {target}["reduction_envelope"] = distilled_envelope
        if distilled_device := _distilled_device(getattr(self, "features", None)):
            {target}["reduction_device"] = distilled_device
        if distilled_sizes := _distilled_sizes(getattr(self, "features", None)):
            {target}["reduction_sizes"] = distilled_sizes
"""


def _fallback_hook(indent: str, configs_then: str) -> str:
    return f"""{indent}# A distilled rule's config that does not compile or load: Inductor's own configs instead.
{indent}from .distilled_reduction_rules import fallback_configs

{indent}if not {configs_then} and (distilled_fallback := fallback_configs(self, exc)) is not None:
"""


# Past Inductor's two no-split returns of an inner reduction (enough outputs; a short reduction) it splits: an
# unsplit rule keeps it in one kernel there. Its outer branch splits every column reduction it is asked about
# (Reduction.num_splits returns before asking for 32 rows or fewer, or 64 x SMs outputs or more).
_UNSPLIT = f"""            {_HOOK}
            from .runtime.distilled_reduction_rules import unsplit_decision

            if unsplit_decision(device, reduction_numel_hint, numel_hint, inner_reduction):
                return 1
"""


# Inductor's configs go through the same compile loop, which skips those that do not fit either.
_RECOMPILE = "            self.configs = distilled_fallback\n            return self._precompile_worker()\n"

HOOKS = (
    Hook(
        "torch/_inductor/choices.py",
        "        if not config.triton.persistent_reductions:\n            return False\n",
        f"""        {_HOOK}
        from .runtime.distilled_reduction_rules import persistent_decision

        distilled = persistent_decision(features, cooperative_reduction)
        if distilled is not None:
            return distilled
""",
        "the persistent_reductions check in InductorChoices.should_use_persistent_reduction",
    ),
    Hook(
        "torch/_inductor/choices.py",
        "            if reduction_numel_hint <= no_split_threshold:\n                return 1\n",  # 2.13, 2.14
        _UNSPLIT,
        "the no-split threshold of an inner reduction in InductorChoices.reduction_split_factor",
        variants=(("            if reduction_numel_hint <= 8192:\n                return 1\n", _UNSPLIT),),  # 2.11
    ),
    Hook(
        "torch/_inductor/choices.py",
        "            rvals_per_thread = 4  # comes from heuristics, refactor to not leak here\n",  # 2.11-2.14
        _UNSPLIT,
        "the split of an outer (column) reduction in InductorChoices.reduction_split_factor",
    ),
    Hook(
        "torch/_inductor/runtime/triton_heuristics.py",
        "    configs = _reduction_configs(\n        size_hints=size_hints,\n        inductor_meta=inductor_meta,\n"
        "        triton_meta=triton_meta,\n        num_dynamic=num_dynamic,\n    )\n",
        f"""    {_HOOK}
    from .distilled_reduction_rules import keep_fallback, looped_config

    if (distilled := looped_config(size_hints, inductor_meta, triton_meta)) is not None:
        configs = keep_fallback(distilled, configs, inductor_meta)
""",
        "the _reduction_configs call in reduction()",
        registry=False,
    ),
    Hook(
        "torch/_inductor/runtime/triton_heuristics.py",
        "    configs = _persistent_reduction_configs(\n        size_hints, reduction_hint, inductor_meta, triton_meta\n    )\n",
        f"""    {_HOOK}
    from .distilled_reduction_rules import keep_fallback, mix_order_config, persistent_config

    if (distilled := persistent_config(size_hints, reduction_hint, inductor_meta, triton_meta)) is not None:
        configs = keep_fallback(distilled, configs, inductor_meta)
""",
        "the _persistent_reduction_configs call in persistent_reduction()",
        registry=False,
    ),
    Hook(
        "torch/_inductor/runtime/triton_heuristics.py",
        "        configs = unique_configs(new_configs)\n",
        """        # The fused mix-order kernel's XBLOCK, NUM_STAGES and warps from the distilled rule.
        if (distilled := mix_order_config(size_hints, reduction_hint, inductor_meta, triton_meta)) is not None:
            configs = keep_fallback(distilled, configs, inductor_meta)
""",
        "the RSPLIT_SIZE (mix-order) block of persistent_reduction()",
        registry=False,
    ),
    Hook(
        "torch/_inductor/runtime/triton_heuristics.py",
        "            except (OutOfResources, PTXASError, IntelGPUError) as e:\n                exc = e\n",  # 2.13
        _fallback_hook("        ", "compile_results") + _RECOMPILE,
        "the compile loop of CachingAutotuner._precompile_worker",
        variants=((  # 2.11
            "            except (OutOfResources, PTXASError) as e:\n                exc = e\n",
            _fallback_hook("        ", "compile_results") + _RECOMPILE,
        ),),
    ),
    Hook(
        "torch/_inductor/runtime/triton_heuristics.py",
        "                if launcher is not None:\n                    launchers.append(launcher)\n",  # 2.13
        _fallback_hook("            ", "launchers")
        + "                self.compile_results, self.configs = [], distilled_fallback\n"
        "                self._precompile_worker()\n                return self._make_launchers()\n",
        "the launcher loop of CachingAutotuner._make_launchers",
        variants=((  # 2.11
            "                except (OutOfResources, PTXASError, torch.cuda.OutOfMemoryError) as e:\n"
            "                    exc = e\n",
            _fallback_hook("        ", "launchers")
            + "            self.compile_results, self.configs = [], distilled_fallback\n"
            "            self._precompile_worker()\n            return self._make_launchers()\n",
        ), (  # 2.14 loads the launchers inside a try block (it drops the failed config's exception after)
            "                    if launcher is not None:\n                        launchers.append(launcher)\n",
            _fallback_hook("                ", "launchers")
            + "                    self.compile_results, self.configs = [], distilled_fallback\n"
            "                    self._precompile_worker()\n                    return self._make_launchers()\n",
        )),
    ),
    Hook(
        "torch/_inductor/codegen/simd.py",
        "            if config.triton.mix_order_reduction_split_size is not None:\n"
        "                return config.triton.mix_order_reduction_split_size\n",
        f"""
            {_HOOK}
            from ..runtime.distilled_reduction_rules import mix_order_split_size

            distilled = mix_order_split_size(node1, numel, rnumel)
            if distilled is not None:
                return distilled
""",
        "the split-size override in _codegen_mix_order_reduction",
    ),
    Hook(
        "torch/_inductor/codegen/triton.py",
        '        if self.mix_order_reduction:\n            out["RSPLIT_SIZE"] = self.rsplit_size\n',  # 2.13
        _meta_hook("out"),
        "the RSPLIT_SIZE entry of a kernel's inductor_meta",
        variants=((  # 2.11 builds inductor_meta inline in codegen_kernel
            '        if self.mix_order_reduction:\n            inductor_meta["RSPLIT_SIZE"] = self.rsplit_size\n',
            _meta_hook("inductor_meta"),
        ),),
    ),
    Hook(
        "torch/_inductor/heuristics/triton_codegen/__init__.py",
        "from . import pointwise as pointwise, reduction as reduction\n",
        "\n# Per-GPU distilled rules (runtime/distilled_reduction_rules.py) ahead of Inductor's reduction configs.\n"
        "from . import distilled_reduction as distilled_reduction  # registers itself for CUDA\n",
        "the import of the codegen heuristics in heuristics/triton_codegen/__init__.py",
        registry=True,
    ),
)


def hooks_for(version: tuple[int, int]) -> tuple[Hook, ...]:
    """The source hooks of a torch of this (major, minor)."""
    uses_registry = version >= REGISTRY_TORCH
    return tuple(h for h in HOOKS if h.registry is None or h.registry == uses_registry)


# The registered heuristic (torch 2.14 on).  It subclasses the CUDA default, ReductionHeuristic: ROCm
# devices look up "hip" and XPU "xpu", whose own classes this registration leaves alone.
REGISTRY_MODULE = '''"""Reduction launch configs from per-GPU distilled rules, ahead of Inductor's own (inductor-tune patch).

Registered for CUDA devices over Inductor's ReductionHeuristic, which it extends: each config method asks
runtime/distilled_reduction_rules.py first and returns Inductor's own configs where that has no rule, as
it has on every GPU but the one the rules were measured on.  A rule's config comes back alone; Inductor's
own configs travel in inductor_meta for the autotuner's fallback when it does not compile or load.
"""

from __future__ import annotations

from typing import Any

from torch._inductor.heuristics.registry import register_codegen_heuristic
from torch._inductor.runtime import distilled_reduction_rules as rules

from .reduction import ReductionHeuristic

# persistent_reduction() asks for the configs, then rewrites them for a mix-order kernel without the
# device at hand: the mix-order rule is looked up in the first step and applied after the second.
_MIX_ORDER = "distilled_mix_order"


@register_codegen_heuristic("reduction", "cuda")
class DistilledReductionHeuristic(ReductionHeuristic):
    def get_configs(self, *, size_hints, inductor_meta, triton_meta, num_dynamic=0):
        configs = super().get_configs(
            size_hints=size_hints, inductor_meta=inductor_meta, triton_meta=triton_meta, num_dynamic=num_dynamic
        )
        if (distilled := rules.looped_config(size_hints, inductor_meta, triton_meta)) is not None:
            configs = rules.keep_fallback(distilled, configs, inductor_meta)
        return configs

    def get_persistent_configs(self, *, size_hints, reduction_hint=False, inductor_meta, triton_meta):
        configs = super().get_persistent_configs(
            size_hints=size_hints, reduction_hint=reduction_hint, inductor_meta=inductor_meta,
            triton_meta=triton_meta,
        )
        if inductor_meta is None:
            return configs
        if inductor_meta.get("RSPLIT_SIZE"):
            mix = rules.mix_order_config(size_hints, reduction_hint, inductor_meta, triton_meta)
            if mix is not None:
                inductor_meta[_MIX_ORDER] = mix
        elif (distilled := rules.persistent_config(size_hints, reduction_hint, inductor_meta, triton_meta)) is not None:
            configs = rules.keep_fallback(distilled, configs, inductor_meta)
        return configs

    def apply_rsplit_size(self, configs, *, size_hints, inductor_meta):
        configs = super().apply_rsplit_size(configs, size_hints=size_hints, inductor_meta=inductor_meta)
        if (distilled := inductor_meta.pop(_MIX_ORDER, None)) is not None:
            configs = rules.keep_fallback(distilled, configs, inductor_meta)
        return configs

    # Cooperative and split-scan kernels are built from the methods above with other sizes; no rule was
    # measured on one, so they get Inductor's configs from an instance without the rules.
    def get_cooperative_configs(self, **kwargs: Any):
        return ReductionHeuristic().get_cooperative_configs(**kwargs)

    def get_split_scan_configs(self, **kwargs: Any):
        return ReductionHeuristic().get_split_scan_configs(**kwargs)
'''
