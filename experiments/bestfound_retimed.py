"""Is a study's best found inflated by the noise it was picked through? Its winner re-timed in fresh rounds says.

A study keeps the config whose interleaved ratio to Inductor's default was highest, so that ratio carries the luck of
the pick. `validate` on the same problem times the winner again, in its own rounds interleaved with the default. This
compares the two at every single-kernel problem that both a study database and a validation of it hold, where the
study named a winner. A geometric mean of (re-timed ratio / study's ratio) near 1 says the best found is what the
winner runs at; below 1, it says by how much the held-out target "0.97x the best found" is stricter than it reads.

Usage: python3 experiments/bestfound_retimed.py PAIRS.txt [--gpu H200]
(PAIRS.txt: `STUDY.sqlite=VALIDATION.sqlite` per line, `#` lines ignored; e.g. experiments/bestfound-retimed-h200.txt)
"""

import argparse
import math
import statistics
import sys

from inductor_tune import figdata
from inductor_tune.dbfiles import url_of
from inductor_tune.distill import open_stores
from inductor_tune.evidence import load_points, select_gpu
from inductor_tune.validate import BEST


def study_best(study_db: str, gpu: str) -> dict:
    """(kernel, shape, dtype) -> the best interleaved ratio of the problem's study, for single-kernel problems."""
    stores = open_stores([url_of(study_db)])
    points, _ = load_points(stores, select_gpu(stores, gpu), [study_db])
    by_problem: dict = {}
    for p in points:
        if not p.probe:
            by_problem.setdefault((p.kernel, f"{p.rows}x{p.cols}", p.dtype), []).append(p)
    return {key: max([1.0] + [s for c, s in ps[0].speedups.items() if c in ps[0].interleaved])
            for key, ps in by_problem.items() if len(ps) == 1}


def pairs_of(path: str) -> list[tuple[str, str]]:
    with open(path) as f:
        return [tuple(line.strip().split("=", 1)) for line in f if line.strip() and not line.startswith("#")]


def compare(pairs, gpu: str) -> list[tuple[str, str, float, float]]:
    """(validation, problem, study's ratio, re-timed ratio) at each problem both hold where the study named a winner
    (where it found nothing beyond the noise, `validate` takes the default as the best found: nothing to re-time)."""
    out, cache = [], {}
    for study_db, validation_db in pairs:
        best = cache.setdefault(study_db, study_best(study_db, gpu))
        for row in figdata.validation_rows(validation_db):
            retimed, key = row.variant(BEST), (row.kernel, row.shape, row.dtype)
            if retimed is not None and key in best:
                out.append((validation_db, f"{row.kernel} {row.shape}", best[key], retimed.ratio_to_default))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs")
    parser.add_argument("--gpu", default="H200")
    args = parser.parse_args(argv)
    rows = compare(pairs_of(args.pairs), args.gpu)
    if not rows:
        sys.exit("no problem is in both a study database and its validation")
    ratios = [retimed / study for *_, study, retimed in rows]
    won = [retimed / study for *_, study, retimed in rows if study >= 1.05]
    print(f"{len(rows)} re-timings of {len({r[1] for r in rows})} problems: re-timed / study's own ratio, geomean "
          f"{math.exp(statistics.fmean(map(math.log, ratios))):.3f}, median {statistics.median(ratios):.3f}, "
          f"5th percentile {sorted(ratios)[len(ratios) // 20]:.3f}")
    if won:
        print(f"where the study found 1.05x or more ({len(won)}): geomean "
              f"{math.exp(statistics.fmean(map(math.log, won))):.3f}")


if __name__ == "__main__":
    main()
