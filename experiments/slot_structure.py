"""Where the held-out problems and the gap to the best found lie, by the shape of what Inductor compiles.

Each validation record lists the reduction kernels Inductor's own compile made for the problem (its slots). A
problem is put in one class by them:

* ``one kernel``: a single inner reduction over the rows (``distill`` fits these from single-kernel studies);
* ``fused mix-order``: a backward fused into one mix-order kernel (fitted the same way);
* ``row kernel + column reductions``: a backward whose row kernel runs whole, with the weight (and bias) gradients
  as reductions of their own;
* ``split``: no kernel reduces whole rows; Inductor split the row reduction into partial sums and a combine (few
  rows at long N), with or without column reductions beside it.

``distill`` skips every study whose problem compiles to more than one reduction kernel, so the last two classes
get rules only where their row kernel happens to match one fitted on single-kernel studies.

For held-out draws (``validate --draw ...`` records) it prints, per class, how many problems there are and how
many a rule touched, with the touched geomean. For best-found validations (``validate --suite ... --db <studies>``)
it prints, per class, the geomean of rules / best found and the class's share of the pool's log gap; with
``--by-applied``, each class twice, where a rule applied and where none did: whether a class's gap is a rule that
picks a config short of the study's best, or no rule at all (stop 50: at sets 40-44's samples, one-kernel problems
reach 0.92-0.93 of their best found either way).

Usage: python3 experiments/slot_structure.py --heldout DB [DB ...] [--bestfound DB [DB ...]] [--by-applied]
"""

import argparse
import json
import math
from collections import defaultdict

from gap_rules import rows_with_records
from inductor_tune.validate import HEURISTICS

CLASSES = ("one kernel", "fused mix-order", "row kernel + column reductions", "split")
APPLIED = {True: "rule applied", False: "no rule applied"}


def structure(slots, rows: int, cols: int) -> str:
    """The class of one problem from its record's slots (dicts with xnumel, rnumel, mix_order)."""
    if any(s["mix_order"] for s in slots):
        return "fused mix-order"
    whole = any(s["xnumel"] == rows and s["rnumel"] == cols for s in slots)
    if not whole:
        return "split"
    return "one kernel" if len(slots) == 1 else "row kernel + column reductions"


def problems(db_paths):
    """(class, validation row) of the latest record of every problem in the databases."""
    return [(structure(json.loads(rec.result_json).get("slots") or [], rec.rows, rec.cols), row)
            for path in db_paths for row, rec in rows_with_records(path)]


def heldout_table(pairs) -> list[tuple]:
    """Per class: (class, problems, touched, geomean rules/default over the touched)."""
    by_class = defaultdict(list)
    for cls, row in pairs:
        by_class[cls].append(row)
    table = []
    for cls in CLASSES:
        rows = by_class.get(cls, [])
        touched = [r.variant(HEURISTICS).ratio_to_default for r in rows if r.heuristics_applied]
        geo = math.exp(sum(map(math.log, touched)) / len(touched)) if touched else None
        table.append((cls, len(rows), len(touched), geo))
    return table


def bestfound_table(pairs, by_applied: bool = False) -> list[tuple]:
    """Per class (with ``by_applied``, per class and whether a rule applied: "one kernel, rule applied"): (class,
    problems, geomean rules/best found, share of the pool's log gap)."""
    gaps = defaultdict(list)
    for cls, row in pairs:
        best = row.best_found()
        if best is None or row.variant(HEURISTICS) is None:
            continue
        key = f"{cls}, {APPLIED[row.heuristics_applied]}" if by_applied else cls
        gaps[key].append(math.log(row.variant(HEURISTICS).ratio_to_default / best.ratio_to_default))
    total = sum(sum(g) for g in gaps.values())
    keys = [f"{cls}, {APPLIED[a]}" for cls in CLASSES for a in (True, False)] if by_applied else CLASSES
    return [(key, len(gaps.get(key, [])), math.exp(sum(gaps[key]) / len(gaps[key])) if gaps.get(key) else None,
             sum(gaps.get(key, [])) / total if total else None) for key in keys]


def _fmt(value, spec):
    return "-" if value is None else format(value, spec)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heldout", nargs="*", default=[])
    parser.add_argument("--bestfound", nargs="*", default=[])
    parser.add_argument("--by-applied", action="store_true",
                        help="split each best-found class by whether a rule applied")
    args = parser.parse_args(argv)
    if args.heldout:
        print("| class | problems | touched | geomean touched |\n| --- | --- | --- | --- |")
        for cls, n, touched, geo in heldout_table(problems(args.heldout)):
            print(f"| {cls} | {n} | {touched} | {_fmt(geo, '.3f')} |")
    if args.bestfound:
        print("\n| class | best-found samples | rules / best found | share of the log gap |\n| --- | --- | --- | --- |")
        for cls, n, geo, share in bestfound_table(problems(args.bestfound), args.by_applied):
            print(f"| {cls} | {n} | {_fmt(geo, '.3f')} | {_fmt(share, '.0%')} |")


if __name__ == "__main__":
    main()
