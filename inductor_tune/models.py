"""Validate a heuristic file on whole-model training steps (`inductor-tune validate --models`).

Kernel-level validation times each norm kernel alone; a model compiles them fused with their
neighbours (residual adds, casts, the weight-gradient sums), at sizes and with extra inputs no study
saw.  A rule's config that ran at every studied shape ran out of shared memory on the fused RMSNorm
backward kernel of a 2-layer Llama stack.  So each catalog model is compiled in a process of its own,
Inductor's default, then with ``heuristics.install`` active, then Inductor's default once more, and a
training step (forward, ``out.float().pow(2).mean()``, backward; no optimizer) of each is timed
interleaved round by round.  The second default compile is the kernel validations' ``DEFAULT_AGAIN``:
Inductor's own autotuning can pick differently in two compiles, so a step only regresses where it is
slower beyond noise than each compile of the default.

Pitfalls this avoids: Dynamo caches compiled code per code object, so each variant compiles its own
copy of the step function (``variant_function``) with ``fullgraph=True`` (no graph break into a shared
inner frame), on its own copy of the model; the backward graph compiles lazily at the first backward,
so each variant's first steps run while its install state is active, and afterwards the compiler
refuses to recompile (a recompile would silently pick up the other variant's state).  A compile
failure of either variant is recorded with its one-line reason, never raised.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import multiprocessing as mp
import os
import re
import statistics
import time
import traceback
import types
from typing import Any, Callable, Mapping, Sequence

from .validate import NOISE_FLOOR, kernels_changed, slower_beyond_noise

log = logging.getLogger(__name__)

DEFAULT, RULES, DEFAULT_AGAIN = "inductor_default", "heuristics", "inductor_default_again"
VARIANTS = (DEFAULT, RULES, DEFAULT_AGAIN)  # compiled in this order, each with cold caches
# Inductor names kernels triton_<category>_...: reductions, persistent reductions, and "unknown" for a
# fixed launch config, which is how installed rules emit their (reduction) kernels.
REDUCTION_PREFIXES = ("triton_red_", "triton_per_", "triton_unk_")
_COMPILE_STAGE = {DEFAULT: "default compile", RULES: "rules compile", DEFAULT_AGAIN: "default second compile"}
COMPILE_STEPS = 2  # under the variant's install state: compiles forward and (lazily) backward
WARMUP_STEPS = 3
PROFILE_STEPS = 5  # per variant, alternating as the timed rounds do
STEPS_PER_ROUND = 10
MODEL_TIMEOUT_S = 3600.0  # three compiles of the largest stack, one kernel at a time, plus timing


class ModelsError(ValueError):
    """A problem worth one line to the user (unknown model, heuristics for another GPU)."""


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    name: str
    family: str  # llama | gpt2
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    layers: int = 2
    batch: int = 4
    seq: int = 2048

    @property
    def tokens(self) -> int:
        return self.batch * self.seq


def llama_spec(hidden: int, batch: int = 4, seq: int = 2048, intermediate: int | None = None,
               suffix: str = "") -> ModelSpec:
    """Llama-style proportions: head dim 128, a KV head per 4 heads, MLP ~3.5x rounded to 256."""
    heads = hidden // 128
    intermediate = intermediate or 256 * round(3.5 * hidden / 256)
    return ModelSpec(f"llama-{hidden}{suffix}", "llama", hidden, intermediate, heads, heads // 4, batch=batch, seq=seq)


def gpt2_spec(hidden: int, batch: int = 8, seq: int = 1024, suffix: str = "") -> ModelSpec:
    heads = hidden // 64
    return ModelSpec(f"gpt2-{hidden}{suffix}", "gpt2", hidden, 4 * hidden, heads, heads, batch=batch, seq=seq)


# 8192 tokens each: the row counts the studies covered.  llama-8192 holds ~1.7 G parameters per copy
# (two copies, their gradients and one step's activations: ~25 GiB).  The two steps of 2048 tokens have weight and
# bias gradients of 2048 rows, column sums Inductor splits below its mix-order threshold: where rules of column
# reductions apply (docs/rules.md, stop 69), and any column sum of their sizes takes them, not a norm's alone.
# The column rules shipped at stop 70 end at 1590 rows; GPT-2 small at 400 tokens is a step where one holds (400 x
# 768), at LayerNorm weight gradients and at Linear bias gradients alike, which their A/B never timed.
# llama-5120 at 32768 tokens has fused mix-order RMSNorm backwards (32768 x 5120) inside an end-to-end split-autotune
# entry of stop 79's fit (rows 16564..65511, N 4939..7933), which no step of 8192 tokens or fewer reaches.
# GPT-2 small at 32768 tokens has fused mix-order LayerNorm backwards (32768 x 768) inside stop 82's entry of rows
# 16843..60458, N 519..1005: a whole model step where an end-to-end entry chooses the split.
# GPT-2 large's width, 1280, at 32768 tokens has them (32768 x 1280) inside stop 83's sweeping entry of rows
# 16722..59411, N 1044..1963, which no other step reaches.
CATALOG: dict[str, ModelSpec] = {s.name: s for s in (
    llama_spec(2048), llama_spec(4096, intermediate=14336), llama_spec(8192), gpt2_spec(1024), gpt2_spec(2048),
    llama_spec(2048, batch=1, suffix="-t2048"), gpt2_spec(1024, batch=2, suffix="-t2048"),
    gpt2_spec(768, batch=1, seq=400, suffix="-t400"),
    llama_spec(5120, batch=16, seq=2048, suffix="-t32768"), gpt2_spec(768, batch=32, seq=1024, suffix="-t32768"),
    gpt2_spec(1280, batch=32, seq=1024, suffix="-t32768"),
)}


def parse_names(text: str) -> list[str]:
    """Comma-separated catalog names, or "all"."""
    if text.strip() == "all":
        return list(CATALOG)
    names = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in CATALOG]
    if unknown or not names:
        raise ModelsError(f"unknown model(s) {', '.join(unknown) or '(none)'}; known: {', '.join(CATALOG)}, all")
    return names


# -- one model, in the process that holds the GPU ----------------------------------------------

def _forward_loss(model, x):
    return model(x).float().pow(2).mean()


def variant_function(variant: str) -> Callable:
    """``_forward_loss`` with a code object of its own: Dynamo keeps one cache per code object, so two
    compiles of one function would share entries and the second variant could run the first's kernels."""
    code = _forward_loss.__code__
    name = f"_forward_loss_{re.sub(r'[^0-9A-Za-z_]', '_', variant)}"
    fields = {"co_name": name, **({"co_qualname": name} if hasattr(code, "co_qualname") else {})}
    return types.FunctionType(code.replace(**fields), _forward_loss.__globals__, name)


