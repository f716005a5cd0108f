"""``inductor-tune``: the command line.

Here the arguments are parsed and checked as far as they can be on their own (each bad one is a
single ``inductor-tune: error:`` line and exit status 2; cli_args.py), turned into the application layer's
requests (``inductor_tune.app``), and what comes back is printed.  What a command does with files,
databases, GPUs and processes is the application layer's, which the demo and ``tune --gpus`` call
too; keep it there (tests/test_layout.py checks what this module imports).
"""

from __future__ import annotations

import logging
import os
import sys

from .app.common import configure_logging, one_line_message
from .cli_args import (CliError, comma_list, gib_option, gpu_index, gpu_list, int_option, parser, range_option,
                       worker_count)

MAX_GATE_PROBLEMS = 100_000  # the draw alone would fill the memory long before a GPU ran them
DEFAULT_VALIDATE_KERNELS = "rmsnorm_fwd,rmsnorm_bwd,layernorm_fwd,layernorm_bwd,softmax_fwd"


# The commands: a request from the arguments, the application layer's answer printed.

def cmd_gpus(args) -> int:
    from .app.tune import fingerprints

    for i, identity in enumerate(fingerprints()):
        print(f"GPU {i}: {identity.key}")
        for name, value in identity.stored_fields().items():
            print(f"  {name:20s} {value}")
    return 0


def cmd_tune(args) -> int:
    from .app.tune import TuneRequest, tune

    request = TuneRequest(
        args.experiment, sweep=args.command == "sweep", kernels=args.kernels, shapes=args.shapes, dtypes=args.dtypes,
        trials=getattr(args, "trials", None), sampler=getattr(args, "sampler", None), seed=getattr(args, "seed", None),
        warm_start=getattr(args, "warm_start", None), timeout_s=args.timeout_s, trial_timeout_s=args.trial_timeout_s,
        storage=args.storage, workers=args.workers, replay=args.replay, progress=not args.no_progress,
        gpus=gpu_list(args.gpus) if args.gpus else (gpu_index(args.gpu),),
    )
    return print_tune(tune(request))


def print_tune(results) -> int:
    from .show import render

    for result in results:
        if result.error is not None:  # a `tune --gpus` process's one line
            _error(result.error)
        elif result.exit_code is None:
            print(render(list(result.rows)))
            print(f"search throughput: {result.measured} trials in {result.measure_wall_s:.0f} s = {result.rate:.2f} "
                  f"trials/s (the parent sampled and recorded for {result.parent_busy_s:.0f} s of it)")
            for line in result.failed:
                print(f"inductor-tune: {line}", file=sys.stderr)
    return max(result.status for result in results)


def cmd_show(args) -> int:
    from .app.results import show

    rows = show(args.db, gpu=args.gpu, kernel=args.kernel)
    if args.csv or args.json:
        from .tables import render_studies

        print(render_studies(rows, "csv" if args.csv else "json"), end="")
        return 0
    from .show import render

    print(render(rows, wide=args.wide, markdown=args.markdown))
    return 0


def cmd_report(args) -> int:
    from .app.results import report

    return print_report(report(args.db, args.out, gpu=args.gpu, heuristics=args.heuristics))


def print_report(report) -> int:
    print(f"wrote {report.html} and {len(report.figures)} figures")
    for note in report.notes:
        print(note)
    return 0


