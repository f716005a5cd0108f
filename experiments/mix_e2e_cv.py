"""Leave-one-record-out check of the end-to-end fit's cell criterion, on training records only.

  python3 experiments/mix_e2e_cv.py heuristics/h100.yaml \\
      --evidence db/mix-e2e-sweep-h100-train.sqlite,db/mix-e2e-sweep-h100-train2.sqlite,...

Each record (one training draw's A/B of the sweeping probe) is left out in turn; the others fit entries, and the
left-out record's problems inside them say how the entries do on problems their fit did not see. Two criteria:
``cell``: ``mix_e2e.fit`` itself (a cell earns an entry spanning its problems where every one won beyond noise);
``winners-N``: where a cell has a problem that did not win, the largest rectangle of its winners that holds no
such problem, if it holds at least N winners. The second reaches more problems; the question is whether what it
reaches loses. No held-out draw is read (the records' draws keep out every held-out problem), so the answer may
choose a method before a held-out set scores it.
"""

import argparse
import sys

from inductor_tune import figdata, heuristics, mix_e2e
from inductor_tune.stats import NOISE_FLOOR, geomean
from inductor_tune.unsplit import ABPoint

Span = tuple[int, int, int, int, int]  # element size, rows lo, rows hi, cols lo, cols hi


def _won(p: ABPoint) -> bool:
    return p.ratio >= 1 + NOISE_FLOOR


def winners_rectangle(points: list[ABPoint], min_winners: int) -> tuple[int, int, int, int] | None:
    """The (rows lo, rows hi, cols lo, cols hi) with corners at winners' coordinates that holds the most winners and
    no problem that did not win, or None where it would hold fewer than ``min_winners``."""
    winners = [p for p in points if _won(p)]
    others = [p for p in points if not _won(p)]
    rows, cols = sorted({p.rows for p in winners}), sorted({p.cols for p in winners})
    best, most = None, 0
    for i, r0 in enumerate(rows):
        for r1 in rows[i:]:
            for j, c0 in enumerate(cols):
                for c1 in cols[j:]:
                    # widening cols only adds points, so a rectangle that holds a non-winner ends this row of c1
                    if any(r0 <= p.rows <= r1 and c0 <= p.cols <= c1 for p in others):
                        break
                    n = sum(r0 <= p.rows <= r1 and c0 <= p.cols <= c1 for p in winners)
                    if n > most:
                        best, most = (r0, r1, c0, c1), n
    return best if most >= min_winners else None


def spans_by_cell(heur, points: list[ABPoint]) -> list[Span]:
    fitted, _ = mix_e2e.fit(heur, points, ["cv"], sweep=True)
    return [(e.element_size, *e.rows, *e.cols) for e in fitted.mix_autotune]


def spans_by_winners(points: list[ABPoint], min_winners: int) -> list[Span]:
    out = []
    for size in sorted({p.element_size for p in points}):
        for rows, cols in mix_e2e.cells():
            inside = [p for p in points if p.element_size == size and rows[0] <= p.rows <= rows[1]
                      and cols[0] <= p.cols <= cols[1]]
            rect = winners_rectangle(inside, min_winners)
            if rect is not None:
                out.append((size, *rect))
    return out


def inside(p: ABPoint, spans: list[Span]) -> bool:
    return any(s == p.element_size and r0 <= p.rows <= r1 and c0 <= p.cols <= c1 for s, r0, r1, c0, c1 in spans)


def leave_one_out(records: list[list[ABPoint]], fit) -> tuple[list[int], list[ABPoint]]:
    """Entries per fold, and the left-out records' problems inside their fold's entries."""
    counts, reached = [], []
    for k, held in enumerate(records):
        spans = fit([p for i, r in enumerate(records) if i != k for p in r])
        counts.append(len(spans))
        reached += [p for p in held if inside(p, spans)]
    return counts, reached


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("heuristics", help="the file the fit keeps (its GPU names the records' GPU)")
    ap.add_argument("--evidence", required=True, help="validation databases of the sweeping probe, comma-separated")
    ap.add_argument("--min-winners", default="3,6,10", help="the winners-N criteria to compare, comma-separated")
    args = ap.parse_args(argv)
    heur = heuristics.load(args.heuristics)
    records = [mix_e2e.points_from_rows(list(figdata.validation_rows(db))) for db in args.evidence.split(",")]
    criteria = [("cell", lambda pts: spans_by_cell(heur, pts))]
    criteria += [(f"winners-{n}", lambda pts, n=n: spans_by_winners(pts, n))
                 for n in map(int, args.min_winners.split(","))]
    print(f"{len(records)} records of {sum(map(len, records))} changed problems; a loss is below 1 - its noise band")
    for name, fit in criteria:
        counts, reached = leave_one_out(records, fit)
        lost = [p for p in reached if p.ratio < 1 - p.band]
        ratios = [p.ratio for p in reached]
        print(f"{name}: entries per fold {counts}; {len(reached)} left-out problems inside them"
              + (f", geomean {geomean(ratios):.3f}, {sum(map(_won, reached))} won, {len(lost)} lost, worst "
                 f"{min(ratios):.3f}" if reached else "")
              + "".join(f"\n  lost: {p.label} {p.ratio:.3f} (band {p.band:.3f})" for p in lost))
    return 0


if __name__ == "__main__":
    sys.exit(main())
