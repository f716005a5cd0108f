"""Write a seeded coverage experiment: one study per kernel in each band of log(rows), N log-uniform.

Best found at a spent held-out set shows where the rules leave the most: buckets whose fit keeps the
default because no study ever ran there.  This draws training problems for such buckets: for each
kernel in turn, one problem in each of ``--bands`` equal thirds (or other parts) of log(rows) over
``--rows LO HI``, with N log-uniform over ``--cols LO HI``, all from ``random.Random(seed)`` in that order
(kernels as given, then the bands).  A draw that lands on a problem of the held-out draws named by
``--avoid`` is drawn again, so no held-out problem is ever studied.  The held-out draws must be committed
before this runs (docs/rules.md says why).

Usage:
  python3 experiments/coverage_draw.py --kernels K1,K2,... --rows LO HI --cols LO HI --bands B --seed S
      --avoid DRAW.json[,DRAW.json...] --name NAME --why TEXT [--focus ROLE] --out FILE
"""

import argparse
import math
import os
import random
import sys

from inductor_tune.gate import Draw


def draw(kernels: list[str], rows: tuple[int, int], cols: tuple[int, int], bands: int, seed: int,
         avoid: set) -> list[tuple[str, int, int]]:
    rng = random.Random(seed)
    lo, hi = math.log(rows[0]), math.log(rows[1])
    edges = [math.exp(lo + (hi - lo) * k / bands) for k in range(bands + 1)]
    out = []
    for kernel in kernels:
        for band in range(bands):
            while True:
                r = round(math.exp(rng.uniform(math.log(edges[band]), math.log(edges[band + 1]))))
                c = round(math.exp(rng.uniform(math.log(cols[0]), math.log(cols[1]))))
                r, c = min(max(r, rows[0]), rows[1]), min(max(c, cols[0]), cols[1])
                if (r, c) not in avoid:
                    break
            out.append((kernel, r, c))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", required=True)
    ap.add_argument("--rows", type=int, nargs=2, required=True)
    ap.add_argument("--cols", type=int, nargs=2, required=True)
    ap.add_argument("--bands", type=int, default=3)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--avoid", required=True, help="held-out draws (validate --draw-out), comma-separated")
    ap.add_argument("--name", required=True)
    ap.add_argument("--why", required=True, help="the header's first lines: what gap the draw covers")
    ap.add_argument("--trials", type=int, default=24)
    ap.add_argument("--focus", help="vary this kernel role alone (experiment.py's `focus`), e.g. column_split")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if os.path.exists(args.out):
        sys.exit(f"coverage_draw: error: {args.out} exists; a committed draw is never rewritten")
    avoid = set()
    for path in args.avoid.split(","):
        with open(path) as f:
            avoid |= {(rows, cols) for _, rows, cols, _ in Draw.from_json(f.read()).problems}
    picked = draw(args.kernels.split(","), tuple(args.rows), tuple(args.cols), args.bands, args.seed, avoid)
    header = "".join(f"# {line}\n" for line in args.why.splitlines())
    header += (f"# Drawn by: python3 experiments/coverage_draw.py --kernels {args.kernels} --rows {args.rows[0]} "
               f"{args.rows[1]}\n#   --cols {args.cols[0]} {args.cols[1]} --bands {args.bands} --seed {args.seed} "
               f"--avoid <{len(args.avoid.split(','))} held-out draws>"
               + (f" --focus {args.focus}" if args.focus else "") + "\n")
    focus = f", the {args.focus} kernel alone\nfocus: {args.focus}" if args.focus else ""
    body = "".join(f"  - {k} {r}x{c}\n" for k, r, c in picked)
    with open(args.out, "w") as f:
        f.write(header + f"name: {args.name}\ndescription: {len(picked)} coverage problems, bf16{focus}\nproblems:\n"
                + body + f"dtypes: [bf16]\ntrials: {args.trials}\nfinalists: 3\nsampler: tpe\nseed: 0\n")
    print(body, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
