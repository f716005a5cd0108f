"""``inductor-tune``: the command line."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
import time

from . import __version__

log = logging.getLogger("inductor_tune")

# The replay suggested here writes into a database of its own: replayed into the recording itself,
# its studies would upgrade and mix with the committed measurements (cmd_tune refuses that too).
NO_GPU = (
    "no CUDA GPU is visible here: `{cmd}` measures on a GPU. Without one you can read recorded studies "
    "with `inductor-tune show db/quack.sqlite`, replay them into a separate database with `inductor-tune tune "
    "experiments/quack.yaml --replay db/quack.sqlite --storage /tmp/quack-replay.sqlite`, or run the "
    "tests with `bash .ci/run`."
)


# Kinds whose kernels run over the rows (crossmeasure --probes); outer reductions run over the columns.
PROBEABLE_KINDS = ("mix_order", "inner_persistent", "inner_looped")

SWEEP_TRIALS = 10**9  # a sweep ends when its grid is exhausted


class CliError(Exception):
    """An error reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse's errors as the one line every other bad input gets (it prints its usage and exits)."""

    def error(self, message: str):
        command = self.prog.removeprefix("inductor-tune").strip()
        raise CliError(f"{command + ': ' if command else ''}{message} (see `{self.prog} --help`)")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="inductor-tune",
        description="Tune the launch configs of the reduction kernels TorchInductor generates for norm layers.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    loudness = p.add_mutually_exclusive_group()
    loudness.add_argument("-v", "--verbose", action="count", default=0,
                          help="more logging: -v progress details (INFO), -vv debug and Optuna's own")
    loudness.add_argument("-q", "--quiet", action="store_true",
                          help="only the result and errors: no progress bar, no warnings")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("gpus", help="fingerprint of each visible GPU (name, SMs, capability, memory, versions)")

    t = sub.add_parser("tune", help="run (or resume) the tuning studies of an experiment on the local GPU")
    _run_arguments(t, sampled=True)
    w = sub.add_parser(
        "sweep", help="measure every legal config of the experiment's space or its declared sub-grid ('grid:' "
        "in the YAML), in sweep studies of their own (for replay and search-strategy benchmarks)",
    )
    _run_arguments(w, sampled=False)

    s = sub.add_parser("show", help="per study: Inductor default vs best found, GB/s, %% of ceiling, speedup")
    s.add_argument("db", help="SQLite file or SQLAlchemy URL")
    s.add_argument("--gpu", help="only studies whose GPU name or fingerprint contains this")
    s.add_argument("--kernel", help="only this kernel")
    s.add_argument("--wide", action="store_true", help="also print the best config")
    fmt = s.add_mutually_exclusive_group()
    fmt.add_argument("--markdown", action="store_true", help="print a Markdown table")
    fmt.add_argument("--csv", action="store_true", help="print the table as CSV: every column, unrounded")
    fmt.add_argument("--json", action="store_true", help="print the table as a JSON list: every column, unrounded")

    r = sub.add_parser("report", help="figures (PNG) and one self-contained HTML page for a database")
    r.add_argument("db", help="SQLite file or SQLAlchemy URL")
    r.add_argument("--gpu", help="only studies whose GPU name or fingerprint contains this")
    r.add_argument("--out", help="output folder (default reports/<database name>/)")

    d = sub.add_parser("distill", help="distil one GPU's studies into per-kernel-kind rules (a heuristic YAML file)")
    d.add_argument("db", nargs="+", help="SQLite files or SQLAlchemy URLs")
    d.add_argument("--gpu", required=True, help="GPU fingerprint or (part of its) name, e.g. H200")
    d.add_argument("--out", help="heuristic file to write (default heuristics/<gpu>.yaml)")
    d.add_argument("--min-coverage", type=float, default=1.0,
                   help="fraction of a size group's shapes a rule's config must have been timed at, interleaved "
                   "with the default (default 1: every shape; `crossmeasure` times them)")
    d.add_argument("--allow-replayed", action="store_true",
                   help="also fit replayed studies (the CPU demo); recorded in the file's provenance")
    d.add_argument("--min-shapes", type=int, default=1,
                   help="fewest measured shapes a rule may rest on (default 1)")
    d.add_argument("--hold-out", metavar="SHAPES",
                   help="comma-separated MxN shapes (every kernel) kept out of the fit and scored on instead")

    c = sub.add_parser(
        "crossmeasure", help="on the GPU: time each size group's best configs at every shape of the group "
        "(interleaved with Inductor's default), the evidence `distill` needs to choose robust rules",
    )
    c.add_argument("db", nargs="+", help="databases with the studies (SQLite files or SQLAlchemy URLs)")
    c.add_argument("--storage", default="db/crossmeasure.sqlite",
                   help="where the records go (default db/crossmeasure.sqlite); pass it to `distill` too")
    c.add_argument("--kernels", help="only these kernels (comma-separated)")
    c.add_argument("--top", type=int, default=3, help="best configs taken from each shape of a group (default 3)")
    c.add_argument("--neighbours", type=int, default=2,
                   help="best configs taken from each shape of the adjacent size groups (default 2)")
    c.add_argument("--max-configs", type=int, default=10, help="configs timed per shape at most (default 10)")
    c.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds (default 5)")
    c.add_argument("--hold-out", metavar="SHAPES",
                   help="comma-separated MxN shapes (every kernel) held out: they propose no config and place no "
                   "probe; they are timed with the training shapes' candidates (as `distill --hold-out` scores)")
    c.add_argument("--probes", default="mix_order", metavar="KINDS",
                   help="kernel kinds whose group configs are also timed at 3/2 of each studied shape's rows, "
                   "where no study ran (comma-separated: mix_order, inner_persistent, inner_looped; 'none'; "
                   "default mix_order, whose program count follows the rows)")
    c.add_argument("--gpu", type=int, default=0, help="CUDA device index (default 0)")
    c.add_argument("--workers", type=int, help="worker processes (default: CPU cores - 1)")
    c.add_argument("--replay", metavar="DB", help="answer from measurements recorded in DB (labelled replayed)")
    c.add_argument("--plan-only", metavar="GPU", help="print the plan for the studies of this GPU and stop (no GPU)")
    c.add_argument("--no-progress", action="store_true", help="no progress bar")

    v = sub.add_parser(
        "validate", help="measure a heuristic file on the GPU against Inductor's default, the best found and peers",
    )
    v.add_argument("heuristics", help="heuristic YAML written by `distill`")
    which = v.add_mutually_exclusive_group(required=True)
    which.add_argument("--suite", help="experiment name or YAML whose shapes to use, e.g. quack")
    which.add_argument("--shapes", help="comma-separated MxN shapes (any, seen by a study or not)")
    which.add_argument("--random", metavar="N", help="the generalization gate: N random problems (of --kernels, "
                       "default every kernel, and one dtype) at shapes no study or crossmeasure record of the --db "
                       "databases ran; exits 1 on any failure to compile or check, or a regression")
    v.add_argument("--seed", default="0", help="--random: seed of the draw (default 0)")
    v.add_argument("--rows", metavar="LO:HI", help="--random: draw rows log-uniform in this range (default 1:1000000)")
    v.add_argument("--cols", metavar="LO:HI", help="--random: draw N log-uniform in this range (default 128:262144)")
    v.add_argument("--max-gib", type=float, default=4.0, help="--random: largest memory a problem may keep "
                   "resident on the GPU, GiB (default 4)")
    from .models import CATALOG as MODEL_CATALOG

    which.add_argument("--models", nargs="?", const="all", metavar="NAMES",
                       help="whole-model training steps instead of kernels: comma-separated models "
                       f"({', '.join(MODEL_CATALOG)}) or all (the default)")
    v.add_argument("--kernels", help="comma-separated kernels (default: the suite's, else the five tuned ones)")
    v.add_argument("--dtypes", help="comma-separated dtypes (default: the suite's, else bf16)")
    v.add_argument("--db", help="comma-separated databases with studies for the per-shape best found "
                   "(default: the heuristic file's provenance databases)")
    v.add_argument("--storage", default="db/validation.sqlite", help="where validation records go "
                   "(default db/validation.sqlite)")
    v.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds (default 5)")
    v.add_argument("--gpu", type=int, default=0, help="CUDA device index (default 0)")
    v.add_argument("--workers", type=int, help="worker processes (default: min(problems, 8))")
    v.add_argument("--no-progress", action="store_true", help="no progress bar")

    b = sub.add_parser("bench-search", help="compare search strategies by replaying recorded sweeps (no GPU)")
    b.add_argument("db", nargs="?", default="db/sweeps.sqlite", help="database with sweeps (default db/sweeps.sqlite)")
    b.add_argument("--strategies", default="tpe-warm-any,tpe,random,cmaes,grid,coordinate",
                   help="comma-separated: tpe-warm-any (the tuner's default), tpe (its baseline), random, cmaes, "
                   "gp (slow: one seed), grid, coordinate, or another TPE variant (tpe-warm, tpe-start, ...)")
    b.add_argument("--seeds", type=int, default=20, help="seeds per shape and strategy (default 20)")
    b.add_argument("--budget", type=int, default=60, help="trials per run (default 60)")
    b.add_argument("--out", default="reports/bench-search", help="folder for the plot and the JSON results")
    b.add_argument("--no-progress", action="store_true", help="no progress bar")

    de = sub.add_parser("demo", help="the whole pipeline on a CPU, replayed from the committed H200 sweeps")
    de.add_argument("--out", help="folder for the results (default: a new temporary folder)")
    de.add_argument("--trials", type=int, default=12, help="trials per replayed study (default 12)")

    pa = sub.add_parser("patch", help="unified diff that builds a heuristic file's rules into Inductor's sources")
    pa.add_argument("heuristics", help="heuristic YAML written by `distill`")
    pa.add_argument("--out", help="patch file to write (default patches/<gpu>-torch<version>.patch)")
    pa.add_argument("--torch-root", help="folder holding the torch/ sources to diff against (default: installed torch)")
    return p


