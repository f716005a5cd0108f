"""Why a heuristic file keeps Inductor's default where a best-found study beat it: one row per kernel slot.

Reads `validate --suite ... --db <best-found studies>` records and, at each problem where no rule applied and the
best found ran at least ``--min-gain`` times the default, looks up every reduction kernel of the problem in the
given heuristic file (as `validate` does: `heuristics.rule_for_slot`, with the reduction hint of Inductor's own
compile). It prints the rule that covers the kernel and the reason its evidence gives for keeping the default, or
says that no rule covers it. A problem's gap is the step a launch rule would have to take there; the reason says
what kept the fit from taking it (no config won at every shape of its group, a span round that found a loss, a row
or N span the evidence did not reach).

Usage: python3 experiments/gap_rules.py HEURISTICS.yaml VALIDATION.sqlite [...] [--min-gain 1.1]
"""

import argparse
import json

from inductor_tune import figdata, heuristics
from inductor_tune.runtime.launch import KernelSlot
from inductor_tune.validate import HEURISTICS


def rows_with_records(path):
    """(validation row, its record) of the latest record of every problem in one validation database."""
    # Oldest first, so the latest record of a problem is the one kept, as validation_rows keeps it.
    records = {(rec.kernel, f"{rec.rows}x{rec.cols}", rec.dtype): rec for rec in figdata.validation_records(path)}
    return [(row, records[(row.kernel, row.shape, row.dtype)]) for row in figdata.validation_rows(path)]


def gap_problems(db_paths, min_gain):
    """(row, record) of each latest problem where no rule applied and the best found beat the default by ``min_gain``
    (one heuristic file per database, as `validate --storage` writes them)."""
    out = [(row, rec) for path in db_paths for row, rec in rows_with_records(path)
           if row.best_found() and row.variant(HEURISTICS) and not row.heuristics_applied
           and row.best_found().ratio_to_default >= min_gain]
    return sorted(out, key=lambda pair: -pair[0].best_found().ratio_to_default)


def record_slots(rec):
    """(the kernels one validation record compiled, Inductor's reduction hint of each by slot key)."""
    result = json.loads(rec.result_json)
    slots = [KernelSlot(**s) for s in result.get("slots") or []]
    return slots, heuristics.slot_hints(slots, json.dumps(result.get("default_choice") or []))


def slot_rules(heur, rec):
    """(slot, Inductor's reduction hint, rule or None) for every reduction kernel of one validation record."""
    slots, hints = record_slots(rec)
    return [(slot, hints.get(slot.key), heuristics.rule_for_slot(heur, slot, rec.dtype, hints.get(slot.key)))
            for slot in slots]


def reason(slot, hint, rule) -> str:
    if rule is None and hint is None and not slot.mix_order:
        return "Inductor's reduction hint for this kernel was not recorded, so no rule can be looked up"
    if rule is None:
        return "no rule covers this kernel (its kind, reductions, what it reads and writes, rows and N)"
    note = " ".join(rule.evidence.note.split())
    return f"{rule.describe()} rows {rule.rows} N {rule.cols}: {note[:240]}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("heuristics")
    parser.add_argument("databases", nargs="+")
    parser.add_argument("--min-gain", type=float, default=1.1)
    args = parser.parse_args(argv)
    heur = heuristics.load(args.heuristics)
    print(f"heuristics {heur.digest()[:8]}: problems with no rule applied and best found >= {args.min_gain:g}x default")
    for row, rec in gap_problems(args.databases, args.min_gain):
        print(f"\n{row.kernel} {row.shape}: best found {row.best_found().ratio_to_default:.3f}x default")
        for slot, hint, rule in slot_rules(heur, rec):
            print(f"  {slot.key} ({slot.reductions or '?'}): {reason(slot, hint, rule)}")


if __name__ == "__main__":
    main()
