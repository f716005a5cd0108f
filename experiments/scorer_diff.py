"""Which recorded verdicts the current scorer reads differently from how they were recorded: a diagnostic, no score.

    python3 experiments/scorer_diff.py db/heldout*.sqlite

Each validation record keeps the verdict `validate` gave when it ran (its "summary"); `validate.summarize_problem`
recomputes it from the recorded rounds and the two compiles' kernels.  When the scorer changes (stop 62:
`validate.same_program`), this lists every record whose verdict would now differ and how many touched problems
compiled to Inductor's own program.  A held-out set keeps the verdict it was scored with; a changed scorer is scored
on a fresh set (docs/rules.md, "Stop 62").
"""

from __future__ import annotations

import argparse
import json

from inductor_tune import validate
from inductor_tune.dbfiles import StoreError
from inductor_tune.store import Store


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dbs", nargs="+", help="SQLite files with validation records")
    args = ap.parse_args()
    total_same = 0
    for path in args.dbs:
        same, flips = 0, []
        try:
            records = Store(f"sqlite:///{path}", create=False).validations()
        except StoreError:  # a database of another kind (no validation records)
            continue
        for rec in records:
            data = json.loads(rec.result_json)
            # failed problems and model steps (another summary) carry no kernel verdict
            if "failed" in data or "variants" not in data.get("summary", {}):
                continue
            recorded = validate.row_from_summary(data["summary"])
            # The ceiling only sets the % of ceiling, which no verdict reads.
            now = validate.summarize_problem(rec.kernel, f"{rec.rows}x{rec.cols}", rec.dtype, data, 1.0)
            same += now.same_program
            if now.regressed != recorded.regressed:
                ratio = now.variant(validate.HEURISTICS).ratio_to_default
                flips.append(f"{rec.kernel} {rec.rows}x{rec.cols}: regressed {recorded.regressed} -> {now.regressed}"
                             f" (ratio {ratio:.3f}, Inductor's program: {now.same_program})")
        total_same += same
        if same or flips:
            print(f"{path}: {same} touched problem(s) compiled to Inductor's own program; verdicts that differ: "
                  + ("; ".join(flips) or "none"))
    print(f"{total_same} touched problem(s) in all compiled to Inductor's own program")


if __name__ == "__main__":
    main()
