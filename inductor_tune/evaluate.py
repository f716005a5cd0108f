"""Compile one trial's config through Inductor and measure it on the GPU (runs in a worker process).

A trial is: compile the catalog function with ``torch._inductor.compile`` (Inductor's public entry
for an FX graph, the same backend path torch.compile takes after Dynamo, with static shapes and a
fresh compile each time) under the trial's ``CompilePlan``; check the forced config is in the
source; then, holding the GPU lock so no other worker's kernels run meanwhile, check numerics
against the float64 reference and time it L2-cold.

Only the compile runs outside the lock; its one short GPU launch (the first call) can overlap
another worker's timing, which the median of many repeats absorbs and the interleaved re-measure of
finalists (run alone) does not see.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import logging
import subprocess
import time
import warnings
from typing import Any, Callable, Sequence

import torch

from . import choices
from .gpu import GpuIdentity
from .kernels import DTYPES, TOLERANCES
from .problem import Problem
from .records import Measurement, Outcome, TimingSpec
from .space import DEFAULT_FLAGS, GraphFlags, KernelSlot, TrialConfig
from .tasks import Remeasured

log = logging.getLogger(__name__)


def classify_exception(exc: BaseException) -> Outcome:
    """Map a compile/run failure to its typed outcome, following the cause chain."""
    seen = exc
    while seen is not None:
        name = type(seen).__name__
        text = str(seen)
        if name == "OutOfResources" or "out of resource" in text.lower() or "OutOfResources" in text:
            return Outcome.OUT_OF_RESOURCES
        if "CUDA error" in text or "illegal memory access" in text or name == "AcceleratorError":
            return Outcome.CRASH
        seen = seen.__cause__ or seen.__context__
    return Outcome.COMPILE_ERROR


def short_reason(exc: BaseException, limit: int = 600) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


class CompiledCall:
    """A compiled trial bound to one problem's inputs: ``run()`` is the timed region."""

    def __init__(self, problem: Problem, inputs: dict[str, torch.Tensor], grad_output: torch.Tensor | None):
        self.problem = problem
        self.inputs = inputs
        self.grad_output = grad_output
        self.fn: Callable[..., Any] | None = None
        self.forward_out: Any = None
        self.graph: torch.cuda.CUDAGraph | None = None
        self.result: Any = None
        self.leaves: list[torch.Tensor] = []

    def compile(self) -> None:
        spec = self.problem.spec
        gm = torch.fx.symbolic_trace(spec.build(torch.float32))
        args = [self.inputs[n] for n in spec.inputs]
        self.fn = torch._inductor.compile(gm, args)
        self.result = self.run_eager()  # first call: loads kernels, compiles the lazy backward

    def _args(self):
        return [self.inputs[n] for n in self.problem.spec.inputs]

    def run_eager(self) -> Any:
        spec = self.problem.spec
        if not spec.backward:
            return self.fn(*self._args())
        if self.forward_out is None:
            # Fresh leaves (sharing storage) per forward: autograd keeps one AccumulateGrad node
            # per leaf, tied to the stream it was created on; a node left over from another
            # call's forward breaks the capture of this one's backward.
            self.leaves = [t.detach().requires_grad_(t.requires_grad) for t in self._args()]
            self.forward_out = self.fn(*self.leaves)
        wrt = [leaf for leaf, name in zip(self.leaves, spec.inputs) if name in spec.grad_inputs]
        return torch.autograd.grad(self.forward_out, wrt, self.grad_output, retain_graph=True)

    def capture(self) -> str:
        """Capture ``run`` into a CUDA graph; returns '' or why it is unusable (eager is timed)."""
        stream = _capture_stream()
        stream.wait_stream(torch.cuda.current_stream())
        try:
            with torch.cuda.stream(stream):
                # Autograd runs backward ops on the stream their forward ran on, so the forward
                # must run on the capture stream for the backward to be captured.
                self.forward_out = None
                for _ in range(2):
                    self.run_eager()
            torch.cuda.current_stream().wait_stream(stream)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=stream):
                self.result = self.run_eager()
            torch.cuda.synchronize()
        except Exception as exc:  # capture is an optimisation; the reason is stored with the timing
            torch.cuda.synchronize()
            self.graph, self.forward_out = None, None
            return short_reason(exc, 200)
        # A graph that captured nothing replays in microseconds and would win every comparison:
        # poison the outputs and require the replay to overwrite every element.
        outputs = outputs_of(self.problem, self.result)
        for out in outputs:
            out.detach().fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        if any(bool(torch.isnan(out).any()) for out in outputs):
            self.graph, self.forward_out = None, None
            return "CUDA graph replay left outputs unwritten"
        self.graph = graph
        return ""

    def run(self) -> Any:
        if self.graph is not None:
            self.graph.replay()
            return self.result
        self.result = self.run_eager()
        return self.result


