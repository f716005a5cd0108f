"""How close could launch-config rules of several forms come to each shape's best found? A diagnostic of rule forms.

The target "held-out score >= 0.97x the per-shape best found" asks a rule (one config over a size group) to come
within 3 % of what a study found at each shape. This reads a fit list's training data (as `distill` loads it:
studies, crossmeasure records and probes of one GPU) and scores, at every studied shape, what the best choice of
each form for the shape's group would reach there, leaving the shape out of the choice (leave one out):

* ``default``: Inductor's default at every shape (1 / best found);
* ``group LOO``: the config with the best geometric-mean ratio to the best found over the rest of the group, among the
  configs timed at the shape and at least half of the rest (the default competes too);
* ``group LOO, safe``: the same, among configs no slower than the default beyond 2 % at any shape of the rest where
  they were timed (what the fit asks of a rule);
* the same two with groups also cut by pow2 row bucket, a finer key than the fit's;
* ``nearest k``: the config with the best geometric-mean ratio over the k studied shapes of the family nearest in
  log rows and log N (no buckets at all), under the same safety condition;
* ``autotuned k``: a rule that forces one kind of kernel (persistent or looped, and a fused mix-order backward's
  split, as rules do now) and hands Inductor's own autotuner k configs of that kind, chosen for the group without the
  shape (greedily: each adds the most to the geometric mean of the fastest over the rest). Inductor's default
  competes too where the kernel it generates at a shape is of that kind. Inductor autotunes this way already where
  its reduction hint is DEFAULT; the pick here is ideal, without the autotuner's own noise. ``safe``: only sets no
  slower than the default beyond 2 % at any shape of the rest; ``group+rows autotuned``: the same per row bucket too;
* ``multi-kernel k``: k configs chosen for the group without the shape (greedily, as above) that Inductor's autotuner
  times beside its own default at every shape, the persistent and the looped kernel alike, as Inductor's multi-kernel
  builds and times both (only a fused mix-order backward's split must be the default's). The default always competes,
  so this form is no slower than the default but for the autotuner's own noise, which the ideal pick here leaves out;
* ``candidates' best``: the best config at the shape (of the default's split) among those a choice without it may
  take (timed there and at half the rest of its group): what any choice from the measured candidates could reach;
* with ``--rules FILE``: what that file's rule reaches at each shape, in sample where the file was fitted on them.

No choice needs coverage the way `distill` does: each number estimates what its form could reach on this data with
every gap filled. They are not bounds on every method (row bands, cuts in N and merges may do better than the plain
groups here). Only interleaved timings count; a shape's best found is the best of them (1.0: the default).
Diagnostic only: nothing here enters a fit.

Usage: python3 experiments/ceiling.py FIT_LIST [--gpu H200] [--candidates-from GPU] [--rules FILE] [--csv OUT.csv]
       [--sample N --seed S]
(a fit list: two header lines, then its databases; e.g. experiments/fits/h200-s52.txt)
"""

import argparse
import collections
import math
import re
import sys

import fit_loo  # this folder's: the fit list's loading and the shape sample
import pandas

from inductor_tune.distill import _rule_for
from inductor_tune.runtime.rulefile import load

MAX_LOSS = 0.02


def interleaved_ratios(point) -> dict:
    """Speedup over the default of each config timed interleaved at ``point``."""
    return {c: s for c, s in point.speedups.items() if c in point.interleaved and s > 0}


def best_found(point) -> float:
    return max([1.0, *interleaved_ratios(point).values()])


def candidates(point, others) -> list:
    """Configs a choice without ``point`` may take: timed at ``point`` (to be scored there) and at half the rest."""
    return [c for c in interleaved_ratios(point)
            if others and 2 * sum(c in interleaved_ratios(q) for q in others) >= len(others)]


def default_score(others) -> float:
    """Mean log ratio to the best found of Inductor's default over ``others``."""
    return sum(-math.log(best_found(q)) for q in others) / max(len(others), 1)


def choose(point, others, safe: bool):
    """The config (None: the default) one rule over ``others`` would take, among ``candidates``."""
    ratios = [(interleaved_ratios(q), best_found(q)) for q in others]
    best_config, best_score = None, default_score(others)
    for config in candidates(point, others):
        timed = [(r[config], b) for r, b in ratios if config in r]
        if safe and any(s < 1 - MAX_LOSS for s, _ in timed):
            continue
        score = sum(math.log(s / b) for s, b in timed) / len(timed)
        if score > best_score:
            best_config, best_score = config, score
    return best_config


def loo_ratio(point, others, safe: bool) -> float:
    """The ratio to its best found that the config chosen without ``point`` reaches at ``point``."""
    config = choose(point, others, safe)
    speedup = 1.0 if config is None else interleaved_ratios(point)[config]
    return speedup / best_found(point)


