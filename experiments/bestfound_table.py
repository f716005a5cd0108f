"""The rules against the per-shape best found, from `validate --suite ... --db <best-found studies>` records.

Prints one Markdown row per problem (rules applied or not, rules / default, best found / default, rules /
best found) and the geomean and worst of rules / best found. "Best found" is the study's best config
re-timed in the validation's own rounds; where the study found nothing better it is Inductor's default (1).
Usage: python3 experiments/bestfound_table.py db/bestfound7-validate-75d3df6d.sqlite [more validation DBs]
"""

import sys

from inductor_tune import figdata
from inductor_tune.stats import geomean
from inductor_tune.store import StoreError
from inductor_tune.validate import HEURISTICS


def rows(db_paths):
    """The latest record per problem as `validate` summarized it (``figdata.validation_rows``), worst first,
    and the digests of the heuristic files they validated."""
    out, digests = [], set()
    for path in db_paths:
        out += [r for r in figdata.validation_rows(path) if r.best_found() and r.variant(HEURISTICS)]
        digests |= {run.digest[:8] for run in figdata.validation_runs(path)}
    return sorted(out, key=_vs_best), digests


def _vs_best(row) -> float:
    # As `validate` reports it: the medians' ratio.
    return row.best_found().median_ms / row.variant(HEURISTICS).median_ms


def main(argv):
    try:
        table, digests = rows(argv)
    except StoreError as exc:
        raise SystemExit(f"bestfound_table: {exc}") from None
    if not table:
        raise SystemExit("no validation records in " + ", ".join(argv))
    print("| problem | rules | rules / default | best found / default | rules / best found |")
    print("| --- | --- | --- | --- | --- |")
    for r in table:
        print(f"| {r.kernel} {r.shape} | {'applied' if r.heuristics_applied else 'default kept'} | "
              f"{r.variant(HEURISTICS).ratio_to_default:.3f} | {r.best_found().ratio_to_default:.3f} | "
              f"{_vs_best(r):.3f} |")
    ratios = [_vs_best(r) for r in table]
    print(f"\n{len(table)} problems, heuristics {', '.join(sorted(digests))}: "
          f"rules / best found geomean {geomean(ratios):.3f}, worst {min(ratios):.3f}; "
          f"rules applied at {sum(r.heuristics_applied for r in table)}")


if __name__ == "__main__":
    main(sys.argv[1:])
