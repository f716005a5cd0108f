"""What a distilled rule file holds: the GPU it was measured on and its rules, each with its evidence.

A heuristic file (YAML, written by ``inductor-tune distill``, read by ``rulefile``) holds the rules
for one GPU model: per kernel kind, element size and next_pow2(rnumel)/next_pow2(xnumel) range either
a launch config or "keep default", each with its evidence, plus the provenance of the studies and the
held-out results.  ``Heuristics.table`` turns the config rules into the ``torch_rules.Table`` that
``install`` and a patched torch both consult, so the two cannot cover different kernels.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any, Mapping

from . import torch_rules
from .launch import SlotConfig

FORMAT = "inductor-tune-heuristics/1"
KINDS = ("inner_persistent", "inner_looped", "outer", "mix_order")


class HeuristicsError(ValueError):
    """A heuristic file that cannot be used; the message is the one line the user sees."""


@dataclasses.dataclass(frozen=True)
class GpuSpec:
    name: str
    fingerprint: str
    compute_capability: str  # "9.0"
    sm_count: int
    torch: str
    triton: str

    @property
    def cc(self) -> int:
        major, minor = self.compute_capability.split(".")
        return int(major) * 10 + int(minor)


@dataclasses.dataclass(frozen=True)
class Evidence:
    """What the rule rests on, measured on the fitting shapes of its range (in-sample)."""

    shapes: tuple[str, ...] = ()
    measured: tuple[str, ...] = ()  # shapes where the rule's config was measured
    unmeasured: tuple[str, ...] = ()  # shapes where it never was (to re-measure on the GPU)
    gain_geomean: float | None = None  # speedup over Inductor's default, where measured
    gain_min: float | None = None
    gain_max: float | None = None
    noise: float | None = None  # largest measurement noise at those shapes (fraction)
    worst_regret: float | None = None  # worst ratio of the shape's best time to the rule's time
    inductor_default: tuple[str, ...] = ()  # what Inductor picks there today
    candidates: tuple[str, ...] = ()  # promising configs measured at too few shapes: re-measure these
    note: str = ""


@dataclasses.dataclass(frozen=True)
class RuleSpec:
    kind: str
    element_size: int
    rnumel: tuple[int, int]
    xnumel: tuple[int, int]
    config: SlotConfig | None  # None: keep Inductor's default
    evidence: Evidence = Evidence()
    reductions: str | None = None  # torch_rules.reductions_key of the kernels it covers; None: any
    # torch_rules.envelope_text of every kernel the evidence measured; the rule covers those alone
    # (empty: any, as in files written before envelopes were recorded).
    envelopes: tuple[str, ...] = ()
    # Inclusive spans of the actual rows and reduction lengths the evidence measured; None: the pow2
    # ranges alone (files written before spans were recorded).  See torch_rules.Rule.
    rows: tuple[int, int] | None = None
    cols: tuple[int, int] | None = None
    # (modulus, residue, low, high) per alignment class of N its evidence measured; empty: ``cols`` alone
    # (files written before stop 52).  See torch_rules.Rule.
    aligned_cols: tuple[tuple[int, int, int, int], ...] = ()
    # (rows, N) vertices of the convex hull of the evidence at odd N; empty: the spans alone (files written before
    # stop 54).  See torch_rules.Rule.
    odd_hull: tuple[tuple[int, int], ...] = ()

    def matches(self, kind: str, element_size: int | None, rnumel_pow2: int, xnumel_pow2: int,
                reductions: str | None = None, envelope: str | None = None, rows: int | None = None,
                cols: int | None = None) -> bool:
        return (
            self.kind == kind and self.element_size == element_size
            and self.rnumel[0] <= rnumel_pow2 <= self.rnumel[1] and self.xnumel[0] <= xnumel_pow2 <= self.xnumel[1]
            and (self.reductions is None or self.reductions == reductions)
            and (not self.envelopes or envelope in self.envelopes)
            # Sizes not given (a fit's pow2 bookkeeping): the buckets alone.  Lookups of real kernels
            # (``lookup``, torch_rules) always pass them.
            and (rows is None or torch_rules.within(self.rows, rows))
            and (cols is None or (torch_rules.within(self.cols, cols)
                                  and torch_rules.within_aligned(self.aligned_cols, cols)
                                  and (rows is None or torch_rules.within_odd_hull(self.odd_hull, rows, cols))))
        )

    def describe(self) -> str:
        what = self.config.describe() if self.config else "keep default"
        fused = f" reductions={self.reductions}" if self.reductions else ""
        return f"{self.kind}{fused} elem={self.element_size}B r={self.rnumel[0]}..{self.rnumel[1]} " \
               f"x={self.xnumel[0]}..{self.xnumel[1]}: {what}"


@dataclasses.dataclass(frozen=True)
class UnsplitSpec:
    """Inner reductions of ``rows`` outputs and length ``cols`` (inclusive measured spans) that Inductor would
    split into two kernels stay one (``torch_rules.UnsplitRule``), with the A/B evidence it rests on. With
    ``outer``, column reductions of a ``rows`` x ``cols`` problem instead (``cols`` outputs, each a sum over
    ``rows``: a norm backward's weight gradient)."""

    rows: tuple[int, int]
    cols: tuple[int, int]
    evidence: Evidence = Evidence()
    # The launch config of the one kernel, as the A/B measured it (None: Inductor's or a launch rule's), and
    # the element size of the kernels it was measured on: the config applies to those alone.
    config: SlotConfig | None = None
    element_size: int | None = None
    # (signature, envelope) of every kernel the config was measured on (torch_rules.kernel_signature and
    # envelope_text): the config applies to those alone; any other kernel kept whole gets Inductor's config.
    # Empty: every kernel (a probe, which measures the config everywhere; a fit always lists them).
    kernels: tuple[tuple[str, str], ...] = ()
    # The reduction types Inductor decides the split for (``ir.Reduction.num_splits``' reduction_type, e.g.
    # online_softmax_reduce) that the rule keeps whole; empty: any. Sizes alone cannot tell a softmax forward from
    # a backward of the same rows and N, and they answered the one kernel oppositely (docs/rules.md, stop 60).
    reduction_types: tuple[str, ...] = ()
    # Column reductions: Inductor's outer split (the best founds of held-out set 60 kept a small-row RMSNorm
    # backward's weight gradient whole, docs/rules.md, stop 69). Such a rule takes Inductor's config.
    outer: bool = False

    def describe(self) -> str:
        what = (f": {self.config.describe()} for {len(self.kernels)} kernel(s) of {self.element_size}-byte elements"
                if self.config else "")
        which = f" of {'/'.join(self.reduction_types)}" if self.reduction_types else ""
        if self.outer:
            return (f"unsplit column reductions{which} of rows {self.rows[0]}..{self.rows[1]} "
                    f"x N {self.cols[0]}..{self.cols[1]}{what}")
        return (f"unsplit inner reductions{which} rows {self.rows[0]}..{self.rows[1]} "
                f"r={self.cols[0]}..{self.cols[1]}{what}")

    def launch_rules(self) -> tuple[torch_rules.Rule, ...]:
        """The config of the one kernel as launch rules over the same spans, one per reduction signature, each
        naming the envelopes measured: the kernel a kept-whole inner reduction compiles (its reduction hint
        is INNER and it is longer than 8192, so it is looped unless the config says persistent)."""
        if self.config is None:
            return ()
        cfg = self.config
        by_signature: dict = {} if self.kernels else {None: []}
        for signature, envelope in self.kernels:
            by_signature.setdefault(signature, []).append(envelope)
        return tuple(launch_rule(
            "inner_looped", int(self.element_size or 0),
            (torch_rules.next_pow2(self.cols[0]), torch_rules.next_pow2(self.cols[1])),
            (torch_rules.next_pow2(self.rows[0]), torch_rules.next_pow2(self.rows[1])),
            cfg, signature, envelopes, self.rows, self.cols,
        ) for signature, envelopes in sorted(by_signature.items(), key=lambda item: str(item[0])))


@dataclasses.dataclass(frozen=True)
class MixAutotuneSpec:
    """Fused mix-order kernels (a norm's backward fused with its weight gradient) of ``rows`` and reduction
    length ``cols`` (inclusive measured spans) whose split Inductor's own split-size autotuner chooses
    (``triton.mix_order_reduction_autotune_split_size``) instead of its SM-count formula.  A config rule
    that matches the kernel comes first; everything else about the kernel stays Inductor's."""

    rows: tuple[int, int]
    cols: tuple[int, int]
    element_size: int
    # Also Inductor's multi-stage mix-order loop (``triton.mix_order_reduction_allow_multi_stages``: off in
    # torch 2.11, on from 2.13).
    multi_stages: bool = False
    # The smallest split the autotuner may try (None: Inductor's own floor, 8).  It times the fused kernel
    # alone, not the reduction of the partial sums that follows, which reads about 1/split of what the fused
    # kernel reads; on the H200 every probe move from 16 to 8 read below 1, four of six beyond noise (docs/rules.md,
    # stop 38).
    min_split: int | None = None
    # Inductor's own split is left only for one the autotuner timed faster by more than this fraction (None: any
    # faster one, as Inductor does): its timing of the fused kernel alone misjudged gains of a few per cent.
    margin: float | None = None
    # Only splits above Inductor's own: a larger split leaves fewer partial sums to reduce, so a fused kernel
    # timed faster at a larger split is faster end to end as well.
    up_only: bool = False
    # (signature, envelope) of every kernel the evidence measured, as launch rules name them; empty: any.
    kernels: tuple[tuple[str, str], ...] = ()
    evidence: Evidence = Evidence()
    # Each split is timed end to end: the fused kernel, then the reduction of its partial sums that Inductor's
    # wrapper runs after it (``workspace.view(nsplit, rnumel).sum(dim=0)`` per weight gradient), which the
    # autotuner alone leaves out; with it, a smaller split must pay for the partial sums it leaves.
    end_to_end: bool = False
    # Every power-of-two split from the floor to SWEEP_MAX is timed and the fastest kept, where Inductor's
    # CoordescTuner climbs from its own split and stops at the first split no faster (or one it cannot time), so
    # what it finds depends on where it starts.
    sweep: bool = False

    def describe(self) -> str:
        stages = " with multi-stage loops" if self.multi_stages else ""
        stages += ", timed end to end" if self.end_to_end else ""
        stages += ", every power-of-two split timed" if self.sweep else ""
        floor = f" from {self.min_split}" if self.min_split else ""
        floor += " up from Inductor's" if self.up_only else ""
        floor += f", leaving Inductor's for {100 * self.margin:.0f} % faster" if self.margin else ""
        which = f" for {len(self.kernels)} kernel(s)" if self.kernels else ""
        sizes = f"rows {self.rows[0]}..{self.rows[1]} r={self.cols[0]}..{self.cols[1]}"
        return f"mix_order elem={self.element_size}B {sizes}{which}: Inductor autotunes the split{floor}{stages}"


@dataclasses.dataclass(frozen=True)
class MultiKernelSpec:
    """Inner reductions of one kind, element size, ``rows`` and length ``cols`` (inclusive measured spans) for which
    Inductor builds one more kernel per config of ``configs`` beside its own and, at the kernel's first run, times
    them all and keeps the fastest (its ``MultiKernel``, as ``triton.multi_kernel`` times a persistent kernel against
    its looped twin).  Inductor's own kernel always competes, so no covered kernel runs slower than Inductor's
    beyond the timing's own noise, and a config that is slower than the default at some shapes of its group, which
    a forced config rule must not be, can still win where it is faster (stop 56's estimate on the training data:
    0.978-0.993 of the best found at inner reductions with 3 configs per group, against 0.924-0.974 for the
    files).  An entry comes before a config rule that matches the same kernel; its fit keeps that rule's config
    among its own."""

    kind: str  # inner_persistent | inner_looped
    element_size: int
    rows: tuple[int, int]
    cols: tuple[int, int]
    configs: tuple[SlotConfig, ...]
    # (signature, envelope) of every kernel the evidence measured, as launch rules name them; empty: any.
    kernels: tuple[tuple[str, str], ...] = ()
    evidence: Evidence = Evidence()

    def covers(self, kind: str, element_size: int, reductions: str | None, envelope: str | None, rows: int,
               cols: int) -> bool:
        """Whether the entry covers a kernel of these actual rows and reduction length (its spans bound the pow2
        ranges the runtime's lookup also checks)."""
        return ((self.kind, self.element_size) == (kind, element_size)
                and (not self.kernels or (reductions, envelope) in self.kernels)
                and self.rows[0] <= rows <= self.rows[1] and self.cols[0] <= cols <= self.cols[1])

    def describe(self) -> str:
        which = f" for {len(self.kernels)} kernel(s)" if self.kernels else ""
        sizes = f"rows {self.rows[0]}..{self.rows[1]} r={self.cols[0]}..{self.cols[1]}"
        timed = "; ".join(cfg.describe() for cfg in self.configs)
        return f"{self.kind} elem={self.element_size}B {sizes}{which}: Inductor times its own kernel and {timed}"


@dataclasses.dataclass(frozen=True)
class Heuristics:
    gpu: GpuSpec
    rules: tuple[RuleSpec, ...]
    provenance: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    holdout: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    not_covered: tuple[str, ...] = ()
    unsplit: tuple[UnsplitSpec, ...] = ()
    mix_autotune: tuple[MixAutotuneSpec, ...] = ()
    multi_kernel: tuple[MultiKernelSpec, ...] = ()

    def lookup(self, kind: str, element_size: int | None, rnumel: int, xnumel: int,
               reductions: str | None = None, envelope: str | None = None) -> RuleSpec | None:
        """The rule covering a kernel (sizes are rounded up to powers of two, as Inductor's hints are)."""
        r, x = torch_rules.next_pow2(rnumel), torch_rules.next_pow2(xnumel)
        return next((rule for rule in self.rules
                     if rule.matches(kind, element_size, r, x, reductions, envelope, xnumel, rnumel)), None)

    def table(self) -> torch_rules.Table:
        """The config rules as torch_rules consults them (keep-default rules need no entry)."""
        rules = tuple(launch_rule(r.kind, r.element_size, r.rnumel, r.xnumel, r.config, r.reductions, r.envelopes,
                                  r.rows, r.cols, r.aligned_cols, r.odd_hull)
                      for r in self.rules if r.config is not None)
        unsplit = tuple(torch_rules.UnsplitRule(rows=tuple(u.rows), cols=tuple(u.cols),
                                                reduction_types=tuple(u.reduction_types), outer=u.outer)
                        for u in self.unsplit)
        # An unsplit rule's own config comes first: inside its spans it is what the A/B measured.
        return torch_rules.Table(self.gpu.name, self.gpu.cc, self.gpu.sm_count,
                                 self.unsplit_launch_rules() + rules, unsplit)

    def unsplit_launch_rules(self) -> tuple[torch_rules.Rule, ...]:
        return tuple(rule for u in self.unsplit for rule in u.launch_rules())

    def digest(self) -> str:
        parts = [dataclasses.asdict(self.gpu), [rule_dict(r) for r in self.rules]]
        if self.unsplit:  # files without unsplit rules keep the digests they had before such rules existed
            parts.append([unsplit_dict(u) for u in self.unsplit])
        if self.mix_autotune:  # likewise for files without split-autotune entries
            parts.append({"mix_autotune": [mix_autotune_dict(m) for m in self.mix_autotune]})
        if self.multi_kernel:  # likewise for files without multi-kernel entries
            parts.append({"multi_kernel": [multi_kernel_dict(m) for m in self.multi_kernel]})
        body = json.dumps(parts, sort_keys=True)
        return hashlib.sha256(body.encode()).hexdigest()[:16]


def entry_table(specs, gpu: str, capability: int, sm_count: int, kind: str | None, persistent: bool,
                ) -> torch_rules.Table:
    """A file's entries (split-autotune or multi-kernel) as launch rules for ``torch_rules.lookup``, one per kernel
    the entry names, each rule's RSPLIT_SIZE holding its entry's index + 1: the lookup finds the entry, and no config
    of these rules is ever forced.  ``kind``: the rules' kind (None: each spec's own)."""
    rules = []
    for index, spec in enumerate(specs, start=1):
        rnumel = (torch_rules.next_pow2(spec.cols[0]), torch_rules.next_pow2(spec.cols[1]))
        xnumel = (torch_rules.next_pow2(spec.rows[0]), torch_rules.next_pow2(spec.rows[1]))
        for signature, envelope in spec.kernels or ((None, None),):
            rules.append(torch_rules.Rule(
                kind=kind or spec.kind, element_size=spec.element_size, rnumel=rnumel, xnumel=xnumel,
                persistent=persistent, XBLOCK=1, num_warps=1, RSPLIT_SIZE=index, reductions=signature,
                envelopes=(envelope,) if envelope else (), rows=tuple(spec.rows), cols=tuple(spec.cols)))
    return torch_rules.Table(gpu, capability, sm_count, tuple(rules))


def launch_rule(kind: str, element_size: int, rnumel, xnumel, cfg: SlotConfig, reductions, envelopes, rows,
                cols, aligned_cols=(), odd_hull=()) -> torch_rules.Rule:
    """One config as torch_rules consults it (a persistent kernel takes the whole row and one stage)."""
    return torch_rules.Rule(
        kind=kind, element_size=element_size, rnumel=tuple(rnumel), xnumel=tuple(xnumel),
        persistent=cfg.persistent, XBLOCK=cfg.XBLOCK, num_warps=cfg.num_warps,
        R0_BLOCK=None if cfg.persistent else cfg.R0_BLOCK, num_stages=1 if cfg.persistent else cfg.num_stages,
        RSPLIT_SIZE=cfg.RSPLIT_SIZE, NUM_STAGES=cfg.NUM_STAGES, reductions=reductions, envelopes=tuple(envelopes),
        rows=tuple(rows) if rows else None, cols=tuple(cols) if cols else None,
        aligned_cols=tuple(tuple(span) for span in aligned_cols), odd_hull=tuple(tuple(v) for v in odd_hull),
    )


def config_dict(cfg: SlotConfig) -> dict[str, Any]:
    out: dict[str, Any] = {"persistent": cfg.persistent, "XBLOCK": cfg.XBLOCK, "num_warps": cfg.num_warps}
    if not cfg.persistent:
        out.update(R0_BLOCK=cfg.R0_BLOCK, num_stages=cfg.num_stages)
    if cfg.RSPLIT_SIZE is not None:
        out.update(RSPLIT_SIZE=cfg.RSPLIT_SIZE, NUM_STAGES=cfg.NUM_STAGES)
    return out


def _evidence_dict(evidence: Evidence) -> dict[str, Any]:
    ev = {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(evidence).items()}
    return {k: v for k, v in ev.items() if v not in (None, "", [])}


def unsplit_dict(spec: UnsplitSpec) -> dict[str, Any]:
    """An unsplit rule as the file spells it (the digest hashes this)."""
    out: dict[str, Any] = {"rows": list(spec.rows), "cols": list(spec.cols)}
    if spec.outer:  # inner rules keep the digests they had before column rules existed
        out["reduction"] = "outer"
    if spec.config is not None:  # rules without a config keep the digests they had before configs existed
        out.update(element_size=spec.element_size, config=config_dict(spec.config))
        if spec.kernels:
            out["kernels"] = [{"reductions": sig, "envelope": env} for sig, env in spec.kernels]
    if spec.reduction_types:  # likewise for rules that key on sizes alone
        out["reduction_types"] = list(spec.reduction_types)
    out["evidence"] = _evidence_dict(spec.evidence)
    return out


def mix_autotune_dict(spec: MixAutotuneSpec) -> dict[str, Any]:
    """A split-autotune entry as the file spells it (the digest hashes this)."""
    out: dict[str, Any] = {"rows": list(spec.rows), "cols": list(spec.cols), "element_size": spec.element_size}
    if spec.multi_stages:
        out["multi_stages"] = True
    if spec.min_split is not None:
        out["min_split"] = spec.min_split
    if spec.margin is not None:
        out["margin"] = spec.margin
    if spec.up_only:
        out["up_only"] = True
    if spec.end_to_end:
        out["end_to_end"] = True
    if spec.sweep:
        out["sweep"] = True
    if spec.kernels:
        out["kernels"] = [{"reductions": sig, "envelope": env} for sig, env in spec.kernels]
    out["evidence"] = _evidence_dict(spec.evidence)
    return out


def multi_kernel_dict(spec: MultiKernelSpec) -> dict[str, Any]:
    """A multi-kernel entry as the file spells it (the digest hashes this)."""
    out: dict[str, Any] = {"kind": spec.kind, "rows": list(spec.rows), "cols": list(spec.cols),
                           "element_size": spec.element_size, "configs": [config_dict(c) for c in spec.configs]}
    if spec.kernels:
        out["kernels"] = [{"reductions": sig, "envelope": env} for sig, env in spec.kernels]
    out["evidence"] = _evidence_dict(spec.evidence)
    return out


def rule_dict(rule: RuleSpec) -> dict[str, Any]:
    """A rule as the file spells it; the digest hashes this, so a file written and read back keeps its digest."""
    out: dict[str, Any] = {"kind": rule.kind}
    if rule.reductions is not None:
        out["reductions"] = rule.reductions
    out.update({
        "element_size": rule.element_size, "rnumel": list(rule.rnumel), "xnumel": list(rule.xnumel),
    })
    if rule.envelopes:
        out["envelopes"] = list(rule.envelopes)
    if rule.rows:
        out["rows"] = list(rule.rows)
    if rule.cols:
        out["cols"] = list(rule.cols)
    if rule.aligned_cols:  # files without them keep their digests
        out["cols_by_alignment"] = [{"mod": m, "rem": r, "cols": [lo, hi]} for m, r, lo, hi in rule.aligned_cols]
    if rule.odd_hull:  # likewise
        out["odd_hull"] = [list(vertex) for vertex in rule.odd_hull]
    out["action"] = "config" if rule.config else "keep_default"
    if rule.config:
        out["config"] = config_dict(rule.config)
    out["evidence"] = _evidence_dict(rule.evidence)
    return out
