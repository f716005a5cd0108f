"""The fit's own leave-one-shape-out score on a seeded sample of studied shapes, where all of them would take hours.

`distill` scores leave-one-shape-out refits of every studied shape (its `holdout`, skipped with `--no-folds`); on an
H200's 814 studied shapes and 12841 probes one refit takes about 20 s on one core, so all of them take hours. This
refits the same way (`distill._fold_rows`: `fit_rules` without the shape, before span settling, as `distill`'s folds
do) for a seeded random sample of studied shapes and prints `distill`'s summary of them. Diagnostic only.

Usage: python3 experiments/fit_loo.py FIT_LIST --sample N --seed S [--gpu H200] [--candidates-from GPU] [--workers W]
"""

import argparse
import concurrent.futures
import json
import random

from inductor_tune.dbfiles import url_of
from inductor_tune.distill import _fold_rows, _summarize, open_stores
from inductor_tune.evidence import load_points, select_gpu
from inductor_tune.fitparams import FitParams

_POINTS: list = []


def load(fit_list: str, gpu: str, candidates_from: str | None) -> list:
    with open(fit_list) as f:
        dbs = [line.strip() for line in f.read().splitlines()[2:] if line.strip()]
    stores = open_stores([url_of(db) for db in dbs])
    source = select_gpu(stores, candidates_from) if candidates_from else None
    return load_points(stores, select_gpu(stores, gpu), dbs, candidates_from=source)[0]


def sample(points: list, n: int, seed: int) -> list[int]:
    """Indices into ``points`` of ``n`` studied shapes drawn with ``seed`` (all of them where fewer)."""
    studied = [i for i, p in enumerate(points) if not p.probe]
    return sorted(random.Random(seed).sample(studied, min(n, len(studied))))


def _start(args) -> None:
    global _POINTS
    _POINTS = load(*args)


def _fold(index: int) -> list[dict]:
    return _fold_rows(_POINTS, FitParams(), "leave_one_shape_out", [_POINTS[index]])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fit_list")
    parser.add_argument("--sample", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--gpu", default="H200")
    parser.add_argument("--candidates-from")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    source = (args.fit_list, args.gpu, args.candidates_from)
    points = load(*source)
    chosen = sample(points, args.sample, args.seed)
    with concurrent.futures.ProcessPoolExecutor(args.workers, initializer=_start, initargs=(source,)) as pool:
        rows = [row for rows in pool.map(_fold, chosen) for row in rows]
    print(f"leave-one-shape-out refits of {len(chosen)} of {sum(not p.probe for p in points)} studied shapes "
          f"(seed {args.seed}):")
    print(json.dumps(_summarize(rows), indent=1))


if __name__ == "__main__":
    main()