def _run_arguments(t: argparse.ArgumentParser, sampled: bool) -> None:
    t.add_argument("experiment", help="experiment YAML, e.g. experiments/quack.yaml")
    t.add_argument("--kernels", help="comma-separated kernel names (overrides the file)")
    t.add_argument("--shapes", help="comma-separated MxN shapes, e.g. 32768x4096,8192x65536")
    t.add_argument("--dtypes", help="comma-separated dtypes: bf16, fp16, fp32")
    if sampled:
        t.add_argument("--trials", type=int, help="measured trials per study, Inductor's default included")
        t.add_argument("--sampler", help="tpe (default), random, grid, cmaes or gp")
        t.add_argument("--seed", type=int, help="sampler seed (combined with each study's name)")
        t.add_argument("--warm-start", type=int, metavar="N", help="a fresh study first measures the best configs of "
                       "up to N finished studies of other shapes (default 3; 0: none)")
    t.add_argument("--timeout", type=float, dest="timeout_s", help="wall-time budget per study, seconds")
    t.add_argument("--trial-timeout", type=float, dest="trial_timeout_s", help="kill a trial after this many seconds")
    t.add_argument("--storage", help="SQLAlchemy URL (default sqlite:///db/<experiment>.sqlite)")
    t.add_argument("--gpu", type=int, default=0, help="CUDA device index to tune on (default 0)")
    t.add_argument(
        "--gpus", help="comma-separated device indices: one process per GPU, sharing the study set (e.g. 0,1)"
    )
    t.add_argument("--workers", type=int, help="compile/measure worker processes (default: CPU cores - 1)")
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.add_argument(
        "--replay", metavar="DB",
        help="answer trials from the measurements recorded in DB instead of the GPU (no GPU needed); "
        "results are labelled replayed and stored in studies of their own",
    )


