"""A candidate file: a shipped file plus split-autotune entries where the up-only probe was timed (docs/rules.md, stop 38).

One entry per fused kernel (reduction signature and envelope) that `validate experiments/mixtune/probe-up-m5.yaml` touched
on the training suites, over the rows and N that kernel was timed at, with the probe's bounds (from split 16, up from
Inductor's own split only, 5 % margin). The evidence is the probe's own ratios to Inductor's default there. A kernel
with a problem that lost beyond `validate`'s 1.5 % floor in every round gets no entry. Nothing of a held-out draw is read.

Usage: python3 experiments/mixtune/candidate.py BASE.yaml PROBE.yaml OUT.yaml VALIDATION.sqlite [...]
"""

import collections
import dataclasses
import json
import math
import sqlite3
import statistics
import sys

from inductor_tune import heuristics
from inductor_tune.runtime import torch_rules
from inductor_tune.runtime.rules import Evidence


def touched(paths):
    """(signature, envelope) -> [(kernel, rows, cols, ratio of medians, highest round ratio)] of the probe's records."""
    out = collections.defaultdict(list)
    for path in paths:
        # Read-only: a mistyped path is an error, not a new empty database.
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            for kernel, rows, cols, result in db.execute("select kernel, rows, cols, result_json from it_validation"):
                data = json.loads(result)
                if not data.get("rules_applied"):
                    continue
                times = data["times"]
                default, rules = times["inductor_default"], times["heuristics"]
                ratio = statistics.median(default) / statistics.median(rules)
                highest = max(d / h for d, h in zip(default, rules))
                for slot in data["slots"]:
                    if slot.get("mix_order"):
                        key = (torch_rules.kernel_signature(slot["reductions"].split("+"), slot["backward"]),
                               slot["envelope"])
                        out[key].append((kernel, rows, cols, ratio, highest))
    return out


NOISE_FLOOR = 0.015  # validate's floor: a problem slower than this in every round lost


def entries(probe, groups):
    out = []
    for (signature, envelope), points in sorted(groups.items()):
        lost = [f"{k} {r}x{n}" for k, r, n, _, highest in points if highest < 1 - NOISE_FLOOR]
        if lost:
            print(f"no entry for {signature} {envelope}: lost at {', '.join(lost)}")
            continue
        ratios = [p[3] for p in points]
        shapes = tuple(f"{k} {r}x{n} bf16" for k, r, n, _, _ in sorted(points))
        evidence = Evidence(
            shapes=shapes, measured=shapes, gain_geomean=round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 4),
            gain_min=round(min(ratios), 4), gain_max=round(max(ratios), 4),
            note="validate experiments/mixtune/probe-up-m5.yaml at training shapes (stop 38): no loss beyond noise")
        out.append(dataclasses.replace(
            probe, rows=(min(p[1] for p in points), max(p[1] for p in points)),
            cols=(min(p[2] for p in points), max(p[2] for p in points)), kernels=((signature, envelope),),
            evidence=evidence))
    return tuple(out)


def main(argv):
    base_path, probe_path, out_path, *databases = argv
    base, (probe,) = heuristics.load(base_path), heuristics.load(probe_path).mix_autotune
    provenance = dict(base.provenance)
    provenance["databases"] = list(provenance.get("databases", [])) + list(databases)
    candidate = dataclasses.replace(base, mix_autotune=entries(probe, touched(databases)), provenance=provenance)
    heuristics.dump(candidate, out_path)
    print(f"{out_path}: {candidate.digest()}, {len(candidate.mix_autotune)} split-autotune entries")


if __name__ == "__main__":
    main(sys.argv[1:])
