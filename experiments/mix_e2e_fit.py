"""End-to-end split autotuning of the fused mix-order backwards (``inductor_tune.mix_e2e``): the probe, its
stratified training draw, and the fit of entries from the probe's A/B.

  python3 experiments/mix_e2e_fit.py probe heuristics/h200.yaml --out experiments/mix_e2e/probe-h200.yaml
  python3 experiments/mix_e2e_fit.py probe heuristics/h200.yaml --sweep --out experiments/mix_e2e/probe-sweep-h200.yaml
  python3 experiments/mix_e2e_fit.py draw --per-cell 6 --seed 7901 --out experiments/mix_e2e/train-draw.json
  inductor-tune validate experiments/mix_e2e/probe-h200.yaml --draw experiments/mix_e2e/train-draw.json \\
      --rounds 3 --storage sqlite:///db/mix-e2e-train.sqlite
  python3 experiments/mix_e2e_fit.py fit heuristics/h200.yaml --evidence db/mix-e2e-train.sqlite --out CANDIDATE.yaml

A fresh compile of training problems: ``retime`` keeps the draws' problems that a file's sweeping entries reach (a
second timing of them in new compiles, which the fit reads as one more record):

  python3 experiments/mix_e2e_fit.py retime heuristics/h200.yaml \\
      --draws experiments/mix_e2e/train-draw.json,experiments/mix_e2e/train2-draw.json --out RETIME-draw.json

The draw refuses every problem of a held-out draw (experiments/heldout/); the fit reads nothing but the probe's
records, and a cell earns an entry only where every problem the entry changed, in every record, won beyond the
noise floor.
"""

import argparse
import dataclasses
import glob
import os
import pathlib
import sys

from inductor_tune import figdata, heuristics, mix_e2e
from inductor_tune.gate import Draw
from inductor_tune.store import StoreError

HELDOUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "heldout")


def held_out_problems() -> set:
    return {tuple(p) for path in glob.glob(os.path.join(HELDOUT, "*.json"))
            for p in Draw.from_json(pathlib.Path(path).read_text()).problems}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=("probe", "draw", "fit", "retime"))
    ap.add_argument("heuristics", nargs="?", help="probe, fit: the file whose GPU (probe) or rules (fit) to keep")
    ap.add_argument("--per-cell", type=int, default=6)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--draws", help="retime: training draws whose problems to keep, comma-separated")
    ap.add_argument("--evidence", help="fit: validation databases of the probe, comma-separated")
    ap.add_argument("--sweep", action="store_true",
                    help="probe, fit: entries that time every power-of-two split (the records must be of such a probe)")
    ap.add_argument("--keep", action="store_true",
                    help="fit: keep the file's entries that no new entry overlaps (those of another probe's fit)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if os.path.exists(args.out):
        sys.exit(f"mix_e2e_fit: error: {args.out} exists; write a new file")
    if args.action != "draw" and not args.heuristics:
        sys.exit(f"mix_e2e_fit: error: {args.action} needs a heuristic file")
    try:
        if args.action == "draw":
            if args.seed is None:
                sys.exit("mix_e2e_fit: error: draw needs --seed")
            problems = mix_e2e.stratified_problems(args.per_cell, args.seed, mix_e2e.KERNELS, held_out_problems())
            draw = Draw(args.seed, len(problems), mix_e2e.KERNELS, "bf16", 2 * mix_e2e.MAX_ELEMENTS,
                        tuple(problems), (), mix_e2e.ROWS, mix_e2e.COLS)
            with open(args.out, "x") as f:
                f.write(draw.to_json() + "\n")
            print(f"wrote {args.out}: {len(problems)} problems, {args.per_cell} in each of "
                  f"{len(mix_e2e.cells())} cells, none of a held-out draw")
            return 0
        heur = heuristics.load(args.heuristics)
        if args.action == "retime":
            if not args.draws:
                sys.exit("mix_e2e_fit: error: retime needs --draws")
            draws = [Draw.from_json(pathlib.Path(d).read_text()) for d in args.draws.split(",")]
            problems = mix_e2e.reached_by_sweeps(heur, [p for d in draws for p in d.problems], held_out_problems())
            if not problems:
                sys.exit(f"mix_e2e_fit: error: no problem of the draws lies inside a sweeping entry of {args.heuristics}")
            draw = dataclasses.replace(draws[0], n=len(problems), problems=tuple(problems))
            with open(args.out, "x") as f:
                f.write(draw.to_json() + "\n")
            print(f"wrote {args.out}: {len(problems)} problems of {len(draws)} draws inside "
                  f"{sum(e.sweep for e in heur.mix_autotune)} sweeping entries")
            return 0
        if args.action == "probe":
            heuristics.dump(mix_e2e.probe(heur, args.sweep), args.out)
            print(f"wrote {args.out}")
            return 0
        if not args.evidence:
            sys.exit("mix_e2e_fit: error: fit needs --evidence")
        sources = args.evidence.split(",")
        # A climbing probe's records must not fit sweeping entries, nor the other way round.
        want = mix_e2e.probe(heur, args.sweep).digest()[:8]
        for db in sources:
            ran = {run.digest[:8] for run in figdata.validation_runs(db)}
            if ran != {want}:
                sys.exit(f"mix_e2e_fit: error: {db} validated {sorted(ran)}, not the "
                         f"{'sweeping' if args.sweep else 'climbing'} probe {want}")
        points = mix_e2e.points_from_rows([row for db in sources for row in figdata.validation_rows(db)])
        fitted, lines = mix_e2e.fit(heur, points, sources, args.sweep, args.keep)
    except (heuristics.HeuristicsError, StoreError, ValueError, KeyError, OSError) as exc:
        sys.exit(f"mix_e2e_fit: error: {exc}")
    heuristics.dump(fitted, args.out)
    print("\n".join(lines))
    print(f"wrote {args.out}: {len(fitted.mix_autotune)} end-to-end entries from {len(points)} problems "
          f"(digest {fitted.digest()[:8]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
