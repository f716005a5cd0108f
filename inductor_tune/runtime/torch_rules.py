"""Distilled reduction launch configs for one GPU model, looked up the way Inductor can look them up.

This module is self-contained on purpose: ``inductor-tune patch`` copies its text into
``torch/_inductor/runtime/distilled_reduction_rules.py`` with ``TABLE`` filled in, and the patched Inductor
functions call the entry points at the bottom. ``inductor_tune.install`` runs the very same lookup
(``rule_for_features``) from an ``InductorChoices`` subclass, so the run-time hook and a patched torch cannot
disagree on which kernels a rule covers.

A rule keys on what Inductor knows when it picks a launch config: the kernel kind, its signature (the fused
reduction types, ``@backward`` in a backward graph), the smallest element size, next_pow2 of the sizes, the measured
rows and lengths, and the kernel's *envelope* (what it reads, writes and computes per row; docs/rules.md says why
each matters). Rules only exist for the GPU they were measured on (compute capability and SM count); everywhere
else, and for every kernel no rule covers, Inductor keeps its own heuristics.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from typing import Any, Optional


@dataclasses.dataclass(frozen=True)
class Rule:
    kind: str  # inner_persistent | inner_looped | outer | mix_order
    element_size: int  # bytes: the smallest element size among the kernel's tensors
    rnumel: tuple  # inclusive range of next_pow2(reduction numel)
    xnumel: tuple  # inclusive range of next_pow2(rows)
    persistent: bool
    XBLOCK: int
    num_warps: int
    R0_BLOCK: Optional[int] = None  # looped only
    num_stages: int = 1
    RSPLIT_SIZE: Optional[int] = None  # mix-order only
    NUM_STAGES: Optional[int] = None  # mix-order only
    reductions: Optional[str] = None  # kernel_signature() of the kernels it covers; None: any
    # envelope_text() of every kernel its evidence was measured on; the rule covers only those.
    envelopes: tuple = ()
    # Inclusive spans of the rows and reduction lengths its evidence measured (None: the pow2 ranges alone).
    rows: Optional[tuple] = None
    cols: Optional[tuple] = None
    # (modulus, residue, low, high): at N of each alignment class, the span that class's evidence measured (empty:
    # ``cols`` alone); an H200 rule measured at odd N up to 11611 lost 5-13 % at odd N 11799..12047 (stop 52).
    aligned_cols: tuple = ()
    # (rows, N) vertices, counter-clockwise in (log2 rows, N), of the convex hull of the evidence at odd N (empty:
    # the spans alone): rows of odd N start unaligned, and on an H200 a rule measured at odd N up to 11015 below 5260
    # rows lost 2-6 % at 540x11401 and 540x11503, inside its odd span but outside this hull (stop 54).
    odd_hull: tuple = ()


@dataclasses.dataclass(frozen=True)
class UnsplitRule:
    """An inner reduction Inductor would split stays one kernel, inside the measured rows and lengths (a split
    changes, never what compiles: ``split_reductions=False`` compiles the same one kernel). With ``outer``, a
    column reduction of ``cols`` outputs over ``rows`` (the problem's rows and N, as for inner rules)."""

    rows: tuple
    cols: tuple
    # The reduction types (ir.Reduction.num_splits' reduction_type) it keeps whole; empty: any.
    reduction_types: tuple = ()
    outer: bool = False


@dataclasses.dataclass(frozen=True)
class Table:
    gpu: str  # human-readable name of the GPU the rules were measured on
    capability: Optional[int]  # DeviceProperties.cc, e.g. 90
    sm_count: Optional[int]
    rules: tuple = ()
    unsplit: tuple = ()  # UnsplitRule


TABLE = Table(gpu="none", capability=None, sm_count=None, rules=())

# Inductor makes INNER reductions up to this many elements persistent (choices.py); the rule kinds
# follow that split so that "inner_looped" rules describe kernels Inductor would loop.
INNER_PERSISTENT_MAX_RNUMEL = 1024

_ELEMENT_SIZES = {
    "fp64": 8, "i64": 8, "u64": 8, "fp32": 4, "i32": 4, "u32": 4, "tf32": 4, "bf16": 2, "fp16": 2,
    "i16": 2, "u16": 2, "fp8e4nv": 1, "fp8e5": 1, "fp8e4b15": 1, "fp8e4b8": 1, "fp8e5b16": 1,
    "i8": 1, "u8": 1, "i1": 1,
}


def next_pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


def reductions_key(types) -> str:
    """Canonical text of a kernel's reduction types, one entry per reduction node: 'max+sum'."""
    return "+".join(sorted(str(t) for t in types if t))


BACKWARD_MARK = "@backward"


def kernel_signature(types, backward: bool) -> str:
    """What a rule keys on besides sizes: the fused reductions, and whether the graph is a backward."""
    key = reductions_key(types)
    return key + BACKWARD_MARK if backward and key else key


def graph_is_backward() -> bool:
    from torch._inductor.virtualized import V

    try:
        return bool(V.graph.is_backward)
    except (AttributeError, AssertionError):  # outside a graph lowering: no graph to ask
        return False


def reduction_types(nodes) -> tuple:
    """Reduction types of scheduler nodes (SIMDKernelFeatures.reduction_nodes() or a node's get_nodes())."""
    found = []
    for node in nodes:
        if node.is_reduction():
            found.append(str(node.node.get_reduction_type()))
    return tuple(sorted(found))


def kernel_kind(hint: Any, rnumel_pow2: int, mix_order: bool) -> str:
    """Which rule family covers a kernel; ``hint`` is a ReductionHint or its name."""
    name = getattr(hint, "name", str(hint)).split(".")[-1]
    if mix_order:
        return "mix_order"
    if name == "INNER":
        return "inner_persistent" if rnumel_pow2 <= INNER_PERSISTENT_MAX_RNUMEL else "inner_looped"
    if name in ("OUTER", "OUTER_TINY"):
        return "outer"
    return "other"


def device_matches(device: Any, table: Table = None) -> bool:
    """True only on the GPU model the table was measured on (CUDA, same capability and SM count)."""
    table = table or TABLE
    if device is None or table.capability is None:
        return False
    return (
        getattr(device, "type", None) == "cuda"
        and getattr(device, "cc", None) == table.capability
        and getattr(device, "multi_processor_count", None) == table.sm_count
    )


def device_name_matches(index: Any, table: Table = None) -> bool:
    """True where the GPU's marketing name is the table's: an H100 SXM and an H200 share compute
    capability 9.0 and 132 SMs, and an H200 rule slowed LayerNorm's forward by 2.6 % on an H100.
    Asked at code generation, in the compiling process (config functions read the answer from
    ``inductor_meta``, written by ``reduction_device``)."""
    table = table or TABLE
    import torch

    try:
        index = torch.cuda.current_device() if index is None else index
        return torch.cuda.get_device_properties(index).name == table.gpu
    except Exception:  # no CUDA runtime to ask: no rule applies
        return False


def within(span: Optional[tuple], value: Optional[int]) -> bool:
    """True where a rule's measured span covers ``value`` (an unknown value is outside every span)."""
    return span is None or (value is not None and span[0] <= value <= span[1])


def within_aligned(spans: tuple, cols: Optional[int]) -> bool:
    """True where ``cols`` lies in the span of its own alignment class (no spans: every class)."""
    return not spans or (cols is not None and any(cols % m == r and lo <= cols <= hi for m, r, lo, hi in spans))


def hull_turn(a: tuple, b: tuple, c: tuple) -> float:
    """The cross product of a->b and a->c, (rows, N) pairs taken at (log2 rows, N): > 0 where c lies left of a->b."""
    return (math.log2(b[0]) - math.log2(a[0])) * (c[1] - a[1]) - (b[1] - a[1]) * (math.log2(c[0]) - math.log2(a[0]))


def within_odd_hull(hull: tuple, rows: Optional[int], cols: Optional[int]) -> bool:
    """True where ``cols`` is even, or the rule has no hull, or (log2 rows, cols) lies in the hull (its edges and
    vertices included; a hull of one or two vertices covers that point or segment alone)."""
    if not hull or (cols is not None and cols % 2 == 0):
        return True
    if rows is None or cols is None or rows < 1:
        return False
    here = (rows, cols)

    def turn(a, b):  # the tolerance absorbs log2's rounding at collinear points
        cross = hull_turn(a, b, here)
        return 0.0 if abs(cross) <= 1e-9 * (1.0 + abs(b[1] - a[1]) + abs(cols - a[1])) else cross

    if len(hull) == 1:
        return tuple(hull[0]) == here
    if len(hull) == 2:
        (a, b) = hull
        return turn(a, b) == 0 and min(a[0], b[0]) <= rows <= max(a[0], b[0]) \
            and min(a[1], b[1]) <= cols <= max(a[1], b[1])
    return all(turn(hull[i], hull[(i + 1) % len(hull)]) >= 0 for i in range(len(hull)))


def lookup(kind: str, element_size: Optional[int], rnumel_pow2: int, xnumel_pow2: int, table: Table = None,
           reductions: Optional[str] = None, envelope: Optional[str] = None, rows: Optional[int] = None,
           cols: Optional[int] = None):
    """The rule for a kernel; a rule naming reductions only covers kernels with exactly those, a rule
    naming envelopes only kernels whose envelope is one of them (an unknown envelope matches none), and a
    rule with measured spans only kernels of those actual rows and reduction lengths."""
    table = table or TABLE
    for rule in table.rules:
        if (
            rule.kind == kind
            and within(rule.rows, rows) and within(rule.cols, cols) and within_aligned(rule.aligned_cols, cols)
            and within_odd_hull(rule.odd_hull, rows, cols)
            and rule.element_size == element_size
            and rule.rnumel[0] <= rnumel_pow2 <= rule.rnumel[1]
            and rule.xnumel[0] <= xnumel_pow2 <= rule.xnumel[1]
            and (rule.reductions is None or rule.reductions == reductions)
            and (not rule.envelopes or envelope in rule.envelopes)
            and (rule_key(rule), envelope) not in _UNFIT
        ):
            return rule
    return None


# -- the kernel's envelope -----------------------------------------------------------------------

ENVELOPE_FIELDS = ("row_reads", "row_writes", "other_reads", "other_writes", "row_bytes")
OPS_FIELD = "ops"
# Loop-body bookkeeping that says nothing about what a reduction computes (the reduction types are in the
# signature already); constants are left out so that an epsilon or a scale folded differently still matches.
_OPS_IGNORED = frozenset({"output", "reduction", "store_reduction", "constant"})


def envelope_text(values: dict, ops: Optional[str] = None) -> str:
    """Canonical text of an envelope, e.g. 'row_reads=2,row_writes=1,other_reads=2,other_writes=1,row_bytes=6'
    followed by ',ops=load:3+mul:2+to_dtype:2' where what the kernel's reductions compute is known."""
    text = ",".join(f"{name}={int(values[name])}" for name in ENVELOPE_FIELDS)
    return f"{text},{OPS_FIELD}={ops}" if ops else text


def ops_text(counts: dict) -> str:
    """Canonical text of loop-body op counts, e.g. 'load:3+mul:2+to_dtype:2' ('' for none)."""
    return "+".join(f"{name}:{int(n)}" for name, n in sorted(counts.items()) if n and name not in _OPS_IGNORED)


def reduction_ops(nodes) -> Optional[str]:
    """What the reductions among ``nodes`` compute: their loop bodies' op counts (two kernels that move the same
    bytes can be different ops; docs/rules.md).  Only reduction nodes count, so the split-size and launch-config
    lookups of a mix-order kernel see the same text.  None where a node does not describe its body."""
    import collections

    counts: collections.Counter = collections.Counter()
    found = False
    for node in nodes:
        if not node.is_reduction():
            continue
        body = getattr(node, "_body", None)
        if body is None or getattr(body, "op_counts", None) is None:
            return None
        counts.update(body.op_counts)
        found = True
    return ops_text(counts) if found else None


def envelope_without_ops(envelope: Optional[str]) -> Optional[str]:
    """The read/write part of an envelope (what spaces probed before op counts were recorded stored)."""
    if not envelope:
        return envelope
    return ",".join(part for part in envelope.split(",") if not part.startswith(OPS_FIELD + "="))


def envelope_of_nodes(nodes, xnumel: Any, rnumel: Any) -> Optional[str]:
    """What a kernel made of these scheduler nodes moves through memory.

    Tensors it reads that none of its nodes writes (its inputs) and tensors it writes (its outputs)
    are counted once each, split by whether they span every element of the iteration space (whole
    rows: activations, gradients) or less (weights, per-row statistics, partial sums); ``row_bytes``
    adds up the element sizes of the whole-row ones, the bytes each row element costs.  None for
    symbolic sizes, for which no rule exists."""
    from torch._inductor.dependencies import MemoryDep
    from torch._inductor.virtualized import V

    full = _static_int(xnumel), _static_int(rnumel)
    if None in full:
        return None
    full = full[0] * full[1]
    reads, writes = {}, {}
    for node in nodes:
        for dep in node.read_writes.writes:
            writes[dep.name] = max(writes.get(dep.name, 0), _dep_numel(dep, MemoryDep))
        for dep in node.read_writes.reads:
            reads[dep.name] = max(reads.get(dep.name, 0), _dep_numel(dep, MemoryDep))
    inputs = {name: n for name, n in reads.items() if name not in writes}
    counts = dict.fromkeys(ENVELOPE_FIELDS, 0)
    for table, row_key, other_key in ((inputs, "row_reads", "other_reads"), (writes, "row_writes", "other_writes")):
        for name, numel in table.items():
            if numel >= full:
                counts[row_key] += 1
                try:
                    counts["row_bytes"] += V.graph.get_dtype(name).itemsize
                except Exception:  # a name the graph cannot type: count its bytes as unknown (0)
                    pass
            else:
                counts[other_key] += 1
    return envelope_text(counts, reduction_ops(nodes))


def _dep_numel(dep: Any, memory_dep_type: type) -> int:  # star and weak deps (no index) count as partial
    if not isinstance(dep, memory_dep_type):
        return 0
    try:
        return int(dep.get_numel())
    except TypeError:
        return 0


def envelope_of_features(features) -> Optional[str]:
    """``envelope_of_nodes`` for the kernel SIMDKernelFeatures describe."""
    try:
        return envelope_of_nodes(features.scheduler_nodes(), features.numel, features.reduction_numel)
    except Exception:  # kernels without scheduler nodes (templates, foreach): no rule keys on them
        return None


# -- rules that did not fit a kernel -------------------------------------------------------------

# (rule_key, envelope) of rules whose config failed to compile or launch on a kernel of that envelope in
# this process; they are not offered to such kernels again, which keep Inductor's own configs.
_UNFIT: set = set()


def rule_key(rule: "Rule") -> tuple:  # with the spans: rules of one size group cut in N share the rest
    return rule.kind, rule.element_size, rule.reductions, rule.rnumel, rule.xnumel, rule.rows, rule.cols


def mark_unfit(rule: "Rule", envelope: Optional[str]) -> None:
    _UNFIT.add((rule_key(rule), envelope))


def describe_rule(rule: "Rule") -> str:
    launch = f"XBLOCK={rule.XBLOCK}" + (f", R0_BLOCK={rule.R0_BLOCK}" if rule.R0_BLOCK else "") + \
        f", num_warps={rule.num_warps}" + (f", RSPLIT_SIZE={rule.RSPLIT_SIZE}, NUM_STAGES={rule.NUM_STAGES}"
                                           if rule.RSPLIT_SIZE else f", num_stages={rule.num_stages}")
    return f"{rule.kind} {rule.reductions or 'any'} rnumel {rule.rnumel[0]}..{rule.rnumel[1]} ({launch})"


def element_size_from_signature(signature: dict) -> Optional[int]:
    sizes = [_ELEMENT_SIZES.get(str(t).lstrip("*")) for t in signature.values() if str(t).startswith("*")]
    sizes = [s for s in sizes if s]
    return min(sizes) if sizes else None


def element_size_from_buffers(names) -> Optional[int]:
    from torch._inductor.virtualized import V

    sizes = []
    for name in names:
        try:
            sizes.append(V.graph.get_dtype(name).itemsize)
        except Exception:  # a name the graph does not know (e.g. a kernel-local temporary)
            continue
    return min(sizes) if sizes else None


def _static_int(expr: Any) -> Optional[int]:  # a symbolic size: None, and Inductor's own heuristics
    try:
        return int(expr)
    except TypeError:
        return None


def _skip_meta(inductor_meta: dict) -> bool:
    # Autotuning modes search their own candidates; deterministic modes must not change the
    # reduction order, which XBLOCK and the split size do; torch 2.14's strict sums plan their own blocks.
    keys = ("max_autotune", "max_autotune_pointwise", "deterministic", "batch_invariant", "strict_sum_rblock")
    return any(inductor_meta.get(k) for k in keys)


def _skip_config() -> bool:
    """``_skip_meta`` at code generation (torch 2.14's ``numerics="strict"`` plans its sums' reduction order)."""
    import torch._inductor.config as config

    return bool(config.max_autotune or config.max_autotune_pointwise or config.deterministic
                or getattr(config, "numerics", "default") == "strict")


def rule_for_size_hints(size_hints, reduction_hint, inductor_meta, triton_meta, mix_order: bool, table=None):
    """Lookup from a config function's arguments (runtime/triton_heuristics.py)."""
    if set(size_hints) != {"x", "r0_"} or _skip_meta(inductor_meta or {}):
        return None
    if not device_matches(triton_meta.get("device"), table):
        return None
    rnumel, xnumel = size_hints["r0_"], size_hints["x"]
    kind = kernel_kind(reduction_hint, rnumel, mix_order)
    element_size = element_size_from_signature(triton_meta.get("signature", {}))
    signature = (inductor_meta or {}).get("reduction_signature") or None  # written at codegen (codegen/triton.py)
    envelope = (inductor_meta or {}).get("reduction_envelope") or None
    if (inductor_meta or {}).get("reduction_device") != (table or TABLE).gpu:
        return None
    sizes = (inductor_meta or {}).get("reduction_sizes") or (None, None)
    return lookup(kind, element_size, rnumel, xnumel, table, signature, envelope, sizes[0], sizes[1])


def rule_for_features(features, mix_order: bool, table=None):
    """Lookup at code generation, from Inductor's SIMDKernelFeatures (choices.py, simd.py)."""
    from torch._inductor.runtime.hints import DeviceProperties

    if _skip_config():
        return None
    rnumel, xnumel = _static_int(features.reduction_numel), _static_int(features.numel)
    if rnumel is None or xnumel is None or rnumel <= 1:
        return None
    nodes = list(features.scheduler_nodes())
    device = nodes[0].get_device() if nodes else None
    if device is None or device.type != "cuda" or not device_matches(DeviceProperties.create(device), table):
        return None
    if not device_name_matches(device.index, table):
        return None
    kind = kernel_kind(features.get_reduction_hint(), next_pow2(rnumel), mix_order)
    element_size = element_size_from_buffers(features.buf_accesses())
    return lookup(kind, element_size, next_pow2(rnumel), next_pow2(xnumel), table, reduction_signature(features),
                  envelope_of_features(features), xnumel, rnumel)


# -- entry points of the patched Inductor functions --------------------------------------------


def persistent_decision(features, cooperative_reduction: bool) -> Optional[bool]:
    """InductorChoices.should_use_persistent_reduction: a rule may move the persistent threshold."""
    import torch._inductor.config as config

    if cooperative_reduction or config.triton.multi_kernel:
        return None
    rule = rule_for_features(features, mix_order=False)
    return None if rule is None else rule.persistent


def looped_config(size_hints, inductor_meta, triton_meta):
    """_reduction_configs: the rule's looped config, or None for Inductor's candidates."""
    rule = rule_for_size_hints(size_hints, inductor_meta.get("reduction_hint"), inductor_meta, triton_meta, False)
    if rule is None or rule.persistent:
        return None
    inductor_meta["distilled_rule"] = describe_rule(rule)
    from torch._inductor.runtime.triton_heuristics import InductorConfig

    # dynamic_scale_rblock would add a halved-R0_BLOCK variant and autotune it against the rule.
    return InductorConfig(
        {"XBLOCK": rule.XBLOCK, "R0_BLOCK": rule.R0_BLOCK}, num_warps=rule.num_warps,
        num_stages=rule.num_stages, dynamic_scale_rblock=False,
    )


def persistent_config(size_hints, reduction_hint, inductor_meta, triton_meta):
    """_persistent_reduction_configs: the rule's persistent config (R0_BLOCK is the whole row)."""
    if (inductor_meta or {}).get("RSPLIT_SIZE"):
        return None
    rule = rule_for_size_hints(size_hints, reduction_hint, inductor_meta, triton_meta, False)
    if rule is None or not rule.persistent:
        return None
    inductor_meta["distilled_rule"] = describe_rule(rule)
    from torch._inductor.runtime.triton_compat import Config

    return Config({"XBLOCK": rule.XBLOCK}, num_warps=rule.num_warps, num_stages=1)


def mix_order_config(size_hints, reduction_hint, inductor_meta, triton_meta):
    """persistent_reduction: XBLOCK, NUM_STAGES and warps of a fused mix-order backward kernel."""
    rule = rule_for_size_hints(size_hints, reduction_hint, inductor_meta, triton_meta, True)
    # The split size was fixed at codegen (mix_order_split_size); only a matching rule may apply.
    if rule is None or inductor_meta.get("RSPLIT_SIZE") != rule.RSPLIT_SIZE:
        return None
    inductor_meta["distilled_rule"] = describe_rule(rule)
    from torch._inductor.runtime.triton_compat import Config

    kwargs = {"XBLOCK": rule.XBLOCK, "RSPLIT_SIZE": rule.RSPLIT_SIZE, "NUM_STAGES": rule.NUM_STAGES}
    return Config(kwargs, num_warps=rule.num_warps, num_stages=1)


def kernel_reduction_types(features) -> tuple:
    if features is None:
        return ()
    try:
        return reduction_types(features.reduction_nodes())
    except Exception:  # kernels without scheduler nodes (templates, foreach): no rule keys on them
        return ()


def reduction_signature(features) -> str:
    """codegen/triton.py: the kernel's signature, written into inductor_meta for the config functions."""
    return kernel_signature(kernel_reduction_types(features), graph_is_backward())


def reduction_device(features) -> Optional[str]:
    """codegen/triton.py: the name of the table's GPU where the kernel runs on it, for the config functions."""
    try:
        nodes = list(features.scheduler_nodes()) if features is not None else []
        device = nodes[0].get_device() if nodes else None
    except Exception:  # kernels without scheduler nodes (templates, foreach): no rule keys on them
        return None
    if device is None or device.type != "cuda" or not device_name_matches(device.index) or _skip_config():
        return None
    return TABLE.gpu


def reduction_sizes(features) -> Optional[list]:
    """codegen/triton.py: the kernel's actual [rows, reduction length] for the span checks (None: symbolic)."""
    if features is None:
        return None
    sizes = [_static_int(features.numel), _static_int(features.reduction_numel)]
    return None if None in sizes else sizes


def reduction_envelope(features) -> Optional[str]:
    """codegen/triton.py: the kernel's envelope, written into inductor_meta for the config functions."""
    return envelope_of_features(features) if features is not None else None


# -- falling back to Inductor's configs where a rule's config does not fit (patched torch) ---------

FALLBACK_KEY = "distilled_fallback"


def keep_fallback(distilled, configs, inductor_meta: dict) -> list:
    """The config functions' result: the rule's config alone, with Inductor's own configs kept in
    inductor_meta (which travels with the kernel to compile workers and back) for ``fallback_configs``."""
    inductor_meta[FALLBACK_KEY] = {
        "rule": inductor_meta.pop("distilled_rule", "a distilled rule"),
        "configs": [{"kwargs": dict(c.kwargs), "num_warps": c.num_warps, "num_stages": c.num_stages}
                    for c in configs],
    }
    return [distilled]


def fallback_configs(autotuner, exc) -> Optional[list]:
    """CachingAutotuner: Inductor's own configs when a rule's config failed to compile or load; once."""
    kept = (getattr(autotuner, "inductor_meta", None) or {}).pop(FALLBACK_KEY, None)
    if not kept or not kept["configs"]:
        return None
    import logging

    from torch._inductor.runtime.triton_compat import Config

    name = getattr(getattr(autotuner, "fn", None), "__name__", "?")
    logging.getLogger(__name__).warning(
        "distilled rule %s does not fit kernel %s (%s: %s); it keeps Inductor's own configs",
        kept["rule"], name, type(exc).__name__, str(exc).splitlines()[0][:200] if str(exc) else "")
    return [Config(dict(c["kwargs"]), num_warps=c["num_warps"], num_stages=c["num_stages"]) for c in kept["configs"]]


def unsplit_decision(device, reduction_numel, numel, inner_reduction: bool, table=None) -> bool:
    """reduction_split_factor: a rule of the reduction's kind (inner, or outer: a column reduction) keeps it whole
    (asked only where Inductor splits)."""
    from torch._inductor.runtime.hints import DeviceProperties

    table = table or TABLE
    rnumel, xnumel = _static_int(reduction_numel), _static_int(numel)
    rules = [rule for rule in table.unsplit if rule.outer != bool(inner_reduction)]
    # Deterministic and autotuning modes keep Inductor's reduction order and its own plans.
    if not rules or _skip_config() or rnumel is None or xnumel is None \
            or device is None or getattr(device, "type", None) != "cuda":
        return False
    if not device_matches(DeviceProperties.create(device), table) or not device_name_matches(device.index, table):
        return False
    # ir.Reduction.num_splits asks with sizes alone; a rule naming reduction types reads the one it decides for
    # from that caller's frame (none found, on another torch: no such rule applies).
    frame = sys._getframe(1) if any(rule.reduction_types for rule in rules) else None
    while frame is not None and not (frame.f_code.co_name == "num_splits" and "_inductor" in frame.f_code.co_filename):
        frame = frame.f_back
    asked = frame.f_locals.get("reduction_type") if frame is not None else None
    rows, cols = (rnumel, xnumel) if not inner_reduction else (xnumel, rnumel)  # the problem's rows and N
    return any(within(rule.rows, rows) and within(rule.cols, cols)
               and (not rule.reduction_types or asked in rule.reduction_types) for rule in rules)


def mix_order_split_size(node, numel, rnumel, table=None) -> Optional[int]:
    """SIMDScheduling._codegen_mix_order_reduction: the rule's split size (RSPLIT_SIZE).

    ``node`` is the row-wise side of the fusion (``node1`` there); the fused kernel turns the other
    side's reductions into pointwise code, so its reduction nodes are ``node``'s alone."""
    import torch._inductor.config as config
    from torch._inductor.runtime.hints import DeviceProperties

    if _skip_config() or config.coordinate_descent_tuning:
        return None
    rnumel, xnumel = _static_int(rnumel), _static_int(numel)
    device = node.get_device()
    if rnumel is None or xnumel is None or device is None or device.type != "cuda":
        return None
    if not device_matches(DeviceProperties.create(device), table) or not device_name_matches(device.index, table):
        return None
    names = [dep.name for dep in (*node.read_writes.reads, *node.read_writes.writes)]
    signature = kernel_signature(reduction_types(node.get_nodes()), graph_is_backward())
    # The fused kernel's envelope is the row-wise side's (checked on the CPU harness); where they differed, the
    # config lookup, which sees the fused kernel, would find no rule and Inductor would pick the config itself.
    try:
        envelope = envelope_of_nodes(node.get_nodes(), xnumel, rnumel)
    except Exception:  # nodes that do not describe their accesses: only rules without envelopes apply
        envelope = None
    rule = lookup("mix_order", element_size_from_buffers(names), next_pow2(rnumel), next_pow2(xnumel), table, signature,
                  envelope, xnumel, rnumel)
    return None if rule is None else rule.RSPLIT_SIZE
