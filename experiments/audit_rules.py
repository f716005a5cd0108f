"""Which config rules of a heuristic file lose to Inductor's default, beyond noise, at shapes of a fit list's evidence
that they cover: a shipped file checked again against evidence timed after its fit (a diagnostic; no fit reads it).

    python3 experiments/audit_rules.py HEURISTICS.yaml FIT_LIST --gpu H100 [--candidates-from H200]

Every shape of the list's evidence (studies and probes, as `distill` loads them) is matched to the rule the runtime
would apply to its kernel (`Heuristics.lookup`: kind, element size, signature, envelope, the pow2 buckets, the
measured rows and N, N's alignment class and the odd hull). Where that rule forces a config, the config's ratio to
the default there is read: it fails the audit where it is slower than the default beyond the shape's noise (at
most 2 %, as `distill` excuses) or failed to compile or run. A config the shape never timed is counted apart: the
audit cannot say. Exit status 1 where a rule fails, so that a script can stop a file from shipping.

With `--withdraw OUT.yaml --why TEXT`, it also writes the file with each failing rule's config withdrawn: the rule
keeps Inductor's default, its evidence note says which shapes it lost at, and the provenance records the
withdrawal beside earlier ones. Every other rule is kept, so at any kernel the new file launches what the old one
did or Inductor's own config.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import sys

import fit_loo

from inductor_tune import heuristics
from inductor_tune.evidence import DistillError
from inductor_tune.fitparams import FitParams, probe_loss


def audit(heur, points, params: FitParams = FitParams()):
    """(failures: {rule index: [(point, ratio)]}, held: config rules' shapes that held, untimed: shapes a config
    rule covers where its config was not timed)."""
    failures, held, untimed = collections.defaultdict(list), 0, 0
    index = {id(rule): i for i, rule in enumerate(heur.rules)}
    for p in points:
        rule = heur.lookup(p.kind, p.element_size, p.slot.rnumel, p.slot.xnumel, p.reductions, p.envelope or None)
        if rule is None or rule.config is None:
            continue
        loss = probe_loss(p, rule.config, params)
        if loss is not None:
            failures[index[id(rule)]].append((p, loss))
        elif rule.config in p.speedups:
            held += 1
        else:
            untimed += 1
    return dict(failures), held, untimed


def withdraw(heur, failures, why: str):
    """``heur`` with the config of each rule in ``failures`` withdrawn (kept as Inductor's default)."""
    rules = list(heur.rules)
    for i, lost in failures.items():
        rule = rules[i]
        shapes = ", ".join(f"{p.label} {ratio:.3f}" for p, ratio in sorted(lost, key=lambda item: item[1]))
        note = f"{rule.config.describe()} withdrawn: slower than the default beyond noise at {shapes} ({why})"
        rules[i] = dataclasses.replace(rule, config=None, evidence=dataclasses.replace(rule.evidence, note=note))
    withdrawn = list(heur.provenance.get("withdrawn", [])) + [
        {"rules": [heur.rules[i].config.describe() for i in sorted(failures)], "why": why}]
    return dataclasses.replace(heur, rules=tuple(rules), provenance=dict(heur.provenance, withdrawn=withdrawn))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("heuristics")
    parser.add_argument("fit_list")
    parser.add_argument("--gpu", required=True)
    parser.add_argument("--candidates-from")
    parser.add_argument("--withdraw", metavar="OUT.yaml", help="write the file with the failing rules' configs withdrawn")
    parser.add_argument("--why", help="--withdraw: why (recorded in each rule's note and the provenance)")
    args = parser.parse_args(argv)
    if args.withdraw and not args.why:
        print("audit_rules.py: error: --withdraw needs --why", file=sys.stderr)
        return 2
    if args.withdraw and os.path.exists(args.withdraw) and os.path.samefile(args.withdraw, args.heuristics):
        print("audit_rules.py: error: --withdraw would write over the file it audits", file=sys.stderr)
        return 2
    try:
        heur = heuristics.load(args.heuristics)
    except heuristics.HeuristicsError as exc:
        print(f"audit_rules.py: error: {exc}", file=sys.stderr)
        return 2
    try:
        points = fit_loo.load(args.fit_list, args.gpu, args.candidates_from)
    except (OSError, DistillError) as exc:
        print(f"audit_rules.py: error: {exc}", file=sys.stderr)
        return 2
    failures, held, untimed = audit(heur, points)
    print(f"{args.heuristics} ({heur.digest()[:8]}) against {args.fit_list}: {len(points)} shapes; at the shapes its "
          f"config rules cover, {held} held, {sum(map(len, failures.values()))} lost beyond noise or failed, "
          f"{untimed} did not time the config")
    for i, lost in sorted(failures.items()):
        rule = heur.rules[i]
        print(f"rule {i}: {rule.kind} {rule.reductions} rows {rule.rows[0]}..{rule.rows[1]} N {rule.cols[0]}.."
              f"{rule.cols[1]} {rule.config.describe()}: "
              + ", ".join(f"{p.label} {ratio:.3f}" for p, ratio in sorted(lost, key=lambda item: item[1])))
    if args.withdraw:
        kept = withdraw(heur, failures, args.why)
        heuristics.dump(kept, args.withdraw)
        print(f"wrote {args.withdraw}: {len(failures)} config(s) withdrawn, digest {kept.digest()[:8]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