def nearest(point, family_points, k: int) -> list:
    """The ``k`` studied shapes of the family nearest ``point`` in (log rows, log N), ``point`` left out."""
    def distance(q):
        return math.hypot(math.log(q.rows / point.rows), math.log(q.cols / point.cols))
    return sorted((q for q in family_points if q is not point and not q.probe), key=distance)[:k]


def rule_ratio(rules, point) -> float | None:
    """What the file's rule reaches at ``point`` over its best found (the default where no config applies); None
    where the rule's config was not timed there."""
    rule = _rule_for(rules, point)
    if rule is None or rule.config is None:
        return 1 / best_found(point)
    speedup = interleaved_ratios(point).get(rule.config)
    return None if speedup is None else speedup / best_found(point)


def same_kernel(point, config) -> bool:
    """Whether Inductor's autotuner could time ``config`` beside its default at ``point``: one generated kernel
    (persistent or looped, and a fused mix-order kernel's split) takes configs of its own kind only."""
    default = point.inductor_default
    return (default.startswith("persistent" if config.persistent else "looped")
            and config.RSPLIT_SIZE == split_of(default))


def fastest(point, chosen: list) -> float | None:
    """The speedup Inductor's autotuner reaches at ``point`` among ``chosen`` (one kind of kernel, the first's),
    with its default where the kernel it generates there is of that kind; None where none of them was timed."""
    ratios = interleaved_ratios(point)
    timed = [ratios[c] for c in chosen if c in ratios] + ([1.0] if same_kernel(point, chosen[0]) else [])
    return max(timed) if timed else None


def set_score(chosen: list, others) -> float:
    """Mean log ratio to the best found over ``others`` where ``chosen`` reaches a timed speedup."""
    logs = [math.log(f / best_found(q)) for q in others if (f := fastest(q, chosen)) is not None]
    return sum(logs) / len(logs) if logs else -math.inf


def keeps_default(chosen: list, others) -> bool:
    """Whether ``chosen`` is slower than the default beyond 2 % at none of ``others`` where it was timed."""
    return all(f >= 1 - MAX_LOSS for q in others if (f := fastest(q, chosen)) is not None)


def autotuned(point, others, k: int, safe: bool = False) -> list:
    """Up to ``k`` configs of one kind of kernel (persistent or looped, one split) that a rule would force the kind
    of and let Inductor's own autotuner pick among, with its default where that kind is its own: chosen one at a
    time, over ``others``, for the best geometric mean of the fastest; [] where the default alone does better.
    ``safe``: only sets no slower than the default beyond 2 % at any of ``others``."""
    chosen: list = []
    for _ in range(k):
        left = [c for c in candidates(point, others) if c not in chosen
                and (not chosen or (c.persistent, c.RSPLIT_SIZE) == (chosen[0].persistent, chosen[0].RSPLIT_SIZE))
                and (not safe or keeps_default([*chosen, c], others))]
        if not left:
            break
        chosen.append(max(left, key=lambda c: set_score([*chosen, c], others)))
    return chosen if chosen and set_score(chosen, others) > default_score(others) else []


def autotuned_ratio(point, others, k: int, safe: bool = False) -> float:
    """What the set chosen without ``point`` reaches at ``point``, over its best found."""
    chosen = autotuned(point, others, k, safe)
    return (fastest(point, chosen) if chosen else 1.0) / best_found(point)


def split_of(default: str) -> int | None:
    split = re.search(r"split=(\d+)", default)
    return int(split.group(1)) if split else None


def with_default(point, chosen: list) -> float:
    """The speedup Inductor's autotuner reaches at ``point`` timing ``chosen`` of either kind (persistent, looped)
    beside its default; a config of another split than the default's is another kernel, not timed."""
    ratios, split = interleaved_ratios(point), split_of(point.inductor_default)
    return max([1.0] + [ratios[c] for c in chosen if c in ratios and c.RSPLIT_SIZE == split])


def multi_kernel(point, others, k: int) -> list:
    """Up to ``k`` configs chosen one at a time over ``others`` for the best geometric mean of ``with_default``;
    each must add to it."""
    chosen: list = []

    def score(configs):
        return sum(math.log(with_default(q, configs) / best_found(q)) for q in others)

    for _ in range(k):
        left = [c for c in candidates(point, others) if c not in chosen]
        best = max(left, key=lambda c: score([*chosen, c]), default=None)
        if best is None or score([*chosen, best]) <= score(chosen):
            break
        chosen.append(best)
    return chosen


def group_key(point, by_rows: bool) -> tuple:
    return (*point.family, point.r_pow2) + ((point.x_pow2,) if by_rows else ())


def sampled(points, n: int, seed: int) -> set[int]:
    """Indices of the ``n`` studied shapes that `experiments/fit_loo.py` refits with the same ``seed``."""
    return set(fit_loo.sample(points, n, seed))


