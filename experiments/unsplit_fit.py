"""Write the unsplit probe of a heuristic file, or fit its unsplit rules from the probe's A/B records.

  python3 experiments/unsplit_fit.py probe heuristics/h200.yaml --out experiments/unsplit/probe.yaml
  inductor-tune validate experiments/unsplit/probe.yaml --draw TRAIN-DRAW.json --rounds 3 --storage db/unsplit-train.sqlite
  python3 experiments/unsplit_fit.py fit heuristics/h200.yaml --evidence db/unsplit-train.sqlite,db/unsplit-train2.sqlite \
      --out experiments/candidates/h200-unsplit.yaml

The training draws are seeded gate draws of the split region (``validate --random N --seed S --rows 1:263
--cols 8193:262144 --draw-out``), checked against every held-out draw before they are measured; the fit
reads nothing else (``inductor_tune.unsplit`` says how cells become rules).
"""

import argparse
import os
import sys

from inductor_tune import figdata, heuristics, unsplit


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=("probe", "fit"))
    ap.add_argument("heuristics", help="the file whose launch rules the probe and the fit keep")
    ap.add_argument("--evidence", help="fit: validation databases of the probe, comma-separated")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if os.path.exists(args.out):
        sys.exit(f"unsplit_fit: error: {args.out} exists; write a new file")
    try:
        heur = heuristics.load(args.heuristics)
    except heuristics.HeuristicsError as exc:
        sys.exit(f"unsplit_fit: error: {exc}")
    if args.action == "probe":
        heuristics.dump(unsplit.probe(heur), args.out)
        return 0
    if not args.evidence:
        sys.exit("unsplit_fit: error: fit needs --evidence")
    sources = args.evidence.split(",")
    rows = [row for db in sources for row in figdata.validation_rows(db)]
    fitted, lines = unsplit.fit(heur, unsplit.points_from_rows(rows), sources)
    print("\n".join(lines))
    heuristics.dump(fitted, args.out)
    print(f"wrote {args.out}: {len(fitted.unsplit)} unsplit rule(s), digest {fitted.digest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