def _storage_url(text: str) -> str:
    return text if "://" in text else f"sqlite:///{text}"


def cmd_gpus(args) -> int:
    torch = _import_torch("gpus")
    if not torch.cuda.is_available():
        raise CliError(NO_GPU.format(cmd="gpus"))
    from .evaluate import gpu_fingerprint
    from .search import fingerprint_key

    for i in range(torch.cuda.device_count()):
        fp = gpu_fingerprint(i)
        print(f"GPU {i}: {fingerprint_key(fp)}")
        for key, value in fp.items():
            print(f"  {key:20s} {value}")
    return 0


def _gpu_list(text: str) -> list[int]:
    try:
        gpus = [int(g) for g in text.split(",") if g.strip()]
    except ValueError:
        raise CliError(f"--gpus {text!r} is not a comma-separated list of device indices, e.g. 0,1") from None
    if not gpus or len(set(gpus)) != len(gpus) or min(gpus) < 0:
        raise CliError(f"--gpus {text!r} must name distinct device indices, e.g. 0,1")
    return gpus


def _gpu_index(gpu: int) -> int:
    if gpu < 0:
        raise CliError(f"--gpu {gpu}: a device index is 0 or more")
    return gpu


def _check_replay(replay: str, storage_url: str, problems=()) -> None:
    """Refuse a replay that would write into its own recording, or that cannot answer: one line each,
    here in the parent (a worker failing on it would only say that it exited during start-up)."""
    from .replay import NotRecorded, ReplayBackend
    from .store import check_url, same_database

    source = _storage_url(replay)
    check_url(source, create=False)
    if same_database(source, storage_url):
        raise CliError(f"--replay {replay} is also the storage: a replay never writes into the recording it reads; "
                       "pass a separate --storage, e.g. --storage /tmp/replay.sqlite")
    try:
        backend = ReplayBackend(source)
        try:
            for problem in problems:
                backend.recorded_configs(problem)
        finally:
            backend.store.engine.dispose()
    except NotRecorded as exc:
        raise CliError(f"--replay: {exc}") from None