def one_line_reason(exc: BaseException, limit: int = 300) -> str:
    """The innermost error on one line: Dynamo and Inductor wrap the one that matters (their
    ``inner_exception``, raised ``from None``) and append hints about their own logs."""
    from .evaluate import short_reason

    root, seen = exc, set()
    while id(root) not in seen:
        seen.add(id(root))
        inner = getattr(root, "inner_exception", None) or root.__cause__
        if not isinstance(inner, BaseException):
            break
        root = inner
    text = " ".join(short_reason(root, 10 * limit).split())
    text = re.sub(r"\s*Set TORCHDYNAMO_VERBOSE=1.*$", "", text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _failed(out: dict[str, Any], stage: str, exc: BaseException) -> dict[str, Any]:
    log.warning("%s: %s failed: %s", out["model"], stage, one_line_reason(exc))
    out["failure"] = {"stage": stage, "reason": one_line_reason(exc), "detail": traceback.format_exc()[-8000:]}
    return out


def kernel_time_breakdown(steps: Sequence[Sequence[tuple[str, float]]]) -> dict[str, Any]:
    """Each kernel's median time over the profiled steps (a step that did not run it counts 0), and the totals of
    those medians.  One profiled step per variant read totals 17 % apart on gpt2-2048 while the timed step medians
    agreed within 1 % (H200, stop 54): a kernel's median over steps keeps one slow launch out of the share."""
    per_step = []
    for kernels in steps:
        by_name: dict[str, float] = {}
        for name, us in kernels:
            by_name[name] = by_name.get(name, 0.0) + us
        per_step.append(by_name)
    names = sorted({name for by_name in per_step for name in by_name})
    by_kernel = {name: statistics.median(by_name.get(name, 0.0) for by_name in per_step) for name in names}
    total = sum(by_kernel.values())
    reduction = sum(us for name, us in by_kernel.items() if name.startswith(REDUCTION_PREFIXES))
    return {"total_us": total, "reduction_us": reduction, "share": reduction / total if total else None,
            "reduction_kernels": sum(name.startswith(REDUCTION_PREFIXES) for name in by_kernel),
            "fixed_config_kernels": sum(name.startswith("triton_unk_") for name in by_kernel),
            "profiled_steps": len(per_step), "step_totals_us": [sum(by_name.values()) for by_name in per_step],
            "by_kernel": by_kernel}


class _NotInstalled(RuntimeError):
    """The rules' variant found its file not installed here (another GPU)."""


def _cold_caches(inductor: bool):
    """Inductor's and Triton's caches, on disk and in memory, empty for one variant's compile (torch 2.11-2.14:
    ``torch._inductor.utils.fresh_cache``).  Without it the rules' compile, which comes second, found the kernels it
    shares with the default's in Triton's cache: stop 58 read 30 -> 14 s at llama-2048 with entries that add kernels.
    The folder stays until the process ends: a compiled kernel's module lives there."""
    if not inductor:
        return contextlib.nullcontext()
    from torch._inductor.utils import fresh_cache

    return fresh_cache(delete=False)


def _compile_steps(run, variant: str, heur, install: Callable, device: str, inductor: bool = True) -> float:
    """The variant's first steps under its install state and with cold caches, which compile its graphs; their
    seconds.  They are where a multi-kernel entry's kernels are built and timed."""
    from . import model_blocks

    started = time.perf_counter()
    with _cold_caches(inductor), install(heur) if variant == RULES else contextlib.nullcontext() as handle:
        if handle is not None and not handle.active:
            raise _NotInstalled(handle.reason)
        for _ in range(COMPILE_STEPS):
            run.step()
        model_blocks.synchronize(device)
    return round(time.perf_counter() - started, 2)


def measure_model(spec: ModelSpec, heur, rounds: int = 5, steps: int = STEPS_PER_ROUND, *, device: str = "cuda",
                  dtype: str = "bf16", backend: Any = "inductor", impl: str = "auto", seed: int = 0,
                  install: Callable | None = None, lock=None, on_stage: Callable[[str], None] = lambda stage: None,
                  ) -> dict[str, Any]:
    """Compile, time and profile both variants of one model in this process; plain data for the parent.

    Never raises for the model's sake: a failure lands in ``failure`` (stage, one-line reason, traceback).
    ``on_stage`` hears each stage as it starts (so a process that dies can be placed).  ``install``
    (default ``heuristics.install``) and ``backend`` are parameters for the CPU tests.
    """
    import copy

    import torch

    from . import evaluate, heuristics, model_blocks

    install = install or heuristics.install
    applied_rules = heuristics.applied_rules
    inductor = backend == "inductor"
    out: dict[str, Any] = {"model": spec.name, "spec": dataclasses.asdict(spec), "tokens": spec.tokens,
                           "dtype": dtype, "failure": None, "torch": torch.__version__}
    try:
        model, out["implementation"] = model_blocks.build(spec, device, evaluate.DTYPES[dtype], impl, seed)
        out["parameters"] = model_blocks.parameter_count(model)
        if out["implementation"] == "transformers":
            import transformers

            out["transformers"] = transformers.__version__
        x = torch.randn(spec.batch, spec.seq, spec.hidden, device=device, dtype=evaluate.DTYPES[dtype])
        # Separate copies with the same weights: Dynamo may guard on a module's identity.
        runs = {v: model_blocks.TrainStep(variant_function(v), model if v == DEFAULT else copy.deepcopy(model),
                                          x.clone().requires_grad_(True), backend) for v in VARIANTS}
    except Exception as exc:
        return _failed(out, "setup", exc)

    choices_made: dict[str, list] = {}
    out["compile_s"] = {}
    for variant, run in runs.items():
        on_stage(_COMPILE_STAGE[variant])
        before = evaluate._autotuner_ids() if inductor else set()
        mark = len(applied_rules())
        try:
            out["compile_s"][variant] = _compile_steps(run, variant, heur, install, device, inductor)
        except _NotInstalled as exc:
            return _failed(out, "setup", RuntimeError(str(exc)))
        except Exception as exc:
            return _failed(out, _COMPILE_STAGE[variant], exc)
        choices_made[variant] = json.loads(evaluate.inductor_choices_made(before)) if inductor else []
        if variant == RULES:
            # What the rules did, as runtime.hook.apply_rules logged it (final configs can also differ
            # where Inductor's own autotuning picks differently in two compiles).
            out["rules_applied"] = applied_rules()[mark:]
    out["choices"] = choices_made
    out["kernels_changed"] = kernels_changed(choices_made[DEFAULT], choices_made[RULES])
    # Kernels whose launch config Inductor's own autotuning picked differently in its two compiles.
    out["kernels_changed_again"] = kernels_changed(choices_made[DEFAULT], choices_made[DEFAULT_AGAIN])

    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    on_stage("timing")
    try:
        with torch.compiler.set_stance("fail_on_recompile"), lock or contextlib.nullcontext():
            for _ in range(WARMUP_STEPS):
                for run in runs.values():
                    run.step()
            for r in range(rounds):
                # Rotate which variant goes first: the first of a round can find the GPU cooler.
                for variant in VARIANTS[r % 3:] + VARIANTS[:r % 3]:
                    times[variant].append(model_blocks.median_step_ms(runs[variant].step, steps, device))
            profiled: dict[str, list] = {DEFAULT: [], RULES: []}
            for p in range(PROFILE_STEPS):
                for variant in (DEFAULT, RULES) if p % 2 == 0 else (RULES, DEFAULT):
                    profiled[variant].append(model_blocks.profile_kernels(runs[variant].step, device))
            out["profiles"] = {v: kernel_time_breakdown(steps) for v, steps in profiled.items()}
    except Exception as exc:
        out["times"] = times
        return _failed(out, "timing", exc)
    out["times"] = times
    if str(device).startswith("cuda"):
        out["max_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    return out


def _child_main(conn, spec: ModelSpec, heuristics_path: str, rounds: int, steps: int, gpu: int, lock_path: str,
                log_level: int) -> None:
    """Entry point of the process measuring one model (spawned: a fresh interpreter, CUDA not yet loaded)."""
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    # `import torch` would install these rules for every compile, the default variant's included.
    os.environ.pop("INDUCTOR_TUNE_HEURISTICS", None)
    logging.basicConfig(level=log_level, format=f"[{spec.name} {os.getpid()}] %(levelname)s %(name)s: %(message)s")
    import torch
    import torch._inductor.config as inductor_config

    from . import choices, evaluate, heuristics, workers
    from .records import TimingSpec

    # As in the tuning workers: compiles stay in this process, and every thread (autograd's, which
    # compiles the backward) gets the choices class through which installed rules act.
    inductor_config.compile_threads = 1
    choices.install()
    heur = heuristics.load(heuristics_path)
    fp = evaluate.gpu_identity(0)
    if not heuristics.device_matches(heur, torch.cuda.get_device_properties(0)):
        conn.send(("mismatch", f"{heuristics_path} is for {heur.gpu.name}; GPU {gpu} is {fp.name}"))
        return
    lock = workers.GpuLock(lock_path)
    workers._lock_inductor_benchmarks(lock)
    with lock:
        ceiling = evaluate.copy_ceiling_gbps(TimingSpec())
    torch.cuda.empty_cache()
    conn.send(("hello", fp, ceiling))
    try:
        result = measure_model(spec, heur, rounds, steps, lock=lock, on_stage=lambda stage: conn.send(("stage", stage)))
    except Exception as exc:  # measure_model records its own failures; this is a bug, kept as a record
        result = _failed({"model": spec.name, "spec": dataclasses.asdict(spec), "tokens": spec.tokens}, "worker", exc)
    conn.send(("result", result))


def run_one(spec: ModelSpec, heuristics_path: str, rounds: int, steps: int = STEPS_PER_ROUND, gpu: int = 0,
            timeout_s: float = MODEL_TIMEOUT_S, lock_dir: str = "/tmp") -> tuple[tuple | None, dict[str, Any]]:
    """Measure one model in a spawned process: (fingerprint and ceiling or None, the measurement)."""
    ctx = mp.get_context("spawn")
    receiver, sender = ctx.Pipe(duplex=False)
    lock_path = os.path.join(lock_dir, f"inductor_tune_gpu{gpu}.lock")
    proc = ctx.Process(target=_child_main, daemon=True, args=(
        sender, spec, os.path.abspath(heuristics_path), rounds, steps, gpu, lock_path, logging.getLogger().level))
    proc.start()
    sender.close()
    hello, stage, deadline, reason = None, "setup", time.monotonic() + timeout_s, None
    try:
        while reason is None:
            if not receiver.poll(max(0.0, min(5.0, deadline - time.monotonic()))):
                if time.monotonic() >= deadline:
                    reason = f"killed after exceeding the {timeout_s:.0f} s limit per model"
                continue
            try:
                kind, *payload = receiver.recv()
            except EOFError:
                proc.join(10)
                code = proc.exitcode
                reason = f"its process died ({f'signal {-code}' if code is not None and code < 0 else f'exit code {code}'})"
                continue
            if kind == "mismatch":
                raise ModelsError(payload[0])
            if kind == "hello":
                hello = tuple(payload)
            elif kind == "stage":
                stage = payload[0]
            else:
                return hello, payload[0]
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(10)
    return hello, {"model": spec.name, "spec": dataclasses.asdict(spec), "tokens": spec.tokens,
                   "failure": {"stage": stage, "reason": reason, "detail": "while " + stage}}


# -- parent side ------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ModelResult:
    name: str
    implementation: str  # transformers | plain | "?" (failed before building)
    tokens: int
    hidden: int
    default_ms: float | None
    rules_ms: float | None
    default_rounds: tuple[float, ...]
    rules_rounds: tuple[float, ...]
    ratio: float | None  # default step time / rules step time (> 1: the rules are faster)
    ratio_low: float | None
    ratio_high: float | None
    noise: float | None  # the default's own round-to-round spread, relative
    # slower in every round, and beyond max(noise, validate.NOISE_FLOOR), than the default and than its second
    # compile where one was timed (records before stop 61 have none)
    regressed: bool
    failure_stage: str | None  # setup | default compile | rules compile | timing | worker
    failure: str | None  # its one-line reason
    reduction_share_default: float | None  # reduction kernels' share of the step's GPU kernel time
    reduction_share_rules: float | None
    reduction_speedup: float | None  # default reduction-kernel time / rules reduction-kernel time
    kernels_changed: int | None
    compile_s_default: float | None = None  # seconds of the compile and first steps (records before stop 57: None)
    compile_s_rules: float | None = None
    default_again_ms: float | None = None  # Inductor's default compiled a second time
    again_ratio: float | None = None  # default first compile / second compile: the compile-to-compile variance
    kernels_changed_again: int | None = None  # launch configs Inductor's own autotuning picked differently

    @property
    def status(self) -> str:
        if self.failure_stage is None:
            return "REGRESSED" if self.regressed else "ok"
        what = "COMPILE FAILED" if self.failure_stage.endswith("compile") else f"FAILED ({self.failure_stage})"
        return f"{what}: {self.failure}"


def summarize(data: Mapping[str, Any]) -> ModelResult:
    spec, failure = data["spec"], data.get("failure") or {}
    times = data.get("times") or {}
    base, rules = list(times.get(DEFAULT) or ()), list(times.get(RULES) or ())
    again = list(times.get(DEFAULT_AGAIN) or ())
    d_ms = r_ms = ratio = low = high = noise = again_ms = again_ratio = None
    regressed = False
    if base and rules and not failure:
        d_ms, r_ms = statistics.median(base), statistics.median(rules)
        ratios = [d / r for d, r in zip(base, rules)]
        ratio, low, high, noise = d_ms / r_ms, min(ratios), max(ratios), (max(base) - min(base)) / d_ms
        regressed = all(slower_beyond_noise(default, rules) for default in (base, again) if default)
        if again:
            again_ms = statistics.median(again)
            again_ratio = d_ms / again_ms
    profiles = data.get("profiles") or {}
    shares = [profiles.get(v, {}).get("share") for v in (DEFAULT, RULES)]
    red = [profiles.get(v, {}).get("reduction_us") for v in (DEFAULT, RULES)]
    return ModelResult(
        data["model"], data.get("implementation", "?"), data.get("tokens", spec["batch"] * spec["seq"]), spec["hidden"],
        d_ms, r_ms, tuple(base), tuple(rules), ratio, low, high, noise, regressed,
        failure.get("stage"), failure.get("reason"), shares[0], shares[1],
        red[0] / red[1] if red[0] and red[1] else None, data.get("kernels_changed"),
        *((data.get("compile_s") or {}).get(v) for v in (DEFAULT, RULES)), again_ms, again_ratio,
        data.get("kernels_changed_again"),
    )


def timing_record(rounds: int, steps: int) -> str:
    """How a model's steps were timed, as its record keeps it (``timing_json``)."""
    return json.dumps({"method": "CUDA events around each training step (forward, loss, backward)",
                       "statistic": "median per round", "rounds": rounds, "steps_per_round": steps,
                       "warmup_steps": WARMUP_STEPS, "interleaved": True, "order": "rotating",
                       "variants": list(VARIANTS),
                       "profile": f"torch profiler, {PROFILE_STEPS} steps per variant alternating; "
                                  "each kernel's median over them"})


def gpu_key(gpu: int) -> str:
    """The identity key (``it_gpu.fingerprint``) of GPU ``gpu``, as its model processes report it."""
    from .evaluate import gpu_identity

    return gpu_identity(gpu).key


def recorded_models(store, gpu_key: str, heuristics_digest: str, rounds: int, steps: int) -> dict[str, dict]:
    """The models ``store`` already holds a record of for the same file (by digest), GPU stack and timing, by name:
    a run that a device call's limit stopped part way is finished by the same command, which measures only the rest
    (stop 56 lost three measured models that way).  The latest record of a model counts, a failure included."""
    gpu_id = store.gpu_id(gpu_key)
    timing = timing_record(rounds, steps)
    return {rec.kernel.removeprefix("model:"): json.loads(rec.result_json) for rec in store.validations()
            if rec.kernel.startswith("model:") and (rec.gpu_id, rec.heuristics_digest, rec.timing_json)
            == (gpu_id, heuristics_digest, timing)} if gpu_id is not None else {}


def run_models(heuristics_path: str, names: Sequence[str], store, rounds: int = 5, *, steps: int = STEPS_PER_ROUND,
               gpu: int = 0, timeout_s: float = MODEL_TIMEOUT_S, lock_dir: str = "/tmp", progress=None,
               gpu_key: str | None = None) -> list[ModelResult]:
    """Measure each named model in a process of its own and store one validation record per model.  Given the
    GPU's identity key, a model this storage already holds a record of (``recorded_models``) is not measured again."""
    from . import heuristics

    heur = heuristics.load(heuristics_path)
    done = recorded_models(store, gpu_key, heur.digest(), rounds, steps) if gpu_key else {}
    results, gpu_id = [], None
    for name in names:
        spec = CATALOG[name]
        if name in done:
            log.info("%s: measured before in this storage with the same file, GPU and timing; not measured again", name)
            results.append(summarize(done[name]))
            if progress is not None:
                progress.update(1)
            continue
        hello, data = run_one(spec, heuristics_path, rounds, steps, gpu, timeout_s, lock_dir)
        if hello is not None:
            fp, ceiling = hello
            gpu_id = store.upsert_gpu(fp, ceiling)
        result = summarize(data)
        if gpu_id is None:
            log.warning("%s: not stored: its process died before reporting the GPU", name)
        else:
            store.add_validation(
                gpu_id=gpu_id, heuristics_path=heuristics_path, heuristics_digest=heur.digest(),
                kernel=f"model:{name}", rows=spec.tokens, cols=spec.hidden, dtype="bf16", regressed=result.regressed,
                result_json=json.dumps({**data, "summary": dataclasses.asdict(result)}),
                timing_json=timing_record(rounds, steps),
            )
        results.append(result)
        if progress is not None:
            progress.update(1)
    return results


def render(results: Sequence[ModelResult]) -> str:
    def pct(v):
        return "-" if v is None else f"{100 * v:.1f}%"

    header = ["model", "impl", "tokens", "default ms", "rules ms", "ratio [min-max]", "default 1st/2nd",
              "reduction share", "reduction speedup", "kernels changed", "compile s", "status"]
    rows = [[
        r.name, r.implementation, str(r.tokens),
        "-" if r.default_ms is None else f"{r.default_ms:.2f}", "-" if r.rules_ms is None else f"{r.rules_ms:.2f}",
        "-" if r.ratio is None else f"{r.ratio:.3f} [{r.ratio_low:.3f}-{r.ratio_high:.3f}]",
        "-" if r.again_ratio is None else f"{r.again_ratio:.3f}" + (
            "" if not r.kernels_changed_again else f" ({r.kernels_changed_again} changed)"),
        f"{pct(r.reduction_share_default)} -> {pct(r.reduction_share_rules)}",
        "-" if r.reduction_speedup is None else f"{r.reduction_speedup:.3f}",
        "-" if r.kernels_changed is None else str(r.kernels_changed),
        "-" if r.compile_s_default is None or r.compile_s_rules is None
        else f"{r.compile_s_default:.0f} -> {r.compile_s_rules:.0f}", r.status,
    ] for r in results]
    widths = [max([len(header[i])] + [len(row[i]) for row in rows]) for i in range(len(header))]
    fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    lines = [fmt(header), fmt(["-" * w for w in widths])] + [fmt(row) for row in rows]
    again = [r.again_ratio for r in results if r.again_ratio is not None]
    if again:
        lines.append(f"Inductor's default compiled twice (compile-to-compile variance, which a regression must exceed): "
                     f"first/second {min(again):.3f}-{max(again):.3f} over {len(again)} model(s)")
    return "\n".join(lines)
