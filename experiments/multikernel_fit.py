"""Fit multi-kernel entries (a heuristic file's ``multi_kernel``) onto a fitted file, from its fit list's training data.

For each size group of an inner-reduction family (kind, element size, reduction signature, envelope, next_pow2 of
N), the k configs that `experiments/ceiling.py`'s ``multi-kernel k`` chooses over the whole group (greedily, each
adding to the geometric mean over the group of the fastest of Inductor's default and the chosen configs, at the
shapes where they were timed) become one entry over the rows and N the group's records measured, for the kernels of
that family alone. Inductor builds one kernel per config beside its own and keeps the fastest at run time
(`inductor_tune/runtime/multi_kernel.py`), so the default always competes.

An entry is written only where the choice holds up on shapes it was not chosen on: leaving each studied shape of the
group out in turn, the configs chosen without it must reach at least ``--min-gain`` (default 1.02, beyond the
crossmeasure noise) over the default in the geometric mean over the group's shapes, and the group needs at least
``--min-shapes`` studied shapes. An entry comes before the file's config rules at run time, so the configs of the
rules at the group's shapes are chosen first and the rest added up to k (``--k``, or as many as those rules).
The fit reads only the fit list's databases; no held-out data enters it.

Usage: python3 experiments/multikernel_fit.py FIT_LIST BASE.yaml OUT.yaml [--k 3] [--gpu H200] [--candidates-from GPU]
       [--min-gain 1.02] [--min-shapes 3]
"""

import argparse
import collections
import dataclasses
import math
import sys

import ceiling  # this folder's: the ratios and the greedy choice of the multi-kernel form
import fit_loo

from inductor_tune import heuristics
from inductor_tune.distill import _rule_for
from inductor_tune.heuristics import Evidence, MultiKernelSpec
from inductor_tune.runtime.rulefile import load

INNER_KINDS = ("inner_persistent", "inner_looped")


def group_candidates(group) -> list:
    """Configs of the default's split timed interleaved at half the group's shapes or more."""
    counts = collections.Counter(c for q in group for c in ceiling.interleaved_ratios(q))
    return [c for c, n in counts.items() if 2 * n >= len(group)]


def choose(group, k: int, seeds: tuple = ()) -> list:
    """``seeds``, then configs added one at a time for the best geometric mean over ``group`` of the fastest of the
    default and the chosen (``ceiling.multi_kernel``'s choice), each adding to it, up to ``k`` in all."""
    chosen: list = list(seeds)

    def score(configs):
        return sum(math.log(ceiling.with_default(q, configs) / ceiling.best_found(q)) for q in group)

    left = group_candidates(group)
    while len(chosen) < k:
        best = max((c for c in left if c not in chosen), key=lambda c: score([*chosen, c]), default=None)
        if best is None or score([*chosen, best]) <= score(chosen):
            break
        chosen.append(best)
    return chosen


def loo_gain(group, studied, k: int, seeds: tuple) -> float:
    """Geometric mean over ``studied`` of the speedup over the default that the configs chosen without each shape
    reach there."""
    logs = [math.log(ceiling.with_default(p, choose([q for q in group if q is not p], k, seeds))) for p in studied]
    return math.exp(sum(logs) / len(logs))


def rule_configs(rules, group) -> tuple:
    """The configs of the file's config rules at the group's shapes: an entry comes before them at run time, so it
    keeps them among its own."""
    configs = {rule.config for p in group if (rule := _rule_for(rules, p)) is not None and rule.config is not None}
    return tuple(sorted(configs, key=lambda c: c.describe()))


def fit_entries(points, rules, k: int, min_gain: float, min_shapes: int):
    """(entries, one report line per group considered)."""
    groups = collections.defaultdict(list)
    for p in points:
        if p.family[0] in INNER_KINDS and ceiling.interleaved_ratios(p):
            groups[(*p.family, p.r_pow2)].append(p)
    entries, report = [], []
    for key in sorted(groups, key=str):
        group = groups[key]
        kind, element_size, reductions, envelope, r_pow2 = key
        studied = [p for p in group if not p.probe]
        if len(studied) < min_shapes:
            continue
        seeds = rule_configs(rules, group)
        gain = loo_gain(group, studied, max(k, len(seeds)), seeds)
        configs = choose(group, max(k, len(seeds)), seeds)
        label = f"{kind} {reductions} elem={element_size}B r={r_pow2}: {len(studied)} shapes, leave-one-out {gain:.3f}"
        if gain < min_gain or not configs:
            report.append(f"{label}: no entry")
            continue
        rows = (min(p.rows for p in group), max(p.rows for p in group))
        cols = (min(p.cols for p in group), max(p.cols for p in group))
        in_sample = [ceiling.with_default(p, configs) for p in studied]
        evidence = Evidence(
            shapes=tuple(f"{p.rows}x{p.cols}" for p in studied),
            gain_geomean=round(math.exp(sum(map(math.log, in_sample)) / len(in_sample)), 4),
            gain_min=round(min(in_sample), 4), gain_max=round(max(in_sample), 4),
            note=f"multi-kernel {k} per group; leave-one-shape-out geomean over the default {gain:.4f}")
        entries.append(MultiKernelSpec(kind, element_size, rows, cols, tuple(configs),
                                       ((reductions, envelope),), evidence))
        report.append(f"{label}: {len(configs)} config(s), in sample {evidence.gain_geomean:.3f}")
    return entries, report


def entry_at(entries, point):
    return next((e for e in entries if e.covers(*point.family, point.rows, point.cols)), None)


def in_sample(points, rules, entries) -> list[str]:
    """Per kind of kernel, over the studied shapes where the file's choice was timed: the geometric mean of the ratio
    to the best found of the file alone and with its entries (an entry first, its ideal pick), in sample."""
    ratios = collections.defaultdict(list)
    for p in points:
        alone = ceiling.rule_ratio(rules, p) if not p.probe and ceiling.interleaved_ratios(p) else None
        if alone is None:
            continue
        entry = entry_at(entries, p)
        both = alone if entry is None else ceiling.with_default(p, list(entry.configs)) / ceiling.best_found(p)
        for key in ("all", p.kind):
            ratios[key].append((alone, both))
    return [f"in sample, {key}: {len(pairs)} shapes, the file {ceiling.geomean(a for a, _ in pairs):.3f}, with its "
            f"entries {ceiling.geomean(b for _, b in pairs):.3f}" for key, pairs in sorted(ratios.items())]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fit_list")
    parser.add_argument("base")
    parser.add_argument("out")
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--gpu", default="H200")
    parser.add_argument("--candidates-from", help="the GPU whose studies frame this GPU's crossmeasure records "
                        "(as distill --candidates-from)")
    parser.add_argument("--min-gain", type=float, default=1.02)
    parser.add_argument("--min-shapes", type=int, default=3)
    args = parser.parse_args(argv)
    base = load(args.base)
    points = fit_loo.load(args.fit_list, args.gpu, args.candidates_from)
    entries, report = fit_entries(points, base.rules, args.k, args.min_gain, args.min_shapes)
    heuristics.dump(dataclasses.replace(base, multi_kernel=tuple(entries)), args.out)
    written = load(args.out)
    report += in_sample(points, list(base.rules), entries)
    sys.stdout.write("\n".join(report) + f"\n{args.out}: {written.digest()[:8]}, {len(entries)} multi-kernel entries "
                     f"with {sum(len(e.configs) for e in entries)} configs over {base.digest()[:8]}\n")


if __name__ == "__main__":
    main()