def cmd_validate(args) -> int:
    from . import experiment as experiment_mod
    from .app import validate as app
    from .problem import Problem

    if args.rounds < 2:
        raise CliError("--rounds must be at least 2 (the spread needs two rounds)")
    if args.models is not None:
        return cmd_validate_models(args)
    if args.draw is not None:
        given = [flag for flag, value in (("--kernels", args.kernels), ("--dtypes", args.dtypes)) if value is not None]
        if given or args.seed != "0":
            raise CliError(f"--draw scores the problems its file holds: drop {', '.join(given or ['--seed'])}")
    problems, gate = (), None
    if args.suite:
        problems = app.suite_problems(args.suite, args.kernels, args.dtypes)
    elif args.shapes is not None:
        kernels = experiment_mod.parse_kernels(args.kernels or DEFAULT_VALIDATE_KERNELS)
        shapes = experiment_mod.parse_shapes(args.shapes)
        dtypes = experiment_mod.parse_dtypes(args.dtypes or "bf16")
        problems = tuple(Problem(k, s, d) for k in kernels for d in dtypes for s in shapes)
    elif args.draw is None:
        gate = _gate_request(args)
    if args.random is None and (args.rows or args.cols or args.draw_out or args.avoid_draw):
        raise CliError("--rows, --cols, --draw-out and --avoid-draw concern the draw of --random; give --random N too")
    dbs = tuple(d for d in args.db.split(",") if d.strip()) if args.db else None
    request = app.ValidateRequest(
        args.heuristics, problems, gate, dbs=dbs, storage=args.storage, rounds=args.rounds, gpu=gpu_index(args.gpu),
        workers=worker_count(args.workers), progress=not args.no_progress,
        draw_out=args.draw_out, draw_in=args.draw,
    )

    def announce(draw, avoided: int) -> None:
        origin = f" read from {args.draw}" if args.draw else ""
        print(f"gate draw{origin}: seed {draw.seed}, {draw.n} {draw.dtype} problems of {len(draw.kernels)} kernel(s), "
              f"rows {draw.rows[0]}..{draw.rows[1]}, N {draw.cols[0]}..{draw.cols[1]}, at most "
              f"{draw.max_bytes / 2**30:g} GiB resident each, none at the {avoided} shapes of "
              f"{_draw_databases(args.draw, dbs, draw.avoided_from)}")

    return print_validation(app.validate(request, on_draw=announce))


def _draw_databases(draw_file: str | None, dbs: tuple[str, ...] | None, avoided_from: tuple[str, ...]) -> str:
    # A committed draw is checked against the databases named now (or the file's provenance), which need
    # not be the ones it was drawn from.
    if draw_file:
        return ", ".join(dbs) if dbs else "the heuristic file's provenance databases"
    return ", ".join(avoided_from) or "no database"


def _gate_request(args):
    from . import experiment as experiment_mod
    from .app.validate import GateRequest
    from .gate import COLS, ROWS

    count, seed = int_option("--random", args.random, 1), int_option("--seed", args.seed, 0)
    if count > MAX_GATE_PROBLEMS:
        raise CliError(f"--random must be at most {MAX_GATE_PROBLEMS} problems (got {count})")
    kernels = experiment_mod.parse_kernels(args.kernels) if args.kernels else None
    dtypes = experiment_mod.parse_dtypes(args.dtypes or "bf16")
    if len(dtypes) != 1:
        raise CliError("--random draws problems of one dtype: give one with --dtypes")
    return GateRequest(count, seed, kernels, dtypes[0], gib_option(args.max_gib), range_option("--rows", args.rows, ROWS),
                       range_option("--cols", args.cols, COLS), comma_list(args.avoid_draw) if args.avoid_draw else ())


def print_validation(result) -> int:
    from .validate import ValidationRow, render

    if result.draw is not None and result.gate is None:
        print(f"draw written to {result.storage}; nothing measured")
        return 0
    if result.gate is not None:
        touched = [r for r in result.rows if isinstance(r, ValidationRow) and r.heuristics_applied]
        if touched:
            print(render(touched))
        print(result.gate.render())
        if result.resumed:
            print(f"resumed: {result.resumed} of the {result.gate.drawn} problems were read back from the records an "
                  "earlier run of this file and draw stored there, the rest measured now")
        print(f"records stored in {result.storage} (each with the draw, under \"gate\")")
        return 0 if result.gate.passed else 1
    print(render(list(result.rows)))
    print(f"records stored in {result.storage}")
    regressed = [f"{r.kernel} {r.shape}" for r in result.rows if r.regressed]
    if regressed:
        print(f"inductor-tune: heuristics regress against Inductor's default beyond noise at: {', '.join(regressed)}",
              file=sys.stderr)
        return 1
    return 0


def cmd_validate_models(args) -> int:
    from . import models
    from .app.validate import ModelsRequest, validate_models

    ignored = [flag for flag, value in (("--kernels", args.kernels), ("--dtypes", args.dtypes), ("--db", args.db),
                                        ("--workers", args.workers)) if value is not None]
    if ignored:
        raise CliError(f"--models does not take {', '.join(ignored)}")
    try:
        names = models.parse_names(args.models)
    except models.ModelsError as exc:
        raise CliError(str(exc)) from None
    result = validate_models(ModelsRequest(args.heuristics, tuple(names), args.storage, args.rounds,
                                           gpu_index(args.gpu), progress=not args.no_progress))
    print(models.render(result.results))
    print(f"records stored in {result.storage}")
    bad = [f"{r.name} ({r.status})" for r in result.results if r.status != "ok"]
    if bad:
        print(f"inductor-tune: heuristics fail or regress on whole models: {'; '.join(bad)}", file=sys.stderr)
        return 1
    return 0


