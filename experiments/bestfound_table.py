"""The rules against the per-shape best found, from `validate --suite ... --db <best-found studies>` records.

Prints one Markdown row per problem (rules applied or not, rules / default, best found / default, rules /
best found, Inductor's picks) and the geomean and worst of rules / best found. "Best found" is the study's
best config re-timed in the validation's own rounds; where the study found nothing better it is Inductor's
default (1).

Where no rule applied, the rules' program is Inductor's own, compiled a second time, and Inductor may pick
another of its candidate configs at run time: "Inductor's picks" says whether its two compiles launched the
same configs ("same") or which kernels differed ("differ: red", "per", "poi": looped and persistent
reductions, pointwise). On an H200 (stop 36) such a second pick ran 1.83x slower than the first at
prenorm_rmsnorm_train_fwd 1142x5245, so a ratio of such a problem is one draw of Inductor's own choice.
Usage: python3 experiments/bestfound_table.py db/bestfound7-validate-75d3df6d.sqlite [more validation DBs]
"""

import json
import sys

from inductor_tune import figdata
from inductor_tune.stats import geomean
from inductor_tune.store import StoreError
from inductor_tune.validate import HEURISTICS


def rows(db_paths):
    """The latest record per problem as `validate` summarized it (``figdata.validation_rows``), worst first,
    the digests of the heuristic files they validated, and Inductor's picks per problem (``picks``)."""
    out, digests, picked = [], set(), {}
    for path in db_paths:
        out += [r for r in figdata.validation_rows(path) if r.best_found() and r.variant(HEURISTICS)]
        digests |= {run.digest[:8] for run in figdata.validation_runs(path)}
        picked.update(picks(path))
    return sorted(out, key=_vs_best), digests, picked


def picks(path) -> dict:
    """Per (kernel, 'MxN', dtype), as the latest record has it: '' where the two compiles launched the same
    configs, else the kinds of the kernels whose configs differed ('red', 'per', 'poi'); None if unrecorded."""
    out = {}
    for rec in figdata.validation_records(path):  # oldest first: the latest record of a problem wins
        result = json.loads(rec.result_json)
        default, rules = result.get("default_choice"), result.get("heuristic_choice")
        key = (rec.kernel, f"{rec.rows}x{rec.cols}", rec.dtype)
        if default is None or rules is None:
            out[key] = None
            continue
        by_kernel = [{c["kernel"]: c["config"] for c in choice} for choice in (default, rules)]
        names = sorted(set(by_kernel[0]) | set(by_kernel[1]))
        out[key] = ", ".join(sorted({_kind(n) for n in names if by_kernel[0].get(n) != by_kernel[1].get(n)}))
    return out


def _kind(kernel_name: str) -> str:
    # Inductor names its kernels triton_<red|per|poi>_fused_...; a name outside that scheme is shown whole.
    parts = kernel_name.split("_")
    return parts[1] if len(parts) > 2 and parts[0] == "triton" else kernel_name


def _picks_cell(row, picked: dict) -> str:
    if row.heuristics_applied:
        return "-"
    diff = picked.get((row.kernel, row.shape, row.dtype))
    return "not recorded" if diff is None else ("same" if not diff else f"differ: {diff}")


def _vs_best(row) -> float:
    # As `validate` reports it: the medians' ratio.
    return row.best_found().median_ms / row.variant(HEURISTICS).median_ms


def main(argv):
    try:
        table, digests, picked = rows(argv)
    except StoreError as exc:
        raise SystemExit(f"bestfound_table: {exc}") from None
    if not table:
        raise SystemExit("no validation records in " + ", ".join(argv))
    print("| problem | rules | rules / default | best found / default | rules / best found | Inductor's picks |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in table:
        print(f"| {r.kernel} {r.shape} | {'applied' if r.heuristics_applied else 'default kept'} | "
              f"{r.variant(HEURISTICS).ratio_to_default:.3f} | {r.best_found().ratio_to_default:.3f} | "
              f"{_vs_best(r):.3f} | {_picks_cell(r, picked)} |")
    ratios = [_vs_best(r) for r in table]
    print(f"\n{len(table)} problems, heuristics {', '.join(sorted(digests))}: "
          f"rules / best found geomean {geomean(ratios):.3f}, worst {min(ratios):.3f}; "
          f"rules applied at {sum(r.heuristics_applied for r in table)}")
    untouched = [_picks_cell(r, picked) for r in table if not r.heuristics_applied]
    differed = sum(cell.startswith("differ") for cell in untouched)
    print(f"Inductor's own picks differed between its two compiles at {differed} of the {len(untouched)} problems "
          "no rule touched")


if __name__ == "__main__":
    main(sys.argv[1:])
