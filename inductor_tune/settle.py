"""Which fitted rules may ship a config yet: the settling of a fit against its span-probe rounds.

A span probe is placed by a fit that had not seen it, so the latest round in a rule's span is an
out-of-sample check the next fit has not yet had.  A rule ships its config only once that round timed
the config at N of every alignment class it applies at and at every kernel the rule matches by envelope, and
found it nowhere slower than the default beyond noise (``unsettled_rules``); ``unsettled_kinds`` is the coarser
rule of the files up to stop 20 (one loss holds back the whole kernel kind).
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

from .evidence import span_kernels
from .points import ShapePoint
from .fitparams import FitParams, probe_loss
from .heuristics import RuleSpec
from .runtime import torch_rules
from .shapes import ALIGNMENT_CLASSES, classes_with_n


def unsettled_kinds(points: Sequence[ShapePoint], params: FitParams = FitParams()) -> dict[str, str]:
    """Kernel kinds whose latest span-probe round found the placing fit's config slower than the default
    beyond noise (or failing) at some probe, with the reason (the module's docstring says why)."""
    latest: dict[str, tuple[str, ...]] = {}
    for p in points:
        if p.span and p.span_round:
            latest[p.kind] = max(latest.get(p.kind, ()), p.span_round)
    out = {}
    for kind, last in sorted(latest.items()):
        losses = {p.label: probe_loss(p, p.placed_by, params) for p in points
                  if p.span and p.kind == kind and p.span_round == last and p.placed_by is not None}
        lost = {label: ratio for label, ratio in losses.items() if ratio is not None}
        if lost:
            worst = min(lost, key=lost.get)
            out[kind] = (f"the latest span-probe round ({last[1]}, seed {last[2] or '-'}) still found the rule's config "
                         f"slower than the default beyond noise at {len(lost)} probe(s) (worst {lost[worst]:.3f} at "
                         f"{worst}); this kind keeps Inductor's default until a round finds no loss")
    return out


def _probed_by(rule: RuleSpec, p: ShapePoint) -> bool:
    """Whether span probe ``p`` lies in ``rule``'s size groups, row buckets and N span (as
    ``crossmeasure.span_probes`` places them): a size group split in bands of rows or of N has a rule per band,
    and a probe outside a rule's N span says nothing of it, since the rule never applies there.  The span is the
    rule's whole one, not that of the probe's alignment class: probes are placed over the whole span, and a probe of
    a class beyond that class's evidence is how its evidence grows."""
    return (rule.matches(p.kind, p.element_size, p.r_pow2, p.x_pow2, p.reductions, p.envelope or None)
            and torch_rules.within(rule.cols, p.cols))


def unsettled_rules(rules: Sequence[RuleSpec], points: Sequence[ShapePoint],
                    params: FitParams = FitParams()) -> dict[int, str]:
    """Index of each config rule that may not ship yet, with the reason: a rule ships a config only once
    the latest span-probe round in its span (of each kernel it matches) timed that very config at every probe it
    placed there and found it nowhere slower than the default beyond noise (nor failing).  A rule of a kind no
    round ever probed (data from before span probes) is not held back.  That round must also have timed the config at
    N of every alignment class it applies at (``applied_classes``): on an H200 a rule that won at 60 shapes lost
    12-15 % at N = 4 (mod 8), a class its evidence held once."""
    probed_kinds = {p.kind for p in points if p.span and p.span_round}
    out = {}
    for index, rule in enumerate(rules):
        if rule.config is None or rule.kind not in probed_kinds:
            continue
        probes = [p for p in points if p.span and p.span_round and _probed_by(rule, p)]
        if not probes:
            out[index] = "no span-probe round has timed it inside its span yet"
            continue
        # Each kernel's own latest round counts: a round restricted to some kernels (crossmeasure --kernels) says
        # nothing of the others, whose latest round still stands (stop 40).
        last_of: dict = {}
        for p in probes:
            last_of[p.kernel, p.dtype] = max(last_of.get((p.kernel, p.dtype), ()), p.span_round)
        latest = [p for p in probes if p.span_round == last_of[p.kernel, p.dtype]]
        rounds = sorted(set(last_of.values()), reverse=True)
        where = ("the latest span-probe round in its span" if len(rounds) == 1 else
                 "the latest span-probe rounds of its kernels in its span") + \
            " (" + "; ".join(f"{r[1]}, seed {r[2] or '-'}" for r in rounds) + ")"
        untimed = any(rule.config not in p.failed and rule.config not in p.speedups for p in latest)
        losses = {p.label: probe_loss(p, rule.config, params) for p in latest}
        lost = {label: ratio for label, ratio in losses.items() if ratio is not None}
        classes = applied_classes(rule) if params.settle_applied_classes else ALIGNMENT_CLASSES
        unseen = [c for c in classes if not any(p.cols % c[0] == c[1] and rule.config in p.speedups for p in latest)]
        unprobed = [f"{kernel} ({dtype})" for kernel, dtype in _matched_kernels(rule, points, params)
                    if not any((p.kernel, p.dtype) == (kernel, dtype) and rule.config in p.speedups for p in latest)]
        if lost:
            worst = min(lost, key=lost.get)
            out[index] = (f"{where} found this config slower than the default beyond noise at {len(lost)} probe(s) "
                          f"(worst {lost[worst]:.3f} at {worst}); it keeps Inductor's default until a round "
                          "finds no loss")
        elif untimed:
            out[index] = f"{where} placed its probes for another config; this one is not yet timed there"
        elif unseen:
            out[index] = (f"{where} timed it at no N = " + ", ".join(f"{r} (mod {m})" for m, r in unseen)
                          + "; a row's alignment can turn a win into a loss (docs/rules.md, stop 21)")
        elif unprobed:
            out[index] = (f"{where} timed it at no probe of " + ", ".join(unprobed) + ", which it matches by "
                          "envelope; kernels of one envelope can differ (docs/rules.md, stop 27)")
    return out


def applied_classes(rule: RuleSpec) -> list[tuple[int, int]]:
    """The alignment classes of N at which ``rule`` may launch its config: those its class spans name
    (``FitParams.cols_by_alignment``), or, without class spans, those with an N in its span.  At N of any other class
    the rule launches Inductor's default, so it need not wait for a probe there (a loss there still holds it back,
    as anywhere in its span)."""
    if rule.aligned_cols:
        named = {(m, r) for m, r, _, _ in rule.aligned_cols}
        return [c for c in ALIGNMENT_CLASSES if c in named]
    if rule.cols is None:
        return list(ALIGNMENT_CLASSES)
    return classes_with_n(*rule.cols)


def _matched_kernels(rule: RuleSpec, points: Sequence[ShapePoint], params: FitParams) -> list[tuple[str, str]]:
    """The kernels (and dtypes) whose probes in the rule's span compile a kernel the rule matches."""
    if not params.probe_every_kernel:
        return []
    groups = {(p.family, p.r_pow2) for p in points if not p.probe and _probed_by(rule, p)}
    return sorted({k for family, r in groups for k in span_kernels(points, family, r)})


def settle_rules(rules: Sequence[RuleSpec], unsettled: Mapping[int, str]) -> list[RuleSpec]:
    """The rules with each unsettled rule's config replaced by Inductor's default, saying why."""
    return [dataclasses.replace(r, config=None, evidence=dataclasses.replace(
                r.evidence, note=f"fitted {r.config.describe()}, not shipped: {unsettled[i]}"))
            if i in unsettled else r for i, r in enumerate(rules)]


def settle(rules: Sequence[RuleSpec], unsettled: Mapping[str, str]) -> list[RuleSpec]:
    """The rules with every config of an unsettled kind replaced by Inductor's default, saying why."""
    return settle_rules(rules, {i: unsettled[r.kind] for i, r in enumerate(rules)
                                if r.config is not None and r.kind in unsettled})
