"""Validation's worker side: one problem's variants compiled, checked and timed in one GPU worker.

Inductor's default, the same function with the heuristics installed (``heuristics.install``: the
real extension point, not a forced trial config), the best config the studies found and the peer
libraries; ``validate`` sends a ``tasks.ValidateTask`` through the worker pool and turns what comes back into
ratios.  A module of its own so that the workers, which ``validate`` dispatches to, need not import
``validate`` back.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

DEFAULT, HEURISTICS, BEST = "inductor_default", "heuristics", "best_found"
# Inductor's default compiled a second time where the rules touched a problem, so that a regression must be slower
# than both compiles.  Two compiles of one program time apart by more than the floor: on the H200 at stop 59,
# 0.889-1.107 at 100 problems of a seeded draw (experiments/compile_variance.py), 22 of the 34 beyond the floor where
# Inductor's autotuner drew other configs.  The second compile's kernels of unchanged source are the first's
# (Inductor's code cache keeps the autotuned kernel), so it differs from the first by what a recompile and a new
# CUDA graph change, not by the autotuner's draw; its recorded choice is then empty.
DEFAULT_AGAIN = "inductor_default_again"
OWN_VARIANTS = (DEFAULT, DEFAULT_AGAIN, HEURISTICS, BEST)
# Rounds for the default of a problem the rules left alone: a GB/s figure, not a comparison.
UNTOUCHED_ROUNDS = 2


def measure_variants(state, task, gpu_lock) -> dict[str, Any]:
    """Compile, check and time every variant of one problem (a ``tasks.ValidateTask``); returns plain data
    for the parent."""
    from . import evaluate, heuristics, peers
    from .runtime import registry
    from .space import INDUCTOR_DEFAULT

    problem = state.problem
    heur = heuristics.load(task.heuristics)
    notes: list[str] = []
    calls: dict[str, Any] = {}

    before = evaluate._autotuner_ids()
    calls[DEFAULT], default_plan = evaluate.compile_plan(state, INDUCTOR_DEFAULT)
    default_choice = evaluate.inductor_choices_made(before)

    before = evaluate._autotuner_ids()
    mark, picks_mark = len(heuristics.applied_rules()), len(registry.picks())
    with heuristics.install(heur) as installed:
        if not installed.active:
            raise RuntimeError(installed.reason)
        call = evaluate.CompiledCall(problem, state.inputs, state.grad_output)
        try:
            call.compile()
        except Exception as exc:
            raise RuntimeError(f"heuristics variant failed to compile: {evaluate.short_reason(exc, 300)}") from exc
        calls[HEURISTICS] = call
    heuristic_choice = evaluate.inductor_choices_made(before)
    # Which rules reached a kernel of this compile.  Comparing the final launch configs is no test of
    # that: where Inductor autotunes several candidates (pointwise kernels, small persistent and looped
    # reductions) two compiles of the same program can settle on different ones (seen on an H200: up to
    # 0.65x between two default compiles' picks).
    rules_applied = heuristics.applied_rules()[mark:]
    # A backward problem compiles its forward graph under the rules too, but times only the backward one.
    timed_rules = [line for line in rules_applied if registry.in_graph_timed(line, problem.spec.backward)]

    rounds = task.rounds
    untouched = task.skip_untouched and not timed_rules
    if untouched:
        # No rule applied: the heuristics variant is Inductor's own program, and timing it against the
        # default would measure only Inductor's compile-to-compile variance.
        del calls[HEURISTICS]
        notes.append(f"{HEURISTICS}: Inductor's own launch configs; timed as the default")
        rounds = min(rounds, UNTOUCHED_ROUNDS)

    default_again_choice = None
    want_peers = task.peers and not untouched
    if not untouched:
        before = evaluate._autotuner_ids()
        calls[DEFAULT_AGAIN], _ = evaluate.compile_plan(state, INDUCTOR_DEFAULT)
        default_again_choice = json.loads(evaluate.inductor_choices_made(before))
        _compile_best_and_peers(state, task, calls, notes, want_peers)

    times, errors, captures = _check_and_time(state, calls, task.timing, rounds, gpu_lock, notes)
    return {
        "times": times, "errors": errors, "captures": {k: v or None for k, v in captures.items()}, "notes": notes,
        "studied": task.studied, "untouched": untouched, "rules_applied": rules_applied,
        "timed_rules_applied": timed_rules,
        # Which kernel each multi-kernel entry ran (its first run is in the compile above).
        "multi_kernel_picks": registry.picks()[picks_mark:],
        "default_choice": json.loads(default_choice), "heuristic_choice": json.loads(heuristic_choice),
        "default_again_choice": default_again_choice,
        "slots": [dataclasses.asdict(slot) for slot in default_plan.slots], "bytes": state.bytes,
        "peer_versions": peers.versions() if want_peers else {},
    }


def _compile_best_and_peers(state, task, calls: dict[str, Any], notes: list[str], want_peers: bool) -> None:
    """The studies' per-shape best config and the peer libraries into ``calls``; what fails is noted."""
    from . import evaluate, peers
    from .space import TrialConfig

    if task.best_config:
        try:
            call, plan = evaluate.compile_plan(state, TrialConfig.from_json(task.best_config))
            reason = evaluate.verify_or_none(plan)
            if reason:
                notes.append(f"best found config not applied: {reason}")
            else:
                calls[BEST] = call
        except Exception as exc:
            notes.append(f"best found config failed to compile: {evaluate.short_reason(exc, 200)}")
    found, missing = peers.peer_functions(state.problem.kernel) if want_peers else ({}, {})
    notes += [f"{name}: {why}" for name, why in missing.items()]
    for name, fn in found.items():
        call = _PeerCall(state.problem, state.inputs, state.grad_output, fn)
        try:
            call.compile()
            calls[name] = call
        except Exception as exc:
            notes.append(f"{name}: failed to run ({evaluate.short_reason(exc, 200)})")


def _check_and_time(state, calls: dict[str, Any], timing, rounds: int, gpu_lock, notes: list[str]):
    """Check every variant against the reference, then time the right ones interleaved, round by round
    (drift hits all alike); a wrong one is noted and dropped from ``calls``."""
    from . import evaluate
    from .kernels import TOLERANCES

    problem = state.problem
    errors: dict[str, float] = {}
    captures: dict[str, str] = {}
    times: dict[str, list[float]] = {}
    tol = TOLERANCES[problem.dtype]
    with gpu_lock:
        for name, call in list(calls.items()):
            result = call.run_eager()
            errors[name] = evaluate.reference_error(problem, state.inputs, state.grad_output, result)
            if not errors[name] <= tol:
                notes.append(f"{name}: wrong result (normwise error {errors[name]:.3g} > {tol:g}); not timed")
                del calls[name]
                continue
            captures[name] = call.capture() if timing.cuda_graph else "disabled"
        for _ in range(rounds):
            for name, call in calls.items():
                times.setdefault(name, []).append(evaluate.time_call(call.run, timing)[1])
    for call in calls.values():
        call.graph = None
    return times, errors, captures


def _peer_call_class():
    from .evaluate import CompiledCall

    class PeerCall(CompiledCall):
        """A peer library's function in the harness that times Inductor's compiled ones."""

        def __init__(self, problem, inputs, grad_output, fn):
            super().__init__(problem, inputs, grad_output)
            self.peer_fn = fn

        def compile(self) -> None:
            self.fn = self.peer_fn
            self.result = self.run_eager()

    return PeerCall


def _PeerCall(problem, inputs, grad_output, fn):  # noqa: N802 - a class built lazily (torch import)
    return _peer_call_class()(problem, inputs, grad_output, fn)
