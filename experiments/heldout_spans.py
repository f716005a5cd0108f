"""Draw a held-out set inside the spans of a file's unsplit rules, so that each rule meets unseen problems.

A random gate of the whole space reaches few of them: set 68 (300 problems) met the column rules of
experiments/candidates/h200-s78.yaml at 4 problems, all of rows 129..256, and none of its rules of 259..1018 rows.
This draws ``--per-rule`` problems inside each rule's rows x N span (log-uniform, ``gate.make_draw`` seeded by
``--seed`` x 1000 + the rule's index), none at a shape of the databases named or of the training draws named, and
writes one draw that `validate --draw` scores once, like any held-out set.

  python3 experiments/heldout_spans.py experiments/candidates/h200-s78.yaml --outer --per-rule 5 --seed 2102 \\
      --db $(ls db/*.sqlite | paste -sd,) --avoid-draw experiments/unsplit/outer-train-draw.json,... \\
      --out experiments/heldout/column-s78-draw.json
"""

import argparse
import json
import os
import sys

from inductor_tune import heuristics
from inductor_tune.dbfiles import url_of
from inductor_tune.gate import Draw, make_draw, studied_shapes
from inductor_tune.store import Store, StoreError

# The norm backwards whose weight gradient is a column reduction (experiments/unsplit/outer-gate-draw*.json).
COLUMN_KERNELS = ("rmsnorm_bwd", "layernorm_bwd", "nn_rmsnorm_bwd", "nn_layernorm_bwd", "nn_layernorm_nobias_bwd",
                  "llama_rmsnorm_bwd", "prenorm_rmsnorm_bwd")
MAX_BYTES = 4 * 2**30


def draw_in_spans(heur, outer: bool, per_rule: int, seed: int, kernels, avoid: set, avoided_from=()) -> Draw:
    """``per_rule`` problems inside each of ``heur``'s unsplit rules of the kind asked (column with ``outer``)."""
    specs = [u for u in heur.unsplit if u.outer == outer]
    if not specs:
        raise ValueError(f"the file has no unsplit rules of {'column' if outer else 'inner'} reductions")
    problems = []
    for index, spec in enumerate(specs):
        drawn = make_draw(per_rule, seed * 1000 + index, kernels, avoid | {(p[1], p[2]) for p in problems},
                          MAX_BYTES, rows=tuple(spec.rows), cols=tuple(spec.cols))
        problems += drawn.problems
    rows = (min(u.rows[0] for u in specs), max(u.rows[1] for u in specs))
    cols = (min(u.cols[0] for u in specs), max(u.cols[1] for u in specs))
    return Draw(seed, len(problems), tuple(kernels), "bf16", MAX_BYTES, tuple(problems), tuple(avoided_from),
                rows, cols)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("heuristics")
    ap.add_argument("--outer", action="store_true", help="the column rules (default: the inner unsplit rules)")
    ap.add_argument("--per-rule", type=int, default=5)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--kernels", default=",".join(COLUMN_KERNELS))
    ap.add_argument("--db", default="", help="databases whose studied shapes are kept out, comma-separated")
    ap.add_argument("--avoid-draw", default="", help="training draws whose shapes are kept out, comma-separated")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if os.path.exists(args.out):
        sys.exit(f"heldout_spans: error: {args.out} exists; write a new file")
    dbs = [d for d in args.db.split(",") if d]
    try:
        heur = heuristics.load(args.heuristics)
        avoid = studied_shapes(Store(url_of(d), create=False) for d in dbs)
        for path in filter(None, args.avoid_draw.split(",")):
            with open(path) as f:
                avoid |= {(p[1], p[2]) for p in json.load(f)["problems"]}
        draw = draw_in_spans(heur, args.outer, args.per_rule, args.seed, args.kernels.split(","), avoid, dbs)
    except (heuristics.HeuristicsError, StoreError, ValueError, OSError, KeyError) as exc:
        sys.exit(f"heldout_spans: error: {exc}")
    with open(args.out, "w") as f:
        f.write(draw.to_json())
    print(f"wrote {args.out}: {draw.n} problems, {args.per_rule} in each of "
          f"{draw.n // args.per_rule} rule spans, none at the {len(avoid)} shapes kept out")
    return 0


if __name__ == "__main__":
    sys.exit(main())
