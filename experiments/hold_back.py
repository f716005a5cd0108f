"""A candidate without the config rules whose loss at a spent held-out set was confirmed in fresh rounds.

A held-out set that failed a candidate is spent: it scores nothing more, and what it showed may inform the next
candidate, which a fresh set then scores. This writes that candidate: each config rule that applied at a problem
`validate` re-timed in fresh rounds and called regressed (every round slower, beyond the noise band) keeps
Inductor's default, with the note saying where it lost. A problem that regressed in the set's three rounds but
not in the fresh ones names no rule: that is the noise floor, not a loss (docs/rules.md, stop 39).

A loss of an earlier candidate carries over to a refit (``FRESH-ROUNDS.sqlite@DIGEST``: the records of the file with
that digest): a config rule of the base that matches what applied there, by kind, reductions, rnumel, rows, N and
launch config, is held back too.

Usage: python3 experiments/hold_back.py BASE.yaml OUT.yaml FRESH-ROUNDS.sqlite[@DIGEST] [...]
"""

import dataclasses
import json
import sqlite3
import statistics
import sys

from inductor_tune import heuristics
from inductor_tune.runtime import registry
from inductor_tune.settle import settle_rules
from inductor_tune.validate import rules_on_timed_graph


def confirmed_losses(path, digest):
    """Each regressed record of the file ``digest`` in the database ``path``: (kernel, rows, cols, ratio of the
    medians, the applied rules' descriptions, the kernels' slots, the database)."""
    out = []
    with sqlite3.connect(path) as db:
        for kernel, rows, cols, result in db.execute(
                "select kernel, rows, cols, result_json from it_validation where regressed and heuristics_digest "
                "like ?", (digest[:8] + "%",)):
            data = json.loads(result)
            times = data["times"]
            ratio = statistics.median(times["inductor_default"]) / statistics.median(times["heuristics"])
            out.append((kernel, rows, cols, ratio, rules_on_timed_graph(data), data["slots"], path))
    return out


def rule_index(rules, applied: str, slots) -> int:
    """The index of the one config rule ``applied`` (``torch_rules.describe_rule`` and its kernel) names."""
    head, _, kernel = applied.removesuffix(registry.BACKWARD_GRAPH_NOTE).partition(" -> ")
    kind, reductions, _, span = head.split(" ")[:4]
    lo, hi = (int(v) for v in span.split(".."))
    xnumel, rnumel = (int(part[2:]) for part in kernel.split(" "))
    launch = dict(field.split("=") for field in head[head.index("(") + 1:head.rindex(")")].split(", "))
    found = [i for i, r in enumerate(rules)
             if r.config is not None and r.kind == kind and r.reductions == reductions and tuple(r.rnumel) == (lo, hi)
             and r.rows[0] <= xnumel <= r.rows[1] and r.cols[0] <= rnumel <= r.cols[1]
             and all(str(getattr(r.config, name)) == value for name, value in launch.items())]
    if len(found) > 1:
        # The slots' envelopes come from the tuner's own compile of the kernel, which may fuse otherwise than the
        # one the rule applied in (stop 40: prenorm_rmsnorm_bwd 9x2907); they only break a tie.
        envelopes = {s["envelope"] for s in slots if s["xnumel"] == xnumel and s["rnumel"] == rnumel}
        found = [i for i in found if not rules[i].envelopes or envelopes & set(rules[i].envelopes)]
    if len(found) != 1:
        sys.exit(f"hold_back: error: {applied!r} names {len(found)} config rules of the base file, not one")
    return found[0]


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    base_path, out_path, *specs = argv
    base = heuristics.load(base_path)
    reasons, losses, paths = {}, [], []
    for spec in specs:
        path, _, digest = spec.partition("@")
        paths.append(path)
        losses += confirmed_losses(path, digest or base.digest())
    for kernel, rows, cols, ratio, applied, slots, path in losses:
        for text in applied:
            reasons[rule_index(base.rules, text, slots)] = (
                f"it lost beyond noise at {kernel} {rows}x{cols} bf16, a problem of a spent held-out set, in fresh "
                f"rounds too ({ratio:.3f} in {path})")
    provenance = dict(base.provenance)
    provenance["databases"] = list(provenance.get("databases", [])) + [p for p in paths if p not in provenance.get(
        "databases", [])]
    candidate = dataclasses.replace(base, rules=tuple(settle_rules(base.rules, reasons)), provenance=provenance)
    heuristics.dump(candidate, out_path)
    print(f"{out_path}: {candidate.digest()}, {len(reasons)} config rule(s) held back")


if __name__ == "__main__":
    main(sys.argv[1:])
