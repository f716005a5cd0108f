"""Which sets a fill within a shape budget takes (`crossmeasure --fill K --fill-shapes N`), and why: a diagnostic.

`crossmeasure --plan-only` prints the plan per size group; this prints each set `fill.within` takes, in its order: its
shapes (probes among them), kernels, kind and r, Inductor's default's shortfall and what the fit's rules leave there
(`fill.shortfall`, geomeans over the set), and its leading candidates with their evidence.

Usage: python3 experiments/fill_budget_sets.py FIT_LIST [--per-set 2] [--share 0] [--shapes 400] [--gpu H200]
(FIT_LIST: a fit list of the databases the fill reads; fill_span_refit.sh reads its list less the last two lines)
"""

import argparse
import collections
import math

import fit_loo

from inductor_tune import fill
from inductor_tune.fitparams import FitParams


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fit_list")
    parser.add_argument("--per-set", type=int, default=2)
    parser.add_argument("--share", type=float, default=0.0)
    parser.add_argument("--shapes", type=int, default=400)
    parser.add_argument("--gpu", default="H200")
    args = parser.parse_args()
    points = fit_loo.load(args.fit_list, args.gpu, None)
    params = FitParams()
    chosen = [(shapes, leading) for shapes in fill.fill_sets(points, params)
              if (leading := fill.leading_uncovered(shapes, args.per_set, params, args.share))]
    left = fill.shortfall(points, params)
    print(f"{len(chosen)} uncovered sets with an adoptable candidate at share {args.share:g}")
    for shapes, leading in fill.within(chosen, args.shapes, left):
        kernels = dict(collections.Counter(p.kernel for p in shapes))
        default = math.exp(sum(math.log(p.best) for p in shapes) / len(shapes))
        rules = math.exp(sum(left[fill._key(p)] for p in shapes) / len(shapes))
        print(f"{len(shapes)} shapes ({sum(p.probe for p in shapes)} probes) {shapes[0].kind} r {shapes[0].r_pow2} "
              f"{kernels}: best found / default {default:.3f}, / the rules {rules:.3f}; leading: "
              + "; ".join(c.describe(len(shapes)) for c in leading))


if __name__ == "__main__":
    main()
