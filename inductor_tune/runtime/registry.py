"""What the Inductor hook consults: the installed rules and, while the tuner compiles a trial, its plan.

Module state, not attributes of the hook object: Inductor caches one choices object per thread on
first use and compiles backward graphs on autograd's own thread, so an object made before
``install`` (or before a plan) must still see them.  The tuner reaches the hook only through
``planning``; the runtime never imports the tuner.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Protocol

from . import torch_rules


class Planner(Protocol):
    """A tuning plan for the compiles inside ``planning`` (the tuner's ``choices.CompilePlan``)."""

    def cache_key(self) -> str:
        """What the plan forces, for the graph caches' keys (torch 2.13 asks the hook's ``uuid``)."""

    def kernel_kwargs(self, hook: Any, features: Any, groups: Any, kernel_kwargs: dict) -> dict | None:
        """The TritonKernel kwargs for one kernel (``runtime.launch.force_config`` makes them force a
        config), or None to leave the kernel to the installed rules.  ``hook`` is the choices object
        asking (``InductorTuneChoices``), for Inductor's own decisions."""


_PLANNER: Planner | None = None
_TABLE: torch_rules.Table | None = None
_DIGEST: str | None = None
# (lookup table, entries) of the installed file's split-autotune entries (``mix_autotune``), or None.
_MIX_AUTOTUNE: tuple | None = None
# (lookup table, entries) of the installed file's multi-kernel entries (``multi_kernel``), or None.
_MULTI_KERNEL: tuple | None = None
# One line per kernel a rule was forced into in this process (validate tells touched problems by it).
_APPLIED: list[str] = []
# One line per multi-kernel entry's first run in this process: which of its kernels ``pick`` ran, and why.
_PICKS: list[str] = []


@contextlib.contextmanager
def planning(planner: Planner) -> Iterator[Planner]:
    """Every compile inside the block asks ``planner`` first, and the installed rules' mix-order split
    stays off: a trial measures what its plan forces, nothing else."""
    global _PLANNER
    if _PLANNER is not None:
        raise RuntimeError("a compile plan is already active in this process")
    _PLANNER = planner
    try:
        yield planner
    finally:
        _PLANNER = None


def planner() -> Planner | None:
    return _PLANNER


def set_installed(table: torch_rules.Table | None, digest: str | None, mix_autotune: tuple | None = None,
                  multi_kernel: tuple | None = None) -> None:
    """Called by ``installation.install`` and ``Installation.uninstall`` (None: no rules)."""
    global _TABLE, _DIGEST, _MIX_AUTOTUNE, _MULTI_KERNEL
    _TABLE, _DIGEST = table, digest if table is not None else None
    _MIX_AUTOTUNE = mix_autotune if table is not None else None
    _MULTI_KERNEL = multi_kernel if table is not None else None


def installed_table() -> torch_rules.Table | None:
    return _TABLE


def installed_mix_autotune() -> tuple | None:
    return _MIX_AUTOTUNE


def installed_multi_kernel() -> tuple | None:
    return _MULTI_KERNEL


def installed_digest() -> str | None:
    """The digest of the installed rules (the hook's ``uuid`` folds it into torch 2.13's FX-cache key)."""
    return _DIGEST if _TABLE is not None else None


# Marks an application in a backward graph.  A backward problem times only its backward graph, while its
# forward graph is compiled under the same rules: set 45 (stop 51) counted softmax_bwd 121x4886 as touched and
# regressed (0.962) where the one rule applied had configured the untimed forward kernel.
BACKWARD_GRAPH_NOTE = " [backward graph]"


def note_applied(line: str) -> None:
    _APPLIED.append(line + BACKWARD_GRAPH_NOTE if torch_rules.graph_is_backward() else line)


def applied_rules() -> list[str]:
    """Every rule application of this process so far, oldest first: 'rule -> kernel sizes', with
    ``BACKWARD_GRAPH_NOTE`` where the kernel was in a backward graph."""
    return list(_APPLIED)


def note_pick(line: str) -> None:
    _PICKS.append(line)


def picks() -> list[str]:
    """Every multi-kernel entry's pick of this process so far, oldest first (``pick.benchmark_wrapper``)."""
    return list(_PICKS)


def in_graph_timed(line: str, backward_problem: bool) -> bool:
    """Whether an ``applied_rules`` line configured a kernel of the graph a problem times: its backward graph
    for a backward problem, else its forward graph."""
    return line.endswith(BACKWARD_GRAPH_NOTE) == backward_problem