def score_all(points, rules=None, k: int = 4, only: set[int] | None = None) -> list[dict]:
    """One row per studied shape with a timed config (of ``only``, indices into ``points``, where given): its family
    and the ratio each scheme reaches there."""
    groups = {by_rows: collections.defaultdict(list) for by_rows in (False, True)}
    by_family = collections.defaultdict(list)
    for p in points:
        by_family[p.family].append(p)
        for by_rows, into in groups.items():
            into[group_key(p, by_rows)].append(p)
    rows = []
    for i, p in enumerate(points):
        if p.probe or not interleaved_ratios(p) or (only is not None and i not in only):
            continue
        row = {"kernel": p.kernel, "kind": p.kind, "shape": f"{p.rows}x{p.cols}", "dtype": p.dtype,
               "best_found": round(best_found(p), 4), "default": 1 / best_found(p)}
        for by_rows, label, tuned in ((False, "group", "autotuned"), (True, "group+rows", "group+rows autotuned")):
            others = [q for q in groups[by_rows][group_key(p, by_rows)] if q is not p]
            row[f"{label} LOO"] = loo_ratio(p, others, safe=False)
            row[f"{label} LOO, safe"] = loo_ratio(p, others, safe=True)
            for n in AUTOTUNED:
                row[f"{tuned} {n}"] = autotuned_ratio(p, others, n)
                row[f"{tuned} {n}, safe"] = autotuned_ratio(p, others, n, safe=True)
            for n in MULTI_KERNEL:
                row[f"{label} multi-kernel {n}"] = with_default(p, multi_kernel(p, others, n)) / best_found(p)
            if not by_rows:
                row["candidates' best"] = with_default(p, candidates(p, others)) / best_found(p)
        row[f"nearest {k}, safe"] = loo_ratio(p, nearest(p, by_family[p.family], k), safe=True)
        if rules is not None:
            row["rules"] = rule_ratio(rules, p)
        rows.append(row)
    return rows


AUTOTUNED = (2, 3)
MULTI_KERNEL = (1, 3)
SCHEMES = ("default", "group LOO", "group LOO, safe", "group+rows LOO", "group+rows LOO, safe", "nearest 4, safe",
           *(f"{label} {n}{safe}" for label in ("autotuned", "group+rows autotuned") for n in AUTOTUNED
             for safe in ("", ", safe")),
           *(f"{label} multi-kernel {n}" for label in ("group", "group+rows") for n in MULTI_KERNEL),
           "candidates' best", "rules")


def geomean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def summary(rows) -> list[str]:
    """One line per scheme: over all shapes and per kind of kernel, the geometric mean of the ratio to the best found
    and, after the slash, how many shapes it leaves slower than 0.98x Inductor's default (``rules``: over the shapes
    where the file's choice was timed, their count in parentheses where fewer)."""
    keyed = collections.defaultdict(list)
    for row in rows:
        keyed["all"].append(row)
        keyed[row["kind"]].append(row)
    columns = ["all"] + sorted(k for k in keyed if k != "all")
    lines = [f"{'':<26}" + "".join(f"{c:>20}" for c in columns),
             f"{'shapes':<26}" + "".join(f"{len(keyed[c]):>20}" for c in columns)]
    for scheme in (s for s in SCHEMES if any(s in row for row in rows)):
        cells = []
        for column in columns:
            values = [(r[scheme], r["best_found"]) for r in keyed[column] if r.get(scheme) is not None]
            losses = sum(v * b < 1 - MAX_LOSS for v, b in values)
            cells.append(f"{geomean(v for v, _ in values):.3f}/{losses}"
                         + (f" ({len(values)})" if len(values) < len(keyed[column]) else ""))
        lines.append(f"{scheme:<26}" + "".join(f"{c:>20}" for c in cells))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fit_list", help="a fit list: two header lines, then one database per line")
    parser.add_argument("--gpu", default="H200")
    parser.add_argument("--candidates-from", help="the GPU whose studies frame this GPU's crossmeasure records "
                        "(as distill --candidates-from)")
    parser.add_argument("--rules", help="a heuristic file to score at the same shapes")
    parser.add_argument("--csv", help="write one row per shape here")
    parser.add_argument("--sample", type=int, help="score only this many studied shapes, the ones "
                        "experiments/fit_loo.py refits with the same --sample and --seed")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    points = fit_loo.load(args.fit_list, args.gpu, args.candidates_from)
    rules = list(load(args.rules).rules) if args.rules else None
    rows = score_all(points, rules, only=sampled(points, args.sample, args.seed) if args.sample else None)
    sys.stdout.write("\n".join(summary(rows)) + "\n")
    if args.csv:
        pandas.DataFrame(rows).to_csv(args.csv, index=False, float_format="%.4f")


if __name__ == "__main__":
    main()
