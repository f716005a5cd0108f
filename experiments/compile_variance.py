"""Inductor's compile-to-compile variance in `validate` records: two compiles of Inductor's default timed in the same
interleaved rounds, first / second, by the default's time, and where the two compiles' own configs differ.

Two kinds of record hold two compiles of the default: a validation of a file without rules
(experiments/candidates/h200-control.yaml, whose "heuristics" variant is Inductor's own program), and, since stop 59,
every problem the rules touched ("inductor_default_again").  For the latter it also says which problems a verdict
against the first compile alone would have called slower beyond noise, and which against each compile
(`validate.slower_beyond_noise`, the gate's test).

Usage: python3 experiments/compile_variance.py db/noise-calibration-5900.sqlite [db/heldout52.sqlite ...]
"""

import json
import sqlite3
import statistics
import sys

from inductor_tune.stats import NOISE_FLOOR, geomean
from inductor_tune.validate import DEFAULT, DEFAULT_AGAIN, HEURISTICS, _configs, slower_beyond_noise

BUCKETS_US = ((0, 10), (10, 30), (30, 100), (100, float("inf")))


def pairs(result_rows):
    """(label, default us, first / second, configs differ, verdicts) per record with two default compiles;
    verdicts is None for a control record, else (slower than the first, slower than the second)."""
    out = []
    for kernel, rows, cols, result_json in result_rows:
        result = json.loads(result_json)
        times = result.get("times", {})
        if DEFAULT_AGAIN in times:
            second, choice = times[DEFAULT_AGAIN], result.get("default_again_choice")
            # No rules' times where their result was wrong (a failure, not a verdict).
            verdicts = (slower_beyond_noise(times[DEFAULT], times[HEURISTICS]),
                        slower_beyond_noise(second, times[HEURISTICS])) if HEURISTICS in times else None
        elif HEURISTICS in times and not (result.get("timed_rules_applied") or result.get("rules_applied")):
            second, choice, verdicts = times[HEURISTICS], result.get("heuristic_choice"), None
        else:
            continue
        first = statistics.median(times[DEFAULT])
        # An empty choice: the second compile reused the first's autotuned kernels (variants.DEFAULT_AGAIN).
        differ = None if not choice else _configs(result.get("default_choice") or []) != _configs(choice)
        out.append((f"{kernel} {rows}x{cols}", first * 1e3, first / statistics.median(second), differ, verdicts))
    return out


def report(found):
    lines = []
    for lo, hi in BUCKETS_US:
        ratios = [p[2] for p in found if lo <= p[1] < hi]
        if ratios:
            beyond = sum(abs(r - 1) > NOISE_FLOOR for r in ratios)
            lines.append(f"default {lo}-{hi} us: {len(ratios)} problems, first/second geomean {geomean(ratios):.3f}, "
                         f"range {min(ratios):.3f}-{max(ratios):.3f}, {beyond} beyond the {NOISE_FLOOR:.1%} floor")
    if found:
        differ = [p for p in found if p[3]]
        reused = sum(1 for p in found if p[3] is None)
        lines.append(f"own configs differ between the two compiles at {len(differ)} of {len(found)} ({reused} "
                     f"reused the first compile's autotuned kernels); of the "
                     f"{sum(abs(p[2] - 1) > NOISE_FLOOR for p in found)} beyond the floor, "
                     f"{sum(abs(p[2] - 1) > NOISE_FLOOR for p in differ)} differ")
    for label, us, ratio, differ, verdicts in found:
        if verdicts and any(verdicts):
            lines.append(f"  {label}: {us:.1f} us, first/second {ratio:.3f}; rules slower beyond noise than the "
                         f"first compile: {verdicts[0]}, than the second: {verdicts[1]}")
    return lines


def main(argv):
    for path in argv:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            rows = db.execute("select kernel, rows, cols, result_json from it_validation").fetchall()
        print(path)
        print("\n".join(report(pairs(rows))))


if __name__ == "__main__":
    main(sys.argv[1:])