def cmd_bench_search(args) -> int:
    from .app.results import BenchRequest, bench_search
    from .benchsearch import render

    result = bench_search(BenchRequest(args.db, comma_list(args.strategies), args.seeds, args.budget, args.out,
                                       progress=not args.no_progress))
    print(f"replayed from {args.db}: {len(result.sweeps)} sweeps, budget {args.budget} trials, up to {args.seeds} seeds")
    print(render(list(result.summaries)))
    for note in result.notes:
        print(f"note: {note}")
    print(f"wrote {args.out}/fraction_of_optimum.png and {args.out}/results.json")
    return 0


def cmd_demo(args) -> int:
    from .app.demo import DemoRequest, run

    if args.trials < 2:
        raise CliError("--trials must be at least 2")
    printers = {"tune": print_tune, "crossmeasure": print_crossmeasure, "distill": print_distill,
                "report": print_report, "patch": print_patch}
    written = run(DemoRequest(args.out, args.trials), on_step=lambda name, result: printers[name](result))
    print("demo finished; everything was replayed from db/sweeps.sqlite (measured on an H200), nothing measured here:")
    for what, path in written.items():
        print(f"  {what:12s} {path}")
    return 0


def cmd_crossmeasure(args) -> int:
    from . import experiment as experiment_mod
    from .app.crossmeasure import CrossmeasureRequest, crossmeasure

    if args.rounds < 2 or min(args.top, args.max_configs) < 1 or \
            min(args.neighbours, args.span_probes, args.edge_probes, args.hull_probes, args.fill) < 0:
        raise CliError("--rounds must be at least 2, --top and --max-configs at least 1, --neighbours, "
                       "--span-probes, --edge-probes, --hull-probes and --fill at least 0")
    if args.fill and (args.span_probes or args.edge_probes):
        raise CliError("--fill times the shapes already measured; it does not go with --span-probes or --edge-probes")
    if args.fill_share is not None and not args.fill:
        raise CliError("--fill-share goes with --fill")
    if args.fill_shapes is not None and not args.fill:
        raise CliError("--fill-shapes goes with --fill")
    if args.fill_shapes is not None and args.fill_shapes < 1:
        raise CliError(f"--fill-shapes is a number of shapes, at least 1, not {args.fill_shapes}")
    if args.fill_share is not None and not 0 <= args.fill_share <= 1:
        raise CliError(f"--fill-share is a share of a set's shapes, 0 to 1, not {args.fill_share:g}")
    probe_max_gib = gib_option(args.max_gib)
    request = CrossmeasureRequest(
        tuple(args.db), args.storage, frozenset(experiment_mod.parse_kernels(args.kernels)) if args.kernels else None,
        args.top, args.neighbours, args.max_configs, args.rounds,
        experiment_mod.parse_shapes(args.hold_out) if args.hold_out else (),
        () if args.probes == "none" else comma_list(args.probes),
        gpu_index(args.gpu), worker_count(args.workers), args.replay, progress=not args.no_progress,
        span_probes=args.span_probes, edge_probes=args.edge_probes, hull_probes=args.hull_probes, fill=args.fill,
        fill_share=args.fill_share, fill_shapes=args.fill_shapes,
        seed=int_option("--seed", args.seed, 0),
        probe_max_gib=probe_max_gib,
        avoid_draws=comma_list(args.avoid_draw) if args.avoid_draw else (), candidates_from=args.candidates_from,
    )
    return print_crossmeasure(crossmeasure(request, plan_only=args.plan_only))


def print_crossmeasure(result) -> int:
    from .crossmeasure import describe

    print(describe(list(result.items)))
    if result.counts is None:
        print(f"{len(result.items)} shapes, {sum(len(i.configs) for i in result.items)} (shape, config) pairs")
        return 0
    counts, request = result.counts, result.request
    print(f"{counts['stored']} shapes measured, {counts['skipped']} already measured, {counts['failed']} failed; "
          f"records in {result.storage} "
          f"(next: inductor-tune distill {' '.join(request.dbs)} {request.storage} --gpu ..."
          + (f" --candidates-from {request.candidates_from})" if request.candidates_from else ")"))
    return 0 if result.ok else 1


