"""Write an unsplit probe, keep a training draw's problems in its span, fit unsplit rules from probes' A/B, prune or
withdraw them.

  python3 experiments/unsplit_fit.py probe heuristics/h200.yaml --out experiments/unsplit/probe.yaml
  python3 experiments/unsplit_fit.py probe heuristics/h200.yaml --config persistent=true,XBLOCK=1,num_warps=16 \\
      --out experiments/unsplit/probe-persistent16.yaml
  python3 experiments/unsplit_fit.py subset experiments/unsplit/probe-persistent16.yaml \\
      --draw experiments/unsplit/train-draw.json --out experiments/unsplit/train-persistent16-draw.json
  inductor-tune validate PROBE --draw TRAIN-DRAW.json --rounds 3 --storage db/unsplit-train.sqlite
  python3 experiments/unsplit_fit.py fit heuristics/h200.yaml --evidence db/unsplit-train.sqlite,db/unsplit-train2.sqlite \\
      --variant experiments/unsplit/probe-persistent16.yaml=db/unsplit-persistent16-train.sqlite,db/unsplit-persistent16-train2.sqlite \\
      --kernels-from STUDY-DBS --out CANDIDATE.yaml

With ``--reduction-type T`` (probe and fit), the rules key on the reduction type Inductor decides the split for
(``online_softmax_reduce``: softmax forwards), the fit reads only problems of catalog kernels with such a
reduction, and the file's rules of other types stay as they are.

  python3 experiments/unsplit_fit.py stratify PROBE.yaml --draw GATE-DRAW.json --per-cell 4 --out TRAIN.json
  python3 experiments/unsplit_fit.py stratify PROBE.yaml --draw GATE-DRAW.json --cell 64:127,8193:16384 \
      --seed 4244 --per-cell 16 --out TRAIN3.json    # a further draw in the one cell a fit earned (stop 86)

The training draws are seeded gate draws of the split region (``validate --random N --seed S --rows 1:263
--cols 8193:262144 --draw-out``), checked against every held-out draw before they are measured; ``subset``
keeps a draw's problems that a probe's config can launch (a persistent row holds at most 64K elements);
``stratify`` draws ``--per-cell`` problems (rows and N log-uniform, seeded by the draw's seed) in every cell of
the probe's span for the draw's kernels, so that each cell has the problems its verdict needs, and refuses any
problem of a held-out draw (experiments/heldout/).

With ``--outer`` (probe and fit), the rules keep a column reduction whole (a norm backward's weight gradient, rows
33..4095, N below 64 x SMs; rows and N octaves are the cells) with Inductor's config; a fit of them keeps the
file's inner rules, and one of inner rules keeps its column rules. The training draw is a stratified draw of the
backward kernels (``stratify`` of an outer probe on a gate draw of those kernels).
``withdraw`` drops a file's column rules (``--outer``) or its inner unsplit rules, every other rule kept, and
records ``--why`` in the provenance (stop 76: cd6c1b3d's column rules, the shipped c3c6844b):

  python3 experiments/unsplit_fit.py withdraw FILE.yaml --outer --why TEXT --out NEW.yaml

With ``--every-win`` (fit) a cell earns only where every problem, in every record of it, won beyond the noise
floor; stop 78's column fit reads five records, the four training draws and a fresh compile of draws 1-3's problems:

  python3 experiments/unsplit_fit.py fit experiments/candidates/h200-s76-nocolumn.yaml --outer --every-win \\
      --evidence db/unsplit-outer-train.sqlite,...,db/unsplit-outer-train4.sqlite,db/unsplit-outer-retime.sqlite \\
      --out experiments/candidates/h200-s78.yaml

The fit reads nothing but the probes and their records (``inductor_tune.unsplit`` says how cells become rules).

  python3 experiments/unsplit_fit.py prune CANDIDATE.yaml --outer --evidence db/unsplit-outer-train3.sqlite \\
      --out PRUNED.yaml

``prune`` drops a file's rules whose cell holds a problem of a fresh training draw that lost beyond noise, and
changes nothing else: a gated file made safer without a new span to score.
"""