def cmd_tune_gpus(args, gpus: list[int]) -> int:
    """One `tune --gpu i` process per GPU; study leases make them share the study set."""
    import subprocess

    from . import experiment as experiment_mod
    from .store import Store

    exp = experiment_mod.load(args.experiment)
    Store(_storage_url(args.storage) if args.storage else exp.storage_url)  # schema once, before the children

    base, skip = [], False
    for arg in args.argv:  # the same command line, less --gpus
        if skip:
            skip = False
        elif arg == "--gpus":
            skip = True
        elif not arg.startswith("--gpus="):
            base.append(arg)
    per_gpu_workers = [] if args.workers else ["--workers", str(max(1, (os.cpu_count() or 2) // len(gpus) - 1))]
    procs = [
        subprocess.Popen([sys.executable, "-m", "inductor_tune", *base, "--gpu", str(g), *per_gpu_workers])
        for g in gpus
    ]
    codes = [p.wait() for p in procs]
    return max(codes)


def cmd_tune(args) -> int:
    from . import experiment as experiment_mod

    sweep = args.command == "sweep"
    sampler = "grid" if sweep else args.sampler
    if args.replay and sampler is None:
        # A replay answers only configs the recording has: a sampler left to roam asks mostly for
        # others (TPE: 15-18 of 20 trials failed as NotRecorded on db/quack.sqlite), so unless one is
        # asked for, the study walks the recorded configs (search.Tuner._grid_configs).
        sampler = "grid"
    exp = experiment_mod.with_overrides(
        experiment_mod.load(args.experiment), kernels=args.kernels, shapes=args.shapes, dtypes=args.dtypes,
        trials=getattr(args, "trials", None), timeout_s=args.timeout_s, trial_timeout_s=args.trial_timeout_s,
        sampler=sampler, storage=args.storage and _storage_url(args.storage),
        seed=getattr(args, "seed", None), workers=args.workers, warm_start=getattr(args, "warm_start", None),
    )
    if sweep:  # every legal config: no trial budget
        exp = dataclasses.replace(exp, sweep=True, trials=SWEEP_TRIALS)
    gpus = _gpu_list(args.gpus) if args.gpus else [_gpu_index(args.gpu)]
    from .store import check_url

    if args.replay:  # before the storage is touched (created, or its folder made)
        _check_replay(args.replay, exp.storage_url, exp.problems())
    if exp.storage_url.startswith("sqlite:///db/"):
        os.makedirs("db", exist_ok=True)
    check_url(exp.storage_url, create=True)
    torch = _import_torch(args.command)
    from .choices import check_torch_supported
    from .workers import BackendSpec

    check_torch_supported()

    if args.replay:
        backend = BackendSpec("replay", _storage_url(args.replay))
        if args.gpus:
            return cmd_tune_gpus(args, gpus)
    else:
        backend = BackendSpec()
        if not torch.cuda.is_available():
            raise CliError(NO_GPU.format(cmd=args.command))
        for gpu in gpus:
            if not 0 <= gpu < torch.cuda.device_count():
                raise CliError(f"GPU {gpu} does not exist: {torch.cuda.device_count()} GPU(s) visible")
        if args.gpus:
            return cmd_tune_gpus(args, gpus)
    from tqdm import tqdm

    from .search import Tuner
    from .store import Store
    from .workers import WorkerPool

    store = Store(exp.storage_url, create=True)
    n_workers = exp.workers or max(1, (os.cpu_count() or 2) - 1)
    problems = exp.problems()
    log.info("%d studies x %d trials on GPU %d with %d workers -> %s", len(problems), exp.trials, args.gpu,
             n_workers, exp.storage_url)
    start = time.monotonic()
    with WorkerPool(args.gpu, n_workers, exp.trial_timeout_s, backend=backend) as pool, tqdm(
        total=None if sweep else len(problems) * exp.trials, disable=args.no_progress, unit="trial",
        desc="sweeping" if sweep else "tuning",
    ) as bar:
        tuner = Tuner(exp, pool, store, progress=bar)
        names = tuner.run()
    wall = time.monotonic() - start
    rate = tuner.measured / tuner.measure_wall_s if tuner.measure_wall_s else 0.0
    log.info("measured %d trials in %.0f s of search (%.2f trials/s); %.0f s in all", tuner.measured,
             tuner.measure_wall_s, rate, wall)
    from .show import render, study_rows

    print(render([r for r in study_rows(store) if any(n.startswith(f"{r.kernel}/{r.shape}/{r.dtype}@") for n in names)]))
    print(f"search throughput: {tuner.measured} trials in {tuner.measure_wall_s:.0f} s = {rate:.2f} trials/s "
          f"(the parent sampled and recorded for {tuner.parent_busy_s:.0f} s of it)")
    for line in tuner.failed:
        print(f"inductor-tune: {line}", file=sys.stderr)
    return 1 if tuner.failed else 0


def cmd_show(args) -> int:
    from .show import render, study_rows
    from .store import Store

    store = Store(_storage_url(args.db), create=False)
    rows = study_rows(store, gpu=args.gpu, kernel=args.kernel)
    if not rows:
        raise CliError(f"{args.db} has no studies matching the filters")
    if args.csv or args.json:
        from .tables import render_studies

        print(render_studies(rows, "csv" if args.csv else "json"), end="")
        return 0
    print(render(rows, wide=args.wide, markdown=args.markdown))
    return 0


def cmd_report(args) -> int:
    import matplotlib

    matplotlib.use("Agg")  # files only; never open a window (or need a display) from the CLI
    from .report import ReportError, build

    out = args.out or os.path.join("reports", os.path.splitext(os.path.basename(args.db.split("://")[-1]))[0])
    if os.path.exists(out) and not os.path.isdir(out):
        raise CliError(f"--out {out} exists and is not a folder")
    try:
        report = build(args.db, out, gpu=args.gpu)
    except ReportError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"cannot write the report to {out}: {exc}") from None
    print(f"wrote {report.html} and {len(report.figures)} figures")
    for note in report.notes:
        print(note)
    return 0


def _write_atomic(path: str, text: str) -> None:
    """Replace ``path`` only with a complete file: write beside it, then rename."""
    import tempfile

    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".inductor-tune-", dir=folder)
    os.fchmod(fd, 0o644)  # mkstemp makes it private; patches are meant to be shared
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


MAX_GATE_PROBLEMS = 100_000
DEFAULT_VALIDATE_KERNELS = "rmsnorm_fwd,rmsnorm_bwd,layernorm_fwd,layernorm_bwd,softmax_fwd"


def cmd_validate(args) -> int:
    from . import experiment as experiment_mod
    from .heuristics import HeuristicsError, load
    from .problem import Problem
    from .records import TimingSpec
    from .store import Store, check_url

    try:
        heur = load(args.heuristics)
    except (HeuristicsError, OSError) as exc:
        raise CliError(str(exc)) from None
    if args.rounds < 2:
        raise CliError("--rounds must be at least 2 (the spread needs two rounds)")
    if args.models is not None:
        return cmd_validate_models(args)
    if args.suite:
        path = args.suite if os.path.exists(args.suite) else os.path.join("experiments", f"{args.suite}.yaml")
        suite = experiment_mod.load(path)
        kernels = experiment_mod.parse_kernels(args.kernels) if args.kernels else suite.kernels
        shapes, dtypes = suite.shapes, experiment_mod.parse_dtypes(args.dtypes) if args.dtypes else suite.dtypes
    elif args.shapes is not None:
        kernels = experiment_mod.parse_kernels(args.kernels or DEFAULT_VALIDATE_KERNELS)
        shapes = experiment_mod.parse_shapes(args.shapes)
        dtypes = experiment_mod.parse_dtypes(args.dtypes or "bf16")
    else:
        count, seed = _int_option("--random", args.random, 1), _int_option("--seed", args.seed, 0)
        if count > MAX_GATE_PROBLEMS:  # the draw alone would fill the memory long before a GPU ran them
            raise CliError(f"--random must be at most {MAX_GATE_PROBLEMS} problems (got {count})")
        kernels = experiment_mod.parse_kernels(args.kernels) if args.kernels else None
        dtypes = experiment_mod.parse_dtypes(args.dtypes or "bf16")
        if len(dtypes) != 1:
            raise CliError("--random draws problems of one dtype: give one with --dtypes")
    if args.random is None and (args.rows or args.cols):
        raise CliError("--rows and --cols bound the draw of --random; give --random N too")
    dbs = [d for d in args.db.split(",") if d.strip()] if args.db else list(heur.provenance.get("databases", []))
    db_urls = [_storage_url(d) for d in dbs]
    _check_readable(db_urls)
    _gpu_index(args.gpu)
    if args.workers is not None and args.workers < 1:
        raise CliError("--workers must be at least 1")
    draw = _gate_draw(count, seed, kernels, dtypes[0], args.max_gib, dbs, db_urls, args.rows, args.cols) \
        if args.random is not None else None
    storage = _storage_url(args.storage)
    _refuse_storage_among(storage, dbs, "db/validation.sqlite")
    check_url(storage, create=True)
    torch = _import_torch("validate")
    if not torch.cuda.is_available():
        raise CliError(NO_GPU.format(cmd="validate"))
    from tqdm import tqdm

    from .validate import render, run_validation
    from .workers import WorkerPool

    problems = draw.as_problems() if draw else [Problem(k, s, d) for k in kernels for d in dtypes for s in shapes]
    # Each worker holds every variant of its problem compiled and captured at once (see validate.py).
    largest = max(p.shape.rows * p.shape.cols * (4 if p.dtype == "fp32" else 2) for p in problems)
    fit = int(0.85 * torch.cuda.get_device_properties(args.gpu).total_memory // (1.5 * 2**30 + 24 * largest))
    workers = args.workers or max(1, min(len(problems), 8, fit, (os.cpu_count() or 2) - 1))
    store = Store(storage, create=True)
    with WorkerPool(args.gpu, workers, 900) as pool, tqdm(
        total=len(problems), disable=args.no_progress, unit="shape", desc="validating"
    ) as bar:
        if pool.fingerprint["sm_count"] != heur.gpu.sm_count or pool.fingerprint["compute_capability"] != (
            f"{heur.gpu.cc // 10}.{heur.gpu.cc % 10}"
        ):
            raise CliError(f"{args.heuristics} is for {heur.gpu.name}; GPU {args.gpu} is {pool.fingerprint['name']}")
        try:
            rows = run_validation(args.heuristics, problems, pool, store, db_urls, args.rounds, TimingSpec(), bar,
                                  gate=dataclasses.asdict(draw) if draw else None)
        except RuntimeError as exc:
            raise CliError(str(exc)) from None
    if draw:
        return _gate_report(rows, draw, storage)
    print(render(rows))
    print(f"records stored in {storage}")
    regressed = [f"{r.kernel} {r.shape}" for r in rows if r.regressed]
    if regressed:
        print(f"inductor-tune: heuristics regress against Inductor's default beyond noise at: {', '.join(regressed)}",
              file=sys.stderr)
        return 1
    return 0


def _check_readable(urls: list[str]) -> None:
    """Each database read for studies opens as one (schema included), so that a foreign or newer
    database is reported now, before the GPU is asked for; opening to read writes nothing."""
    from .store import Store

    for url in urls:
        Store(url, create=False).engine.dispose()


def _same_file(a: str, b: str) -> bool:
    """Whether an output path names an input file (links followed); URLs name no file."""
    if "://" in b:
        b = b.split("sqlite:///", 1)[1] if b.startswith("sqlite:///") else ""
    try:
        return bool(b) and os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b)
    except OSError:
        return False


def _refuse_storage_among(storage: str, dbs: list[str], default: str) -> None:
    """Records never go into a database the command reads its studies from (it would be upgraded in place)."""
    from .store import same_database, shown

    for db in dbs:
        if same_database(storage, _storage_url(db)):
            raise CliError(f"--storage {shown(storage)} is also read as a database of studies ({db}); records go "
                           f"into a database of their own, e.g. the default {default}")


def _int_option(flag: str, text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise CliError(f"{flag} {text!r} is not an integer") from None
    if value < minimum:
        raise CliError(f"{flag} must be at least {minimum} (got {value})")
    return value


def _range_option(flag: str, text: str | None, default: tuple[int, int]) -> tuple[int, int]:
    if text is None:
        return default
    low, sep, high = text.partition(":")
    if not sep or not all(v.isascii() and v.isdigit() for v in (low, high)) or int(low) > int(high):
        raise CliError(f"{flag} {text!r} is not a range LO:HI of integers with LO <= HI, e.g. 4096:131072")
    return int(low), int(high)


def _gate_draw(count: int, seed: int, kernels, dtype: str, max_gib: float, dbs: list[str], db_urls: list[str],
               rows_text: str | None = None, cols_text: str | None = None):
    from . import gate
    from .store import Store

    if not 0 < max_gib < float("inf"):
        raise CliError(f"--max-gib must be a positive number of GiB (got {max_gib})")
    rows, cols = _range_option("--rows", rows_text, gate.ROWS), _range_option("--cols", cols_text, gate.COLS)
    avoid = gate.studied_shapes(Store(url, create=False) for url in db_urls)
    try:
        draw = gate.make_draw(count, seed, kernels, avoid, int(max_gib * 2**30), dtype, avoided_from=dbs,
                              rows=rows, cols=cols)
    except ValueError as exc:
        raise CliError(f"--random: {exc}") from None
    print(f"gate draw: seed {seed}, {count} {dtype} problems of {len(draw.kernels)} kernel(s), rows {rows[0]}..{rows[1]}, "
          f"N {cols[0]}..{cols[1]}, at most {max_gib:g} GiB resident each, none at the {len(avoid)} shapes of "
          f"{', '.join(dbs) or 'no database'}")
    return draw


def _gate_report(rows, draw, storage: str) -> int:
    from .gate import summarize_gate
    from .validate import ValidationRow, render

    touched = [r for r in rows if isinstance(r, ValidationRow) and r.heuristics_applied]
    if touched:
        print(render(touched))
    summary = summarize_gate(rows, draw)
    print(summary.render())
    print(f"records stored in {storage} (each with the draw, under \"gate\")")
    return 0 if summary.passed else 1

def cmd_validate_models(args) -> int:
    """validate --models: one training-step comparison per model, each in a process of its own."""
    from . import models
    from .store import Store, check_url

    ignored = [flag for flag, value in (("--kernels", args.kernels), ("--dtypes", args.dtypes), ("--db", args.db),
                                        ("--workers", args.workers)) if value is not None]
    if ignored:
        raise CliError(f"--models does not take {', '.join(ignored)}")
    try:
        names = models.parse_names(args.models)
    except models.ModelsError as exc:
        raise CliError(str(exc)) from None
    storage = _storage_url(args.storage)
    _gpu_index(args.gpu)
    check_url(storage, create=True)
    torch = _import_torch("validate")
    if not torch.cuda.is_available():
        raise CliError(NO_GPU.format(cmd="validate --models"))
    if not 0 <= args.gpu < torch.cuda.device_count():
        raise CliError(f"GPU {args.gpu} does not exist: {torch.cuda.device_count()} GPU(s) visible")
    from tqdm import tqdm

    store = Store(storage, create=True)
    with tqdm(total=len(names), disable=args.no_progress, unit="model", desc="validating") as bar:
        try:
            results = models.run_models(args.heuristics, names, store, args.rounds, gpu=args.gpu, progress=bar)
        except models.ModelsError as exc:
            raise CliError(str(exc)) from None
    print(models.render(results))
    print(f"records stored in {storage}")
    bad = [f"{r.name} ({r.status})" for r in results if r.status != "ok"]
    if bad:
        print(f"inductor-tune: heuristics fail or regress on whole models: {'; '.join(bad)}", file=sys.stderr)
        return 1
    return 0


def cmd_bench_search(args) -> int:
    import dataclasses as dc
    import json as json_mod

    import optuna

    from . import benchsearch

    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    unknown = [s for s in strategies if s not in benchsearch.STRATEGIES]
    if unknown or not strategies:
        raise CliError(f"unknown strategy {', '.join(unknown) or '(none)'}; choose from {', '.join(benchsearch.STRATEGIES)}")
    if args.seeds < 1 or args.budget < 1:
        raise CliError("--seeds and --budget must be positive")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise CliError(f"--out {args.out} exists and is not a folder")
    sweeps, notes = benchsearch.load_sweeps(_storage_url(args.db))
    if not sweeps:
        raise CliError(f"{args.db} has no complete sweep (record one with `inductor-tune sweep`)")
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    from tqdm import tqdm

    caps = {"gp": 1}  # GPSampler takes ~40 s per 60-trial run on 2 cores
    total = sum(1 if s == "grid" else min(args.seeds, caps.get(s, args.seeds)) for s in strategies) * len(sweeps)
    with tqdm(total=total, disable=args.no_progress, unit="run", desc="replaying") as bar:
        runs = benchsearch.benchmark(sweeps, strategies, args.seeds, args.budget, caps, bar)
    summaries = benchsearch.summarize(runs, sweeps)
    os.makedirs(args.out, exist_ok=True)
    benchsearch.plot(runs, sweeps, os.path.join(args.out, "fraction_of_optimum.png"))
    with open(os.path.join(args.out, "results.json"), "w") as fh:
        json_mod.dump({"db": args.db, "budget": args.budget, "seeds": args.seeds,
                       "sweeps": [s.name for s in sweeps], "summaries": [dc.asdict(s) for s in summaries],
                       "runs": [dc.asdict(r) for r in runs]}, fh)
    print(f"replayed from {args.db}: {len(sweeps)} sweeps, budget {args.budget} trials, up to {args.seeds} seeds")
    print(benchsearch.render(summaries))
    for note in notes:
        print(f"note: {note}")
    print(f"wrote {args.out}/fraction_of_optimum.png and {args.out}/results.json")
    return 0


def cmd_demo(args) -> int:
    from . import demo

    if args.trials < 2:
        raise CliError("--trials must be at least 2")
    if args.out is not None:
        if os.path.exists(args.out) and not os.path.isdir(args.out):
            raise CliError(f"--out {args.out} exists and is not a folder")
        taken = demo.existing_outputs(args.out)
        if taken:
            raise CliError(f"--out {args.out} already holds {', '.join(taken)}; the demo never overwrites files: "
                           "name a new or empty folder")
        try:
            os.makedirs(args.out, exist_ok=True)
        except OSError as exc:
            raise CliError(f"cannot create --out {args.out}: {exc.strerror or exc}") from None
        if not os.access(args.out, os.W_OK | os.X_OK):
            raise CliError(f"--out {args.out} is not writable")
    _import_torch("demo")  # its tune and crossmeasure steps need it: say so before the first step runs
    written = demo.run(args.out, args.trials)
    print("demo finished; everything was replayed from db/sweeps.sqlite (measured on an H200), nothing measured here:")
    for what, path in written.items():
        print(f"  {what:12s} {path}")
    return 0


def cmd_crossmeasure(args) -> int:
    from . import crossmeasure, experiment as experiment_mod
    from .distill import open_stores
    from .evidence import DistillError, load_points, select_gpu
    from .store import Store, check_url

    if args.rounds < 2 or min(args.top, args.max_configs) < 1 or args.neighbours < 0:
        raise CliError("--rounds must be at least 2, --top and --max-configs at least 1, --neighbours at least 0")
    kernels = set(experiment_mod.parse_kernels(args.kernels)) if args.kernels else None
    probe_kinds = () if args.probes == "none" else tuple(k.strip() for k in args.probes.split(",") if k.strip())
    unknown = sorted(set(probe_kinds) - set(PROBEABLE_KINDS))
    if unknown:
        raise CliError(f"--probes: unknown kind(s) {', '.join(unknown)}; known: {', '.join(PROBEABLE_KINDS)}, none")
    urls = [_storage_url(d) for d in args.db]
    _check_readable(urls)
    storage = _storage_url(args.storage)
    _refuse_storage_among(storage, args.db, "db/crossmeasure.sqlite")
    _gpu_index(args.gpu)
    if args.workers is not None and args.workers < 1:
        raise CliError("--workers must be at least 1")
    if args.replay:  # before the storage is created
        _check_replay(args.replay, storage)
    check_url(storage, create=True)
    hold_out = experiment_mod.parse_shapes(args.hold_out) if args.hold_out else ()
    # Warned once the input is known good: a bad input's output is its one error line.
    if args.replay and probe_kinds:  # a recording holds the studies' own shapes; probes lie between them
        log.warning("--replay: no probes (a recording has no measurements at shapes no study ran)")
        probe_kinds = ()

    def planned(query: str):
        try:
            stores = open_stores(urls)
            gpu = select_gpu(stores, query)
        except DistillError as exc:
            raise CliError(str(exc)) from None
        points, _ = load_points(stores, gpu, args.db, allow_replayed=bool(args.replay))
        points = [p for p in points if kernels is None or p.kernel in kernels]
        if not points:
            raise CliError(f"no usable single-kernel study of {gpu.fingerprint} in {', '.join(args.db)}")
        return crossmeasure.plan(points, args.top, args.neighbours, args.max_configs, probe_kinds, hold_out)

    if args.plan_only:
        items = planned(args.plan_only)
        print(crossmeasure.describe(items))
        print(f"{len(items)} shapes, {sum(len(i.configs) for i in items)} (shape, config) pairs")
        return 0
    torch = _import_torch("crossmeasure")
    from .choices import check_torch_supported
    from .workers import BackendSpec, WorkerPool

    check_torch_supported()
    if args.replay:
        backend = BackendSpec("replay", _storage_url(args.replay))
    else:
        backend = BackendSpec()
        if not torch.cuda.is_available():
            raise CliError(NO_GPU.format(cmd="crossmeasure"))
    from tqdm import tqdm

    from .search import fingerprint_key

    store = Store(storage, create=True)
    workers = args.workers or max(1, (os.cpu_count() or 2) - 1)
    with WorkerPool(args.gpu, workers, 900, backend=backend) as pool:
        # Only the GPU and software stack the studies ran on can confirm their configs.
        items = planned(fingerprint_key(pool.fingerprint))
        with tqdm(total=len(items), disable=args.no_progress, unit="shape", desc="crossmeasuring") as bar:
            counts = crossmeasure.run(items, pool, store, args.rounds, progress=bar)
    print(crossmeasure.describe(items))
    print(f"{counts['stored']} shapes measured, {counts['skipped']} already measured, {counts['failed']} failed; "
          f"records in {storage} "
          f"(next: inductor-tune distill {' '.join(args.db)} {args.storage} --gpu ...)")
    return 1 if counts["failed"] else 0


def cmd_distill(args) -> int:
    from .distill import DistillError, FitParams, distill
    from .heuristics import dump

    if not 0 <= args.min_coverage <= 1 or args.min_shapes < 1:
        raise CliError("--min-coverage must lie in [0, 1] and --min-shapes be at least 1")
    for db in args.db:
        if "://" not in db and not os.path.exists(db):
            raise CliError(f"no database at {db}")
    if args.out and os.path.isdir(args.out):
        raise CliError(f"--out {args.out} is a directory; name the heuristic file to write")
    if args.out and any(_same_file(args.out, db) for db in args.db):
        raise CliError(f"--out {args.out} is one of the databases read; name a heuristic file of its own")
    from . import experiment as experiment_mod

    hold_out = experiment_mod.parse_shapes(args.hold_out) if args.hold_out else ()
    params = FitParams(min_coverage=args.min_coverage, min_shapes=args.min_shapes, allow_replayed=args.allow_replayed)
    try:
        heur = distill([_storage_url(db) for db in args.db], args.gpu, params, names=args.db, hold_out=hold_out)
    except DistillError as exc:
        raise CliError(str(exc)) from None
    import re

    # The default file is named after the GPU (from the database): a slug, never a path of its own.
    slug = re.sub(r"[^a-z0-9]+", "-", heur.gpu.name.split()[-1].lower()).strip("-") or "gpu"
    out = args.out or os.path.join("heuristics", f"{slug}.yaml")
    try:
        dump(heur, out)
    except OSError as exc:
        raise CliError(f"cannot write {out}: {exc.strerror or exc}") from None
    changing = sum(r.config is not None for r in heur.rules)
    print(f"wrote {out}: {len(heur.rules)} rules ({changing} change Inductor's config) for {heur.gpu.fingerprint}")
    for rule in heur.rules:
        ev = rule.evidence
        gain = f"  gain {ev.gain_geomean:.3f} [{ev.gain_min:.3f}-{ev.gain_max:.3f}], noise {ev.noise:.3f}" \
            if rule.config is not None else ""
        print(f"  {rule.describe()}{gain}")
    for scheme, result in heur.holdout.items():
        if isinstance(result, dict) and "summary" in result:
            s = result["summary"]["all"]
            known = (f"; where known: geomean speedup {s['geomean_speedup']:.3f}, worst {s['worst_speedup']:.3f}, "
                     f"{s['geomean_vs_best_found']:.3f} of the best found (worst {s['worst_vs_best_found']:.3f})"
                     if "geomean_speedup" in s else "")
            print(f"held out ({scheme}): {s['shapes']} shapes: {s['measured']} measured, {s['unmeasured']} "
                  f"unmeasured, {s['keep_default']} keep default, {s['no_rule']} no rule{known}")
    return 0


def cmd_patch(args) -> int:
    from .heuristics import load
    from .patch import default_out, generate, installed_torch_root

    heur = load(args.heuristics)
    if args.out and os.path.isdir(args.out):
        raise CliError(f"--out {args.out} is a directory; name the patch file to write")
    if args.out and _same_file(args.out, args.heuristics):
        raise CliError(f"--out {args.out} is the heuristic file read; name a patch file of its own")
    text, version = generate(heur, args.torch_root)
    out = args.out or default_out(heur, version)
    try:
        _write_atomic(out, text)
    except OSError as exc:
        raise CliError(f"cannot write {out}: {exc.strerror or exc}") from None
    root = args.torch_root or installed_torch_root()
    print(f"wrote {out} against torch {version} ({len(heur.table().rules)} config rules for {heur.gpu.name})")
    print(f"check: cd {root} && git apply --check {os.path.abspath(out)}")
    return 0


def _import_torch(command: str):
    """torch, imported only once a command needs it; where it cannot be, one line says so."""
    try:
        import torch
    except ImportError as exc:
        raise CliError(f"`{command}` needs torch, which cannot be imported here: {exc}") from None
    return torch


# The errors reported as one line besides CliError.  Only a module already imported can have raised one,
# so they are looked up there, and catching them imports nothing (choices would import all of torch).
ONE_LINE_ERRORS = ("choices.UnsupportedTorch", "experiment.ExperimentError", "heuristics.HeuristicsError",
                   "patch.PatchError", "store.StoreError", "workers.WorkerStartError")


def _one_line_errors() -> tuple[type[Exception], ...]:
    found = [CliError]
    for path in ONE_LINE_ERRORS:
        module, _, name = path.rpartition(".")
        if f"{__package__}.{module}" in sys.modules:
            found.append(getattr(sys.modules[f"{__package__}.{module}"], name))
    return tuple(found)


def main(argv: list[str] | None = None) -> int:
    handlers = {
        "gpus": cmd_gpus, "tune": cmd_tune, "sweep": cmd_tune, "show": cmd_show, "report": cmd_report,
        "distill": cmd_distill, "crossmeasure": cmd_crossmeasure, "patch": cmd_patch, "validate": cmd_validate, "bench-search": cmd_bench_search, "demo": cmd_demo,
    }
    try:
        args = _parser().parse_args(argv)
        _configure_logging(args.verbose, args.quiet)
        if args.quiet and hasattr(args, "no_progress"):
            args.no_progress = True
        args.argv = list(sys.argv[1:] if argv is None else argv)
        return handlers[args.command](args)
    except _one_line_errors() as exc:  # evaluated only once something is raised
        return _error(str(exc))
    except OSError as exc:  # a path given on the command line or in a file that cannot be used
        where = f"{exc.filename}: " if exc.filename else ""
        return _error(f"{where}{exc.strerror or exc}")
    except KeyboardInterrupt:
        print("inductor-tune: interrupted; re-run the same command to resume", file=sys.stderr)
        return 130


def _configure_logging(verbose: int, quiet: bool) -> None:
    # Quiet by default (a progress bar, the result, warnings); -v: INFO; -vv: DEBUG and Optuna's own chatter;
    # -q: errors only.
    import warnings

    import optuna

    level = logging.ERROR if quiet else logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    optuna.logging.set_verbosity(optuna.logging.INFO if verbose >= 2 else max(level, optuna.logging.WARNING))
    if quiet:
        warnings.simplefilter("ignore")
    elif verbose < 2:
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def _error(message: str) -> int:
    # One line whatever the message holds (a path or a database's text may carry line breaks).
    print(f"inductor-tune: error: {' '.join(message.split())}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