def cmd_distill(args) -> int:
    from . import experiment as experiment_mod
    from .app.rules import DistillRequest, distill

    if not 0 <= args.min_coverage <= 1 or args.min_shapes < 1:
        raise CliError("--min-coverage must lie in [0, 1] and --min-shapes be at least 1")
    if not 0 <= args.max_excused_loss < 1:
        raise CliError("--max-excused-loss must lie in [0, 1)")
    hold_out = experiment_mod.parse_shapes(args.hold_out) if args.hold_out else ()
    workers = worker_count(args.workers) or os.cpu_count() or 1
    return print_distill(distill(DistillRequest(tuple(args.db), args.gpu, args.out, args.min_coverage, args.min_shapes,
                                                args.allow_replayed, hold_out, args.candidates_from, workers,
                                                not args.no_folds, args.max_excused_loss)))


def print_distill(result) -> int:
    heur = result.heuristics
    changing = sum(r.config is not None for r in heur.rules)
    print(f"wrote {result.out}: {len(heur.rules)} rules ({changing} change Inductor's config) for {heur.gpu.fingerprint}")
    for rule in heur.rules:
        ev = rule.evidence
        gain = f"  gain {ev.gain_geomean:.3f} [{ev.gain_min:.3f}-{ev.gain_max:.3f}], noise {ev.noise:.3f}" \
            if rule.config is not None else ""
        print(f"  {rule.describe()}{gain}")
    if "skipped" in heur.holdout:
        print(f"held out: {heur.holdout['skipped']}")
    for scheme, scored in heur.holdout.items():
        if isinstance(scored, dict) and "summary" in scored:
            s = scored["summary"]["all"]
            known = (f"; where known: geomean speedup {s['geomean_speedup']:.3f}, worst {s['worst_speedup']:.3f}, "
                     f"{s['geomean_vs_best_found']:.3f} of the best found (worst {s['worst_vs_best_found']:.3f})"
                     if "geomean_speedup" in s else "")
            print(f"held out ({scheme}): {s['shapes']} shapes: {s['measured']} measured, {s['unmeasured']} "
                  f"unmeasured, {s['keep_default']} keep default, {s['no_rule']} no rule{known}")
    return 0


def cmd_patch(args) -> int:
    from .app.rules import PatchRequest, patch

    return print_patch(patch(PatchRequest(args.heuristics, args.out, args.torch_root)))


def print_patch(result) -> int:
    heur = result.heuristics
    print(f"wrote {result.out} against torch {result.torch_version} ({len(heur.table().rules)} config rules"
          f"{f', {len(heur.unsplit)} unsplit' if heur.unsplit else ''} for {heur.gpu.name})")
    print(f"check: cd {result.torch_root} && git apply --check {os.path.abspath(result.out)}")
    return 0


HANDLERS = {
    "gpus": cmd_gpus, "tune": cmd_tune, "sweep": cmd_tune, "show": cmd_show, "report": cmd_report,
    "distill": cmd_distill, "crossmeasure": cmd_crossmeasure, "patch": cmd_patch, "validate": cmd_validate,
    "bench-search": cmd_bench_search, "demo": cmd_demo,
}


# Studies, crossmeasure and gate runs skip what a storage already holds; validate of a suite or of models measures
# every problem again (a stopped model run cannot be summarised from part of its records).
RERUN = "re-run the same command to start again"
INTERRUPTED = {
    "tune": "re-run the same command to resume",
    "crossmeasure": "re-run the same command to resume",
    "validate": "the records stored so far stay; re-running the command resumes a --random or --draw run and "
                "measures a suite's or the models' problems again",
}


def main(argv: list[str] | None = None) -> int:
    args = None
    try:
        args = parser().parse_args(argv)
        # Quiet by default (a progress bar, the result, warnings); -v: INFO; -vv: DEBUG and Optuna's own
        # chatter; -q: errors only.
        configure_logging(logging.ERROR if args.quiet else logging.WARNING - 10 * min(args.verbose, 2))
        if args.quiet and hasattr(args, "no_progress"):
            args.no_progress = True
        return HANDLERS[args.command](args)
    except KeyboardInterrupt:
        command = getattr(args, "command", None)
        print(f"inductor-tune: interrupted; {INTERRUPTED.get(command, RERUN)}", file=sys.stderr)
        return 130
    except Exception as exc:
        message = one_line_message(exc)  # which errors are one line is looked up only once one is raised
        if message is None:
            raise
        return _error(message)


def _error(message: str) -> int:
    # One line whatever the message holds (a path or a database's text may carry line breaks).
    print(f"inductor-tune: error: {' '.join(message.split())}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