import argparse
import dataclasses
import json
import os
import sys

from inductor_tune import figdata, heuristics, unsplit
from inductor_tune.runtime.launch import LAUNCH_FIELDS, SlotConfig
from inductor_tune.store import StoreError


def parse_config(text: str) -> SlotConfig:
    """``persistent=true,XBLOCK=1,num_warps=16`` as a launch config."""
    fields = {}
    for item in text.split(","):
        key, _, value = item.partition("=")
        if key not in LAUNCH_FIELDS or not value:
            sys.exit(f"unsplit_fit: error: --config takes FIELD=VALUE pairs of {', '.join(LAUNCH_FIELDS)}")
        fields[key] = value.lower() == "true" if key == "persistent" else int(value)
    return SlotConfig(**fields)


def parse_cell(text: str) -> tuple[tuple[int, int], tuple[int, int]]:
    try:
        rows, cols = (tuple(int(v) for v in part.split(":")) for part in text.split(","))
        if len(rows) != 2 or len(cols) != 2:
            raise ValueError
    except ValueError:
        sys.exit(f"unsplit_fit: error: --cell takes ROWS_LO:ROWS_HI,N_LO:N_HI, not {text!r}")
    return rows, cols


def write_subset(probe_file: str, draw_file: str, out: str) -> int:
    """The draw's problems inside the probe's span, as a draw (its seed and kernels kept) that ``validate --draw``
    scores like any gate draw: a problem that fails to compile is recorded as failed, not the end of the run."""
    from inductor_tune.app.validate import write_draw
    from inductor_tune.gate import Draw

    probe = heuristics.load(probe_file)
    rows, cols = probe.unsplit[0].rows, probe.unsplit[0].cols
    with open(draw_file) as f:
        draw = Draw.from_json(f.read())
    kept = tuple(p for p in draw.problems if rows[0] <= p[1] <= rows[1] and cols[0] <= p[2] <= cols[1])
    lo, hi = max(draw.rows[0], rows[0]), min(draw.rows[1], rows[1])
    write_draw(dataclasses.replace(draw, n=len(kept), problems=kept, rows=(lo, hi),
                                   cols=(max(draw.cols[0], cols[0]), min(draw.cols[1], cols[1]))), out)
    print(f"wrote {out}: {len(kept)} of the {len(draw.problems)} problems of {draw_file}")
    return 0


def write_stratified(probe_file: str, draw_file: str, per_cell: int, out: str,
                     only_cell: tuple[tuple[int, int], tuple[int, int]] | None = None, seed: int | None = None) -> int:
    """``per_cell`` problems in each rows band x N octave cell of the probe's span (unsplit.cells), as a draw;
    ``only_cell`` keeps the one cell a fit earned (a further training draw there), ``seed`` replaces the draw's."""
    import glob
    import math
    import pathlib
    import random

    from inductor_tune.app.validate import write_draw
    from inductor_tune.gate import Draw

    probe = heuristics.load(probe_file)
    with open(draw_file) as f:
        draw = Draw.from_json(f.read())
    if seed is not None:
        draw = dataclasses.replace(draw, seed=seed)
    held = {tuple(p) for path in glob.glob(os.path.join(os.path.dirname(__file__), "heldout", "*.json"))
            for p in Draw.from_json(pathlib.Path(path).read_text()).problems}
    rng, problems = random.Random(draw.seed), []
    (rows_lo, rows_hi), (cols_lo, cols_hi) = probe.unsplit[0].rows, probe.unsplit[0].cols
    log_uniform = lambda lo, hi: int(round(math.exp(rng.uniform(math.log(lo), math.log(hi + 0.999)))))  # noqa: E731
    cells = unsplit.cells(probe, probe.unsplit[0].outer)
    if only_cell is not None:
        if only_cell not in cells:
            raise ValueError(f"--cell {only_cell[0][0]}:{only_cell[0][1]},{only_cell[1][0]}:{only_cell[1][1]} is not "
                             f"a cell of the probe's span")
        cells = [only_cell]
    for (rows, cols) in cells:
        rows, cols = (max(rows[0], rows_lo), min(rows[1], rows_hi)), (max(cols[0], cols_lo), min(cols[1], cols_hi))
        if rows[0] > rows[1] or cols[0] > cols[1]:
            continue  # past the span the probe's config can launch
        for _ in range(per_cell):
            while True:
                p = (rng.choice(draw.kernels), min(log_uniform(*rows), rows[1]), min(log_uniform(*cols), cols[1]),
                     draw.dtype)
                if p not in held and p not in problems:
                    break
            problems.append(p)
    (rows_lo, rows_hi), (cols_lo, cols_hi) = only_cell or ((rows_lo, rows_hi), (cols_lo, cols_hi))
    write_draw(dataclasses.replace(draw, n=len(problems), problems=tuple(problems), rows=(rows_lo, rows_hi),
                                   cols=(cols_lo, cols_hi)), out)
    print(f"wrote {out}: {len(problems)} problems, {per_cell} in each of {len(cells)} cell(s) of the probe's span")
    return 0


