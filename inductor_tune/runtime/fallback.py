"""A rule that does not fit a kernel never breaks a compile (``inductor_tune.install``).

Installed rules force their config into the kernel source (``FixedTritonConfig``), so a config that
needs more shared memory or registers than the GPU has fails when Inductor compiles or loads that
kernel, and with it the user's whole ``torch.compile`` ("No valid triton configs. OutOfResources",
seen on an H200 and an H100 with a Llama decoder's fused RMSNorm backward).  A kernel whose source
fixes one config cannot fall back to Inductor's candidates on its own, so the fallback happens one
level up: every graph Inductor compiles while rules are installed is compiled again when the compile
fails after rules fired, without the rules whose kernels failed (``torch_rules.mark_unfit``: for the
rest of the process those kernels keep Inductor's own configs).  Each such rule gets one WARNING
naming it and the kernel.  A failure with no rule applied, or one the rules cannot explain, is
re-raised unchanged.

The patched torch (``inductor-tune patch``) falls back per kernel instead: its config functions keep
Inductor's own configs next to the rule's (``torch_rules.keep_fallback``).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import logging
import threading
from typing import Any

from . import torch_rules

log = logging.getLogger(__name__)

# One compile can fail on several rules in turn; each retry disables at least one more.
MAX_RETRIES = 4

_STATE = threading.local()


@dataclasses.dataclass
class Applied:
    """A rule forced into one kernel of the graph being compiled (mutable: the name comes later)."""

    rule: Any  # torch_rules.Rule
    envelope: str | None
    fixed: Any  # the FixedTritonConfig handed to the kernel, to find the kernel's name by identity
    kernel: str | None = None
    label: str | None = None  # how the warning names it (None: the rule's own description)


def record(rule, envelope: str | None, fixed: Any, label: str | None = None) -> None:
    """Called where a rule is applied (``hook.apply_rules``, a multi-kernel entry's kernels), inside a guarded
    compile."""
    applied = getattr(_STATE, "applied", None)
    if applied is not None:
        applied.append(Applied(rule, envelope, fixed, label=label))


def guard_define_kernel(original):
    """TritonScheduling.define_kernel: learn the name of each kernel a rule was forced into."""

    @functools.wraps(original)
    def define_kernel(self, src_code, node_schedule, kernel):
        name = original(self, src_code, node_schedule, kernel)
        fixed = getattr(kernel, "fixed_config", None)
        for applied in getattr(_STATE, "applied", None) or ():
            if fixed is not None and applied.fixed is fixed:
                applied.kernel = name
        return name

    define_kernel.__inductor_tune_original__ = original
    return define_kernel


def guard_compile(original):
    """compile_fx.fx_codegen_and_compile: compile again without the rules whose kernels failed."""

    @functools.wraps(original)
    def fx_codegen_and_compile(gm, example_inputs, *args, **kwargs):
        spare = _spare_copy(gm)
        outer = getattr(_STATE, "applied", None)
        try:
            for _ in range(MAX_RETRIES + 1):
                _STATE.applied = applied = []
                try:
                    return original(gm, example_inputs, *args, **kwargs)
                except Exception as exc:
                    if not _disable_failed(applied, exc):
                        raise
                if spare is not None:  # the next attempt starts from the untouched copy, and keeps one in reserve
                    gm, spare = spare, _spare_copy(spare)
            raise RuntimeError(f"inductor_tune: compile kept failing after disabling {MAX_RETRIES} rules")
        finally:
            _STATE.applied = outer

    fx_codegen_and_compile.__inductor_tune_original__ = original
    return fx_codegen_and_compile


def _spare_copy(gm):
    # Post-grad passes rewrite the graph in place; the retry starts from the graph as it came in.
    try:
        return copy.deepcopy(gm)
    except Exception as exc:  # a graph that cannot be copied is retried as the failed compile left it
        log.debug("no spare copy of the graph for a retry: %s", exc)
        return None


# How Triton and Inductor report a kernel that cannot be built or loaded with its launch config.
KERNEL_FAILURES = ("No valid triton configs", "out of resource", "OutOfResources", "PTXASError", "CompilationError")


def _disable_failed(applied: list[Applied], exc: BaseException) -> bool:
    """Mark the rules behind a failed compile unfit and warn; False when no rule can explain it."""
    if not applied:
        return False
    text = _chain_text(exc)
    named = [a for a in applied if a.kernel and a.kernel in text]
    # The error names the kernel where Inductor reports it (launch failures do); a kernel failure that
    # names none of them makes every rule of this graph suspect.  An error while Inductor was still generating
    # the code of the last kernel a rule was forced into is that rule's (seen on an H200: a mix-order config
    # with XBLOCK 1 broke the code generation of the kernel's epilogue).  Other errors are not the rules'.
    unfinished = applied[-1:] if applied[-1].kernel is None else []
    if named:
        suspects = named
    elif any(marker in text for marker in KERNEL_FAILURES):
        suspects = applied
    elif unfinished:
        suspects = unfinished
    else:
        return False
    warned = set()
    for a in suspects:
        # A multi-kernel entry records each of its kernels; it is one rule, dropped and named once.
        if (torch_rules.rule_key(a.rule), a.envelope) in warned:
            continue
        warned.add((torch_rules.rule_key(a.rule), a.envelope))
        torch_rules.mark_unfit(a.rule, a.envelope)
        log.warning("inductor_tune: rule %s does not fit kernel %s (%s); that kernel %s",
                    a.label or torch_rules.describe_rule(a.rule), a.kernel or "(unnamed)", _first_line(text),
                    "is built without it from now on" if a.label else "keeps Inductor's own configs")
    return True


def _chain_text(exc: BaseException) -> str:
    parts, seen = [], exc
    while seen is not None and len(parts) < 8:
        parts.append(f"{type(seen).__name__}: {seen}")
        seen = seen.__cause__ or seen.__context__
    return "\n".join(parts)


def _first_line(text: str, limit: int = 200) -> str:
    line = next((line.strip() for line in text.splitlines() if "resource" in line.lower()), text.splitlines()[0])
    return line if len(line) <= limit else line[: limit - 3] + "..."
