"""What a refit changes: the config rules two heuristic files launch differently, and the validated problems where
each file would force a config (a diagnostic; no fit reads it).

    python3 experiments/rule_diff.py OLD.yaml NEW.yaml [VALIDATION.sqlite ...]

Rules are paired on their key (kind, reductions, the next_pow2 ranges of N and rows, element size, envelopes). For a
pair whose launch differs, it prints both configs and the first clause of NEW's evidence note (why NEW holds a config
back). For each validation database (`validate --draw` or `--suite` records, which keep every problem's kernels and
Inductor's reduction hints), it asks of each problem whether the compile under each file would force a config on any
of its kernels, as `validate` decides it (`heuristics.trial_config`), and lists the problems where only one would,
with the ratio to the default that the database measured for the file it validated. Inductor's end-to-end split
entries (`mix_autotune`) are left out: both files' entries are printed when they differ.
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter

import gap_rules

from inductor_tune import heuristics
from inductor_tune.validate import HEURISTICS


def _key(rule):
    return (rule.kind, rule.reductions, rule.rnumel, rule.xnumel, rule.element_size, rule.envelopes)


def _describe(config) -> str:
    return "Inductor's default" if config is None else str(config).replace("SlotConfig", "")


def rule_changes(old, new) -> list[str]:
    """One line per rule key whose config differs, and a count of keys only one file has."""
    old_rules, new_rules = {_key(r): r for r in old.rules}, {_key(r): r for r in new.rules}
    both, only_old, only_new = (len(old_rules.keys() & new_rules.keys()), len(old_rules.keys() - new_rules.keys()),
                                len(new_rules.keys() - old_rules.keys()))
    lines = [f"rules: {len(old.rules)} -> {len(new.rules)}; with a config: "
             f"{sum(r.config is not None for r in old.rules)} -> {sum(r.config is not None for r in new.rules)}; "
             f"keys in both {both}, only OLD {only_old}, only NEW {only_new}"]
    for key in sorted(old_rules.keys() & new_rules.keys(), key=repr):
        before, after = old_rules[key], new_rules[key]
        if before.config == after.config:
            continue
        why = (after.evidence.note or "").split(": ", 1)[0] if after.config is None else "adopted"
        lines.append(f"{key[0]} {key[1]} N {key[2][0]}..{key[2][1]} rows {key[3][0]}..{key[3][1]}: "
                     f"{_describe(before.config)} -> {_describe(after.config)} ({why})")
    if old.mix_autotune != new.mix_autotune:
        lines.append(f"end-to-end split entries differ: {old.mix_autotune} -> {new.mix_autotune}")
    return lines


def forcing(heur, rec) -> bool:
    """Whether the compile of this validated problem under ``heur`` forces a config on any of its kernels."""
    slots, hints = gap_rules.record_slots(rec)
    return heuristics.trial_config(heur, slots, rec.dtype, hints) != heuristics.INDUCTOR_DEFAULT


def problem_changes(old, new, path: str) -> list[str]:
    counts, only = Counter(), []
    for row, rec in gap_rules.rows_with_records(path):
        pair = (forcing(old, rec), forcing(new, rec))
        counts[pair] += 1
        if pair[0] != pair[1]:
            measured = row.variant(HEURISTICS)
            ratio = f"{measured.ratio_to_default:.3f}" if measured and row.heuristics_applied else "default kept"
            only.append(f"  only {'OLD' if pair[0] else 'NEW'}: {row.kernel} {row.shape} {row.dtype} "
                        f"(measured with the validated file: {ratio})")
    head = (f"{path}: {sum(counts.values())} problems; a config forced by both {counts[True, True]}, "
            f"only OLD {counts[True, False]}, only NEW {counts[False, True]}, neither {counts[False, False]}")
    return [head, *only]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("validations", nargs="*")
    args = parser.parse_args(argv)
    try:
        old, new = heuristics.load(args.old), heuristics.load(args.new)
    except heuristics.HeuristicsError as exc:
        print(f"rule_diff.py: error: {exc}", file=sys.stderr)
        return 2
    print(f"OLD {args.old} ({old.digest()[:8]}), NEW {args.new} ({new.digest()[:8]})")
    print("\n".join(rule_changes(old, new)))
    for path in args.validations:
        print("\n".join(problem_changes(old, new, path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
