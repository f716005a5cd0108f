"""Write the best-found experiments for a seeded sample of a spent held-out draw.

A held-out set is scored once; after that, studies at a sample of its problems tell how far the rules
are from the best a launch config reaches there (the "per-shape best found"). The sample is
``random.Random(seed).sample`` of the draw's problems, optionally only those with at least
``--min-rows`` rows, leaving out problems an earlier sample (``--after``) took. One experiment file per
kernel, so that `tune` and `validate --suite FILE --db ...` run them kernel by kernel; or, with
``--one-file``, one ``problems.yaml`` that lists them all (`problems:`), so that one `tune` call and one
`validate` call measure the whole sample and pay their start-up once.

Usage:
  python3 experiments/bestfound_sample.py DRAW.json --seed S --n K [--min-rows R]
      [--after SEED:K[:R] ...] [--one-file] --out DIR --tag NAME
Reproduces experiments/bestfound-set10/ with `experiments/heldout/set10-draw.json --seed 10010 --n 16
--tag bestfound10 --out ...` (its YAML headers were hand-written then; the shapes are the same).
"""

import argparse
import json
import os
import random
import sys
from collections import defaultdict


def sample(problems: list, seed: int, n: int, min_rows: int = 1, taken: frozenset = frozenset()) -> list:
    """``n`` of the draw's (kernel, rows, cols, dtype) problems with at least ``min_rows`` rows, none in ``taken``."""
    pool = [p for p in problems if p[1] >= min_rows and tuple(p) not in taken]
    if n > len(pool):
        raise SystemExit(f"bestfound_sample: error: {n} problems asked, {len(pool)} with at least {min_rows} rows")
    return [tuple(p) for p in random.Random(seed).sample(pool, n)]


def parse_after(spec: str) -> tuple[int, int, int]:
    parts = [int(x) for x in spec.split(":")]
    if len(parts) not in (2, 3):
        raise SystemExit(f"bestfound_sample: error: --after takes SEED:K[:MIN_ROWS], not {spec!r}")
    return parts[0], parts[1], parts[2] if len(parts) == 3 else 1


def experiments(picked: list, tag: str, header: str) -> dict[str, str]:
    by_kernel: dict[tuple[str, str], list] = defaultdict(list)
    for kernel, rows, cols, dtype in picked:
        by_kernel[(kernel, dtype)].append(f"{rows}x{cols}")
    files = {}
    for (kernel, dtype), shapes in sorted(by_kernel.items()):
        files[f"{kernel}.yaml"] = (
            header
            + f"name: {tag}-{kernel}\n"
            + f"description: best found for {kernel} at held-out shapes, {dtype}\n"
            + f"kernels: [{kernel}]\nshapes: [{', '.join(shapes)}]\ndtypes: [{dtype}]\n"
            + "trials: 24\nfinalists: 3\nsampler: tpe\nseed: 0\n")
    return files


def one_experiment(picked: list, tag: str, header: str) -> dict[str, str]:
    dtypes = sorted({dtype for *_, dtype in picked})
    items = "".join(f"  - {kernel} {rows}x{cols}\n" for kernel, rows, cols, _ in sorted(picked))
    return {"problems.yaml": (header + f"name: {tag}\n"
                              + "description: best found at held-out problems, one study each\n"
                              + f"problems:\n{items}dtypes: [{', '.join(dtypes)}]\n"
                              + "trials: 24\nfinalists: 3\nsampler: tpe\nseed: 0\n")}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("draw")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--min-rows", type=int, default=1)
    ap.add_argument("--after", action="append", default=[], help="an earlier sample SEED:K[:MIN_ROWS] to leave out")
    ap.add_argument("--one-file", action="store_true", help="one problems.yaml listing the whole sample")
    ap.add_argument("--out", required=True)
    ap.add_argument("--tag", required=True)
    args = ap.parse_args(argv)
    with open(args.draw) as f:
        draw = json.load(f)
    taken: set = set()
    for spec in args.after:
        seed, n, min_rows = parse_after(spec)
        taken |= set(sample(draw["problems"], seed, n, min_rows, frozenset(taken)))
    picked = sample(draw["problems"], args.seed, args.n, args.min_rows, frozenset(taken))
    how = f"random.Random({args.seed}).sample of {args.n}" + \
        (f" among those with at least {args.min_rows} rows" if args.min_rows > 1 else "") + \
        (f", after the samples {', '.join(args.after)}" if args.after else "")
    # The studies may run before the set is scored: they time configs at held-out problems, and no fit reads them
    # until that set is spent.
    header = (f"# Per-shape best found at problems of the held-out draw {args.draw} (seed {draw['seed']}),\n"
              f"# no fit's evidence until that set is scored: {how}\n"
              f"# (experiments/bestfound_sample.py; docs/rules.md).\n")
    if os.path.exists(args.out) and os.listdir(args.out):
        raise SystemExit(f"bestfound_sample: error: {args.out} exists and is not empty")
    os.makedirs(args.out, exist_ok=True)
    write = one_experiment if args.one_file else experiments
    for name, text in write(picked, args.tag, header).items():
        with open(os.path.join(args.out, name), "x") as f:
            f.write(text)
    for p in sorted(picked):
        sys.stdout.write(" ".join(map(str, p)) + "\n")


if __name__ == "__main__":
    main()
