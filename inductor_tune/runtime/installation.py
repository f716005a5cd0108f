"""``inductor_tune.install``: a rule file's configs for every later ``torch.compile`` of this process.

Only on the GPU model the file was made for (name, compute capability and SM count); anywhere else
it is a logged no-op.  Installing sets ``config.inductor_choices_class`` to the hook, wraps the
mix-order split and guards compiles (``fallback``); the lookup runs in ``torch_rules``, so a patched
torch (``inductor-tune patch``) covers exactly the same kernels.  torch is imported only when a file
is installed: reading one needs none.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from . import fallback, registry
from .rulefile import load
from .rules import Heuristics, HeuristicsError

log = logging.getLogger(__name__)

ENV_VAR = "INDUCTOR_TUNE_HEURISTICS"


def _wrapped_functions() -> tuple[tuple[Any, str], ...]:
    """What ``install`` wraps: the mix-order split, the compile and kernel naming the fallback guards, the
    kernels Inductor builds for one reduction (the multi-kernel entries add theirs) and how it times them
    (``pick``)."""
    from torch._inductor import compile_fx
    from torch._inductor.codegen.multi_kernel import MultiKernelCall
    from torch._inductor.codegen.simd import SIMDScheduling
    from torch._inductor.codegen.triton import TritonScheduling

    return ((SIMDScheduling, "_codegen_mix_order_reduction"), (compile_fx, "fx_codegen_and_compile"),
            (TritonScheduling, "define_kernel"), (TritonScheduling, "add_multi_kernel_choices"),
            (MultiKernelCall, "benchmark_sub_kernels"))


def device_matches(heur: Heuristics, props: Any) -> bool:
    """``props`` is torch.cuda.get_device_properties(i) (or anything with major/minor/SM count)."""
    cc = getattr(props, "major", -1) * 10 + getattr(props, "minor", 0)
    # The name too: an H100 SXM has an H200's capability and SM count (torch_rules.device_name_matches).
    return (cc == heur.gpu.cc and getattr(props, "multi_processor_count", None) == heur.gpu.sm_count
            and getattr(props, "name", None) == heur.gpu.name)


class Installation:
    """Handle returned by ``install``; a context manager that uninstalls on exit."""

    def __init__(self, heur: Heuristics, active: bool, reason: str):
        self.heuristics, self.active, self.reason = heur, active, reason
        self._previous_class = None
        self._previous_caches = None

    def __enter__(self) -> "Installation":
        return self

    def __exit__(self, *exc) -> None:
        self.uninstall()

    def uninstall(self) -> None:
        if not self.active:
            return
        import torch._inductor.config as inductor_config

        from .hook import drop_cached_choices

        self.active = False
        registry.set_installed(None, None)
        inductor_config.inductor_choices_class = self._previous_class
        if self._previous_caches is not None:
            import torch._functorch.config as functorch_config

            inductor_config.fx_graph_cache, functorch_config.enable_autograd_cache = self._previous_caches
        for owner, name in _wrapped_functions():
            original = getattr(getattr(owner, name), "__inductor_tune_original__", None)
            if original is not None:
                setattr(owner, name, original)
        drop_cached_choices()
        log.info("inductor_tune heuristics for %s uninstalled", self.heuristics.gpu.name)


def _current_device_props() -> Any | None:
    import torch

    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_properties(torch.cuda.current_device())


def _not_here(heur: Heuristics, target: str) -> str:
    """Why the rules do not apply on this machine ('' where they do)."""
    props = _current_device_props()
    if props is None:
        return f"inductor_tune heuristics for {target} not installed: no CUDA device here"
    if not device_matches(heur, props):
        return (
            f"inductor_tune heuristics for {target} not installed: this device is {props.name} "
            f"(sm{props.major}{props.minor}, {props.multi_processor_count} SMs); Inductor keeps its defaults"
        )
    return ""


def install(heuristics: "str | os.PathLike | Heuristics") -> Installation:
    """Make later torch.compile calls use the file's rules (a no-op, logged, on another GPU)."""
    heur = heuristics if isinstance(heuristics, Heuristics) else load(os.fspath(heuristics))
    # The hook (all of torch) only here: reading and writing heuristic files needs no torch.
    from .hook import InductorTuneChoices, check_torch_supported, drop_cached_choices, mix_split_wrapper

    check_torch_supported()
    target = f"{heur.gpu.name} (sm{heur.gpu.cc}, {heur.gpu.sm_count} SMs)"
    reason = _not_here(heur, target)
    if reason:
        log.warning(reason)
        return Installation(heur, False, reason)
    if registry.installed_table() is not None:
        raise HeuristicsError("inductor_tune heuristics are already installed in this process; uninstall first")
    import torch._inductor.config as inductor_config

    handle = Installation(heur, True, "")
    handle._previous_class = inductor_config.inductor_choices_class
    if not hasattr(inductor_config, "_cache_config_factory_keys"):
        import torch._functorch.config as functorch_config

        # Before torch 2.13 the graph caches' keys do not ask the choices factory for its uuid(), so
        # a graph compiled without the rules could be served from cache: compile afresh instead.
        handle._previous_caches = (inductor_config.fx_graph_cache, functorch_config.enable_autograd_cache)
        inductor_config.fx_graph_cache = False
        functorch_config.enable_autograd_cache = False
        log.info("this torch: FX-graph and AOTAutograd caches off while the heuristics are installed")
    table = heur.table()
    mix_autotune = None
    if heur.mix_autotune:
        from .mix_autotune import lookup_table

        mix_autotune = (lookup_table(heur.mix_autotune, table.gpu, table.capability, table.sm_count), heur.mix_autotune)
    from . import multi_kernel, pick

    entries = (multi_kernel.lookup_table(heur.multi_kernel, table.gpu, table.capability, table.sm_count),
               heur.multi_kernel) if heur.multi_kernel else None
    registry.set_installed(table, heur.digest(), mix_autotune, entries)
    inductor_config.inductor_choices_class = InductorTuneChoices
    wrappers = (mix_split_wrapper, fallback.guard_compile, fallback.guard_define_kernel, multi_kernel.choices_wrapper,
                pick.benchmark_wrapper)
    for (owner, name), wrap in zip(_wrapped_functions(), wrappers):
        if not hasattr(getattr(owner, name), "__inductor_tune_original__"):
            setattr(owner, name, wrap(getattr(owner, name)))
    drop_cached_choices()
    log.info("inductor_tune heuristics for %s installed: %d config rules, %d unsplit rules, %d split-autotune "
             "entries, %d multi-kernel entries (%s)", target, len(table.rules), len(table.unsplit),
             len(heur.mix_autotune), len(heur.multi_kernel), heur.digest())
    return handle


def install_from_env() -> Installation | None:
    """Install the file named by $INDUCTOR_TUNE_HEURISTICS, if set (unmodified scripts)."""
    path = os.environ.get(ENV_VAR)
    if not path:
        return None
    try:
        return install(path)
    except Exception as exc:  # never break the user's program over its tuning file
        log.error("%s=%s: not installed: %s", ENV_VAR, path, exc)
        return None