def study_spaces(dbs: list[str]):
    """(kernel, SearchSpace) of every bf16 study in ``dbs`` whose probe recorded its kernels."""
    from inductor_tune.space import SearchSpace

    for db in dbs:
        for study in figdata.open_store(db).studies():
            if study.space_json and study.dtype == "bf16":
                yield study.kernel, SearchSpace.from_json(study.space_json)


def of_type(points: list, reduction_type: str | None) -> list:
    """The A/B points of catalog kernels that have a reduction of ``reduction_type`` (all without one)."""
    from inductor_tune.kernels import CATALOG

    return [p for p in points if reduction_type is None or reduction_type in CATALOG[p.kernel].reductions.split("+")]


def require_gpu_of(heur, dbs) -> None:
    """Exit where a database holds validation records of a GPU other than the file's: an A/B of one GPU model says
    nothing of another's defaults (a fit of an H100 file on H200 records wrote a file until stop 85)."""
    for db in dbs:
        other = figdata.validation_gpu_names(db) - {heur.gpu.name}
        if other:
            sys.exit(f"unsplit_fit: error: {db} holds validation records of {', '.join(sorted(other))}; "
                     f"the file is for {heur.gpu.name}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=("probe", "subset", "stratify", "fit", "prune", "withdraw"))
    ap.add_argument("heuristics", help="probe/fit: the file whose launch rules they keep; subset: the probe")
    ap.add_argument("--config", help="probe: the launch config forced onto the one kernel, FIELD=VALUE,...")
    ap.add_argument("--draw", help="subset, stratify: a training draw")
    ap.add_argument("--per-cell", type=int, default=4, help="stratify: problems per cell (default 4)")
    ap.add_argument("--cell", help="stratify: only this cell, ROWS_LO:ROWS_HI,N_LO:N_HI (one a fit earned)")
    ap.add_argument("--seed", type=int, help="stratify: the new draw's seed (default the draw's own)")
    ap.add_argument("--variant", action="append", default=[],
                    help="fit: PROBE.yaml=DB[,DB...]: a probe file and the validation databases of its A/B")
    ap.add_argument("--evidence", help="fit: validation databases of the probe without a config, comma-separated")
    ap.add_argument("--kernels-from", help="fit: study databases whose probes recorded the one kernel of each catalog "
                                           "kernel with split_reductions=False (its signature and envelope)")
    ap.add_argument("--reduction-type",
                    help="probe/fit: only split reductions of this type (e.g. online_softmax_reduce)")
    ap.add_argument("--outer", action="store_true",
                    help="probe/fit: column reductions (a norm backward's weight gradient) instead of inner ones")
    ap.add_argument("--max-loss", type=float,
                    help="fit: the most loss a problem's noise band may excuse (default: the whole band; 0: a cell "
                         "earns only where no problem reads slower than Inductor's split)")
    ap.add_argument("--every-win", action="store_true",
                    help="fit: a cell earns only where every problem, in every timing of it, won beyond the noise "
                         "floor (a tie is not a win)")
    ap.add_argument("--why", help="withdraw: why the rules go (recorded in the file's provenance)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if args.max_loss is not None and not 0 <= args.max_loss < 1:
        sys.exit("unsplit_fit: error: --max-loss must lie in [0, 1)")
    if os.path.exists(args.out):
        sys.exit(f"unsplit_fit: error: {args.out} exists; write a new file")
    try:
        if args.action == "subset":
            if not args.draw:
                sys.exit("unsplit_fit: error: subset needs --draw")
            return write_subset(args.heuristics, args.draw, args.out)
        if args.action == "stratify":
            if not args.draw:
                sys.exit("unsplit_fit: error: stratify needs --draw")
            return write_stratified(args.heuristics, args.draw, args.per_cell, args.out,
                                    parse_cell(args.cell) if args.cell else None, args.seed)
        heur = heuristics.load(args.heuristics)
        if args.action == "withdraw":
            if not args.why:
                sys.exit("unsplit_fit: error: withdraw needs --why")
            kept = unsplit.withdraw(heur, args.outer, args.why)
            heuristics.dump(kept, args.out)
            print(f"wrote {args.out}: {len(heur.unsplit) - len(kept.unsplit)} unsplit rule(s) withdrawn, "
                  f"{len(kept.unsplit)} kept, digest {kept.digest()}")
            return 0
        if args.action == "probe":
            heuristics.dump(unsplit.probe(heur, parse_config(args.config) if args.config else None,
                                          reduction_type=args.reduction_type, outer=args.outer), args.out)
            return 0
        if not args.evidence:
            sys.exit(f"unsplit_fit: error: {args.action} needs --evidence (the A/B of the probe without a config)")
        sources = args.evidence.split(",")
        require_gpu_of(heur, sources + [db for spec in args.variant for db in spec.partition("=")[2].split(",") if db])
        base = of_type(unsplit.points_from_rows([row for db in sources for row in figdata.validation_rows(db)],
                                                args.outer), args.reduction_type)
        if args.action == "prune":
            pruned, lines = unsplit.prune(heur, base, sources, args.outer)
            print("\n".join(lines))
            heuristics.dump(pruned, args.out)
            print(f"wrote {args.out}: {len(pruned.unsplit)} unsplit rule(s), digest {pruned.digest()}")
            return 0
        variants = []
        for spec in args.variant:
            probe_file, _, dbs = spec.partition("=")
            config = unsplit.probe_config(heuristics.load(probe_file))[0]
            if config is None or not dbs or not args.kernels_from or args.outer:
                sys.exit("unsplit_fit: error: --variant takes PROBE.yaml=DB,... of a probe with a config, and needs "
                         "--kernels-from (no --outer: a column rule takes Inductor's config)")
            records = [rec for db in dbs.split(",") for rec in figdata.validation_records(db)]
            failed = {rec.kernel for rec in records if "failed" in json.loads(rec.result_json)}
            points = of_type(unsplit.points_from_rows([row for db in dbs.split(",")
                                                       for row in figdata.validation_rows(db)]), args.reduction_type)
            kernels = unsplit.configurable_kernels(study_spaces(args.kernels_from.split(",")), failed)
            variants.append(unsplit.Variant(config, tuple(points), kernels))
            sources += dbs.split(",")
            print(f"{config.describe()}: {len(points)} problems timed, kernels that failed to compile: "
                  f"{', '.join(sorted(failed)) or 'none'}; it may apply to {', '.join(sorted(kernels))}")
    except (heuristics.HeuristicsError, StoreError, ValueError) as exc:
        sys.exit(f"unsplit_fit: error: {exc}")
    fitted, lines = unsplit.fit(heur, base, variants, sources, args.reduction_type, args.outer, args.max_loss,
                                 args.every_win)
    print("\n".join(lines))
    heuristics.dump(fitted, args.out)
    print(f"wrote {args.out}: {len(fitted.unsplit)} unsplit rule(s), digest {fitted.digest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
