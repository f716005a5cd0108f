"""Why no rule applied at the best-found samples of held-out sets: a diagnostic that no fit reads.

For each problem of `validate --suite ... --db <best-found studies>` records where the rules left Inductor's default,
this takes the kernels `validate` recorded (`slots`, with the reduction hint of Inductor's own compile, as
`gap_rules.py` reads them) and asks which of a rule's conditions first turned every rule of the heuristic file away
from the largest of them, in this order: the kernel's reductions and envelope (no rule was measured on such a
kernel), the rule family, element size and size group (next_pow2 of rows and N), the measured spans of rows and N,
N's alignment class or the odd hull, and last the rule's action (its evidence kept Inductor's default). Problems that
Inductor split into two kernels (fewer than 2 x SMs rows at N over 8192, so the slots have other sizes than the
problem) are counted apart, against the file's unsplit spans. Each class reports its count, its geomean of rules /
best found, its share of the log gap to the best found, and at how many of its problems Inductor's own two compiles
(the default's and the untouched rules') launched different configs, so that the ratio is one draw of Inductor's own
pick (`bestfound_table.py`). `gap_rules.py` prints, per kernel, the rule that covers it and why it kept the default.

Usage: python3 experiments/coverage_misses.py HEURISTICS.yaml VALIDATION.sqlite [...] [-- HEURISTICS.yaml DB ...]
"""

import json
import math
import sys
from collections import defaultdict

import bestfound_table
import gap_rules

from inductor_tune import heuristics
from inductor_tune.runtime import torch_rules
from inductor_tune.runtime.launch import KernelSlot
from inductor_tune.shapes import ELEMENT_SIZES
from inductor_tune.validate import HEURISTICS

SPLIT_ROWS, SPLIT_MIN_N = 264, 8192  # Inductor splits an inner reduction of fewer outputs than 2 x SMs (132 SMs)


def _main_slot(slots):
    # The kernel that moves the most: where Inductor fused the problem into several, the rules' gain is there.
    return max(slots, key=lambda s: s.xnumel * s.rnumel)


def miss_reason(heur, slot: KernelSlot, hint, dtype: str, rows: int, cols: int) -> str:
    """The first of a rule's conditions that every rule of ``heur`` fails for this kernel (``hint``: Inductor's
    reduction hint for it, e.g. "INNER"; None where its compile did not record one)."""
    if rows < SPLIT_ROWS and cols > SPLIT_MIN_N and (slot.xnumel, slot.rnumel) != (rows, cols):
        inside = any(torch_rules.within(tuple(u.rows), rows) and torch_rules.within(tuple(u.cols), cols)
                     for u in heur.unsplit)
        return f"split by Inductor, {'inside' if inside else 'outside'} the unsplit spans"
    if hint is None and not slot.mix_order:
        return "Inductor's reduction hint not recorded"
    xnumel, rnumel = slot.xnumel, slot.rnumel
    r2, x2 = torch_rules.next_pow2(rnumel), torch_rules.next_pow2(xnumel)
    kind = torch_rules.kernel_kind(hint or "", r2, slot.mix_order)
    signature = torch_rules.kernel_signature(slot.reductions.split("+"), slot.backward) if slot.reductions else None
    rules = [r for r in heur.rules if (not r.envelopes or slot.envelope in r.envelopes)
             and (r.reductions is None or r.reductions == signature)]
    if not rules:
        return "no rule measured on this kernel"
    rules = [r for r in rules if r.kind == kind and r.element_size == ELEMENT_SIZES.get(dtype)
             and r.rnumel[0] <= r2 <= r.rnumel[1] and r.xnumel[0] <= x2 <= r.xnumel[1]]
    if not rules:
        return "this kernel's size group not studied"
    rules = [r for r in rules if torch_rules.within(r.rows, xnumel) and torch_rules.within(r.cols, rnumel)]
    if not rules:
        return "outside the measured rows or N"
    rules = [r for r in rules if torch_rules.within_aligned(r.aligned_cols, rnumel)
             and torch_rules.within_odd_hull(r.odd_hull, xnumel, rnumel)]
    if not rules:
        return "outside N's alignment class span or the odd hull"
    return "evidence kept Inductor's default" if rules[0].config is None else "a config rule matched"


def classify(pairs):
    """(reason, whether Inductor's two compiles picked different configs, problem, rules / best found) per untouched
    problem, and the touched ones as one class."""
    out = []
    for heur_path, db_paths in pairs:
        heur = heuristics.load(heur_path)
        for path in db_paths:
            picked = bestfound_table.picks(path)
            for row, rec in gap_rules.rows_with_records(path):
                if not (row.best_found() and row.variant(HEURISTICS)):
                    continue
                ratio = bestfound_table._vs_best(row)
                if row.heuristics_applied:
                    out.append(("rules applied", False, row, ratio))
                    continue
                result = json.loads(rec.result_json)
                slots = [KernelSlot(**s) for s in result.get("slots") or [] if s["rnumel"] > 1]
                hints = heuristics.slot_hints(slots, json.dumps(result.get("default_choice") or []))
                main = _main_slot(slots) if slots else None
                reason = (miss_reason(heur, main, hints.get(main.key), rec.dtype, rec.rows, rec.cols) if main
                          else "no kernel recorded")
                out.append((reason, bool(picked.get((row.kernel, row.shape, row.dtype))), row, ratio))
    return out


def main(argv):
    pairs, current = [], None
    for arg in argv:
        if arg == "--":
            current = None
        elif current is None:
            current = (arg, [])
            pairs.append(current)
        else:
            current[1].append(arg)
    found = classify(pairs)
    if not found:
        raise SystemExit("no best-found validation records")
    total = sum(-math.log(r) for *_, r in found)
    by_reason = defaultdict(list)
    for reason, differed, row, ratio in found:
        by_reason[reason].append((row, ratio, differed))
    print(f"{len(found)} problems, rules / best found geomean {math.exp(-total / len(found)):.3f}")
    print("| why | problems | rules / best found | share of the log gap | Inductor's picks differed | worst |")
    print("| --- | --- | --- | --- | --- | --- |")
    for reason, items in sorted(by_reason.items(), key=lambda kv: sum(math.log(item[1]) for item in kv[1])):
        gap = sum(-math.log(item[1]) for item in items)
        row, worst, _ = min(items, key=lambda item: item[1])
        differed = [item for item in items if item[2]]
        differed_gap = sum(-math.log(item[1]) for item in differed)
        print(f"| {reason} | {len(items)} | {math.exp(-gap / len(items)):.3f} | {gap / total:.0%} | "
              f"{len(differed)} ({differed_gap / total:.0%} of the gap) | {row.kernel} {row.shape} {worst:.3f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