_STREAM: torch.cuda.Stream | None = None


def _capture_stream() -> torch.cuda.Stream:
    # One side stream per process: blocks cached per stream are not shared, so a new stream per
    # trial would strand freed memory.
    global _STREAM
    if _STREAM is None:
        _STREAM = torch.cuda.Stream()
    return _STREAM


def outputs_of(problem: Problem, result: Any) -> list[torch.Tensor]:
    if isinstance(result, torch.Tensor):
        return [result]
    return [t for t in result]


def _as_tuple(tensors) -> tuple:
    return (tensors,) if isinstance(tensors, torch.Tensor) else tuple(tensors)


def reference_error(problem: Problem, inputs: dict[str, torch.Tensor], grad_output, result) -> float:
    """Largest normwise relative error of the outputs against the float64 reference.

    Row-wise outputs are checked chunk by chunk so that a 2^31-element problem never needs a full
    float64 copy; weight gradients accumulate over the chunks in float64.
    """
    spec = problem.spec
    ref_fn = spec.build(torch.float64)
    outs = [o.detach() for o in outputs_of(problem, result)]
    rows = problem.shape.rows
    chunk = max(1, (1 << 24) // problem.shape.cols)
    err_sq = [0.0] * len(outs)
    ref_sq = [0.0] * len(outs)
    col_ref: list[torch.Tensor | None] = [None] * len(outs)
    for start in range(0, rows, chunk):
        sl = slice(start, min(rows, start + chunk))
        args = {}
        for name in spec.inputs:
            t = inputs[name].detach()
            t = t[sl] if name in ("x", "residual") else t
            args[name] = t.to(torch.float64).requires_grad_(spec.backward and name in spec.grad_inputs)
        ref = ref_fn(*[args[n] for n in spec.inputs])
        if spec.backward:
            wrt = [args[n] for n in spec.grad_inputs]
            grads = [g[sl].to(torch.float64) for g in _as_tuple(grad_output)]
            ref = torch.autograd.grad(ref, wrt, grads[0] if isinstance(grad_output, torch.Tensor) else grads)
        ref = [ref] if isinstance(ref, torch.Tensor) else list(ref)
        for i, (out, r) in enumerate(zip(outs, ref)):
            if r.dim() == 2:
                diff = out[sl].to(torch.float64) - r
                err_sq[i] += float(diff.pow(2).sum())
                ref_sq[i] += float(r.pow(2).sum())
            else:
                col_ref[i] = r.detach() if col_ref[i] is None else col_ref[i] + r.detach()
    for i, r in enumerate(col_ref):
        if r is not None:
            err_sq[i] = float((outs[i].to(torch.float64) - r).pow(2).sum())
            ref_sq[i] = float(r.pow(2).sum())
    errors = [(e / max(s, 1e-300)) ** 0.5 for e, s in zip(err_sq, ref_sq)]
    return float("nan") if any(e != e for e in errors) else max(errors)


def time_call(call: Callable[[], Any], timing: TimingSpec) -> tuple[float, float, float]:
    """(p20, median, p80) in ms, L2 flushed before every repeat by triton.testing.do_bench."""
    from triton.testing import do_bench

    p20, p50, p80 = do_bench(call, warmup=timing.warmup_ms, rep=timing.rep_ms, quantiles=[0.2, 0.5, 0.8])
    return float(p20), float(p50), float(p80)


def copy_ceiling_gbps(timing: TimingSpec, nbytes: int = 1 << 30) -> float:
    """Device-to-device copy bandwidth (bytes read + written), the practical memory ceiling."""
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    _, ms, _ = time_call(lambda: dst.copy_(src), timing)
    del src, dst
    return 2 * nbytes / (ms * 1e-3) / 1e9


def inductor_choices_made(before: set[int]) -> str:
    """The launch configs Inductor's own heuristics and autotuning settled on for new kernels."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    found = []
    with warnings.catch_warnings():
        # gc walks every object; touching torch.distributed's deprecated aliases warns.
        warnings.simplefilter("ignore")
        objects = gc.get_objects()
    for obj in objects:
        # type(), not isinstance(): the latter asks a dead weakref.proxy for its __class__ and raises
        # ReferenceError (seen in a process that compiled a whole model).
        if issubclass(type(obj), CachingAutotuner) and id(obj) not in before:
            launchers = getattr(obj, "launchers", None) or []
            cfg = launchers[0].config if len(launchers) == 1 else None
            found.append(
                {
                    "kernel": getattr(getattr(obj, "fn", None), "__name__", "?"),
                    "heuristic": str(getattr(obj, "heuristic_type", "")),
                    "size_hints": dict(getattr(obj, "size_hints", {}) or {}),
                    "reduction_hint": str((obj.inductor_meta or {}).get("reduction_hint")),
                    "candidates": len(getattr(obj, "configs", []) or []),
                    "config": None
                    if cfg is None
                    else {**cfg.kwargs, "num_warps": cfg.num_warps, "num_stages": cfg.num_stages},
                }
            )
    return json.dumps(found, sort_keys=True)


def _autotuner_ids() -> set[int]:
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {id(o) for o in gc.get_objects() if issubclass(type(o), CachingAutotuner)}


class ProblemState:
    """Inputs of the current problem, kept across trials of one study in a worker."""

    def __init__(self, problem: Problem):
        self.problem = problem
        spec = problem.spec
        self.inputs = spec.make_inputs(problem.shape, problem.dtype, "cuda", problem.seed)
        self.grad_output = (
            spec.make_grad_output(problem.shape, problem.dtype, "cuda", problem.seed) if spec.backward else None
        )
        self.bytes = spec.minimal_bytes(problem.shape, problem.dtype)
        tensors = list(self.inputs.values()) + (list(_as_tuple(self.grad_output)) if self.grad_output is not None else [])
        self.resident_bytes = sum(t.numel() * t.element_size() for t in tensors)


def compile_plan(state: ProblemState, config: TrialConfig) -> tuple[CompiledCall, choices.CompilePlan]:
    plan = choices.CompilePlan(config, backward=state.problem.spec.backward)
    call = CompiledCall(state.problem, state.inputs, state.grad_output)
    with choices.activate_plan(plan):
        call.compile()
    return call, plan


def evaluate(
    state: ProblemState, config: TrialConfig, timing: TimingSpec, ceiling_gbps: float, gpu_lock
) -> Measurement:
    """Compile, verify, check numerics and time one config; every failure becomes an Outcome."""
    t0 = time.perf_counter()
    before = _autotuner_ids() if config.inductor_default else set()
    try:
        call, plan = compile_plan(state, config)
    except Exception as exc:
        log.debug("compile failed", exc_info=True)
        return Measurement(classify_exception(exc), short_reason(exc), compile_s=time.perf_counter() - t0)
    compile_s = time.perf_counter() - t0
    slots = tuple(plan.slots)
    common = dict(slots=slots, source_hash=choices.source_hash(plan), compile_s=compile_s, ceiling_gbps=ceiling_gbps)
    problem_text = verify_or_none(plan)
    if problem_text:
        return Measurement(Outcome.COMPILE_ERROR, problem_text, **common)
    chosen = inductor_choices_made(before) if config.inductor_default else None
    t1 = time.perf_counter()
    with gpu_lock:
        lock_wait_s = time.perf_counter() - t1
        try:
            result = call.run_eager()
            torch.cuda.synchronize()
            error = reference_error(state.problem, state.inputs, state.grad_output, result)
            tol = TOLERANCES[state.problem.dtype]
            if not error <= tol:
                return Measurement(
                    Outcome.WRONG_RESULT, f"normwise relative error {error:.3g} exceeds {tol:g}",
                    rel_error=error, inductor_choice=chosen, **common,
                )
            capture_failure = call.capture() if timing.cuda_graph else "disabled"
            p20, p50, p80 = time_call(call.run, timing)
        except Exception as exc:
            return Measurement(classify_exception(exc), short_reason(exc), inductor_choice=chosen, **common)
        finally:
            call.graph = None
    used = dataclasses.replace(timing, cuda_graph=not capture_failure)
    timing_json = json.dumps(
        {
            **dataclasses.asdict(used),
            "capture_failure": capture_failure or None,
            "max_reserved_gib": round(torch.cuda.max_memory_reserved() / 2**30, 2),
            # Where a trial's time goes, to see what bounds throughput (measure_s includes the wait).
            "lock_wait_s": round(lock_wait_s, 4),
            "locked_s": round(time.perf_counter() - t1 - lock_wait_s, 4),
        }
    )
    return Measurement(
        Outcome.OK, "", time_ms=p50, time_p20_ms=p20, time_p80_ms=p80,
        gbps=state.bytes / (p50 * 1e-3) / 1e9, rel_error=error, inductor_choice=chosen,
        measure_s=time.perf_counter() - t1, timing=timing_json, **common,
    )


def verify_or_none(plan: choices.CompilePlan) -> str | None:
    reason = choices.verify_source(plan)
    if reason is None and plan.untunable and not plan.config.inductor_default:
        log.info("kernels left on Inductor defaults: %s", "; ".join(plan.untunable))
    return reason


def probe(state: ProblemState, flags: GraphFlags) -> tuple[KernelSlot, ...]:
    """The reduction kernels Inductor generates for this problem under ``flags`` (compile only)."""
    config = TrialConfig(flags=flags, inductor_default=True)
    _, plan = compile_plan(state, config)
    return tuple(plan.slots)


def remeasure(
    state: ProblemState, configs: Sequence[TrialConfig], timing: TimingSpec, rounds: int, gpu_lock, check: bool = False,
) -> Remeasured:
    """Median times per round for each config, interleaved round by round (drift hits all alike), with
    why a config has no times (None where it has).

    With ``check`` (configs measured at shapes they were not tuned on), each result is first compared
    with the float64 reference (its normwise error is returned) and a wrong one is not timed.
    """
    calls: list[CompiledCall | None] = []
    failures: list[str | None] = []
    for config in configs:
        try:
            call, plan = compile_plan(state, config)
            reason = choices.verify_source(plan)
        except Exception as exc:
            call, reason = None, f"{classify_exception(exc).value}: {short_reason(exc, 300)}"
        if reason:
            log.warning("%s not timed: %s", config.describe(), reason)
        calls.append(None if reason else call)
        failures.append(reason)
    errors: list[float | None] = [None] * len(configs)
    times: list[list[float | None]] = [[] for _ in configs]
    with gpu_lock:
        for i, call in enumerate(calls):
            if call is None:
                continue
            if check:
                errors[i] = reference_error(state.problem, state.inputs, state.grad_output, call.run_eager())
                tol = TOLERANCES[state.problem.dtype]
                if not errors[i] <= tol:
                    failures[i] = f"wrong_result: normwise relative error {errors[i]:.3g} exceeds {tol:g}"
                    calls[i] = None
                    continue
            call.capture()
        for _ in range(rounds):
            for i, call in enumerate(calls):
                times[i].append(time_call(call.run, timing)[1] if call is not None else None)
    for call in calls:
        if call is not None:
            call.graph = None
    return Remeasured(times, errors, failures)


def gpu_identity(index: int = 0) -> GpuIdentity:
    """The GPU and software stack this process measures on; studies of different identities never mix."""
    import triton

    props = torch.cuda.get_device_properties(index)
    try:
        query = ["nvidia-smi", f"--id={index}", "--query-gpu=driver_version", "--format=csv,noheader"]
        driver_text = subprocess.run(query, capture_output=True, text=True, timeout=30).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):  # informational only
        driver_text = "unknown"
    return GpuIdentity(
        name=props.name, sm_count=props.multi_processor_count, compute_capability=f"{props.major}.{props.minor}",
        memory_bytes=int(props.total_memory), l2_bytes=int(getattr(props, "L2_cache_size", 0)),
        cuda_driver=driver_text, cuda_runtime=torch.version.cuda or "", torch=torch.__version__,
        triton=triton.__version__,
    )


__all__ = [
    "DEFAULT_FLAGS", "DTYPES", "Measurement", "Outcome", "Problem", "ProblemState", "TimingSpec", "evaluate",
    "gpu_identity", "probe", "remeasure", "copy_ceiling_gbps",
]
