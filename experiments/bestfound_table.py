"""The rules against the per-shape best found, from `validate --suite ... --db <best-found studies>` records.

Prints one Markdown row per problem (rules applied or not, rules / default, best found / default, rules /
best found) and the geomean and worst of rules / best found. "Best found" is the study's best config
re-timed in the validation's own rounds; where the study found nothing better it is Inductor's default (1).
Usage: python3 experiments/bestfound_table.py db/bestfound7-validate-75d3df6d.sqlite [more validation DBs]
"""

import json
import sys

from inductor_tune.stats import geomean
from inductor_tune.store import Store, StoreError


def rows(db_paths):
    out = []
    for path in db_paths:
        for record in Store(f"sqlite:///{path}", create=False).validations():
            result = json.loads(record.result_json)
            variants = {v["name"]: v for v in result["summary"]["variants"]}
            rules = variants["heuristics"]["ratio_to_default"]
            best = variants.get("best_found", variants["inductor_default"])
            out.append({"problem": f"{record.kernel} {record.rows}x{record.cols}",
                        "applied": bool(result["rules_applied"]), "rules": rules, "best": best["ratio_to_default"],
                        # As `validate` reports it: the medians' ratio.
                        "vs_best": best["median_ms"] / variants["heuristics"]["median_ms"],
                        "digest": record.heuristics_digest})
    return sorted(out, key=lambda r: r["vs_best"])


def main(argv):
    try:
        table = rows(argv)
    except StoreError as exc:
        raise SystemExit(f"bestfound_table: {exc}") from None
    if not table:
        raise SystemExit("no validation records in " + ", ".join(argv))
    print("| problem | rules | rules / default | best found / default | rules / best found |")
    print("| --- | --- | --- | --- | --- |")
    for r in table:
        print(f"| {r['problem']} | {'applied' if r['applied'] else 'default kept'} | {r['rules']:.3f} | "
              f"{r['best']:.3f} | {r['vs_best']:.3f} |")
    ratios = [r["vs_best"] for r in table]
    print(f"\n{len(table)} problems, heuristics {', '.join(sorted({r['digest'][:8] for r in table}))}: "
          f"rules / best found geomean {geomean(ratios):.3f}, worst {min(ratios):.3f}; "
          f"rules applied at {sum(r['applied'] for r in table)}")


if __name__ == "__main__":
    main(sys.argv[1:])
