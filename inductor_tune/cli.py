"""``inductor-tune``: the command line."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

log = logging.getLogger("inductor_tune")

NO_GPU = (
    "no CUDA GPU is visible here: `{cmd}` measures on a GPU. Without one you can read recorded studies "
    "with `inductor-tune show db/quack.sqlite`, replay them with `--replay db/quack.sqlite`, or run the "
    "tests with `bash .ci/run`."
)


class CliError(Exception):
    """An error reported as one line, exit status 2."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="inductor-tune",
        description="Tune the launch configs of the reduction kernels TorchInductor generates for norm layers.",
    )
    p.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("gpus", help="fingerprint of each visible GPU (name, SMs, capability, memory, versions)")

    t = sub.add_parser("tune", help="run (or resume) the tuning studies of an experiment on the local GPU")
    t.add_argument("experiment", help="experiment YAML, e.g. experiments/quack.yaml")
    t.add_argument("--kernels", help="comma-separated kernel names (overrides the file)")
    t.add_argument("--shapes", help="comma-separated MxN shapes, e.g. 32768x4096,8192x65536")
    t.add_argument("--dtypes", help="comma-separated dtypes: bf16, fp16, fp32")
    t.add_argument("--trials", type=int, help="measured trials per study, Inductor's default included")
    t.add_argument("--timeout", type=float, dest="timeout_s", help="wall-time budget per study, seconds")
    t.add_argument("--trial-timeout", type=float, dest="trial_timeout_s", help="kill a trial after this many seconds")
    t.add_argument("--sampler", help="tpe (default), random, grid, cmaes or gp")
    t.add_argument("--storage", help="SQLAlchemy URL (default sqlite:///db/<experiment>.sqlite)")
    t.add_argument("--gpu", type=int, default=0, help="CUDA device index to tune on (default 0)")
    t.add_argument(
        "--gpus", help="comma-separated device indices: one tune process per GPU, sharing the study set (e.g. 0,1)"
    )
    t.add_argument("--seed", type=int, help="sampler seed (combined with each study's name)")
    t.add_argument("--workers", type=int, help="compile/measure worker processes (default: CPU cores - 1)")
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.add_argument(
        "--replay", metavar="DB",
        help="answer trials from the measurements recorded in DB instead of the GPU (no GPU needed); "
        "results are labelled replayed and stored in studies of their own",
    )

    s = sub.add_parser("show", help="per study: Inductor default vs best found, GB/s, %% of ceiling, speedup")
    s.add_argument("db", help="SQLite file or SQLAlchemy URL")
    s.add_argument("--gpu", help="only studies whose GPU name or fingerprint contains this")
    s.add_argument("--kernel", help="only this kernel")
    s.add_argument("--wide", action="store_true", help="also print the best config")
    s.add_argument("--markdown", action="store_true", help="print a Markdown table")

    r = sub.add_parser("report", help="figures (PNG) and one self-contained HTML page for a database")
    r.add_argument("db", help="SQLite file or SQLAlchemy URL")
    r.add_argument("--gpu", help="only studies whose GPU name or fingerprint contains this")
    r.add_argument("--out", help="output folder (default reports/<database name>/)")
    return p


def _storage_url(text: str) -> str:
    return text if "://" in text else f"sqlite:///{text}"


def cmd_gpus(args) -> int:
    import torch

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

    exp = experiment_mod.with_overrides(
        experiment_mod.load(args.experiment), kernels=args.kernels, shapes=args.shapes, dtypes=args.dtypes,
        trials=args.trials, timeout_s=args.timeout_s, trial_timeout_s=args.trial_timeout_s, sampler=args.sampler,
        storage=args.storage and _storage_url(args.storage), seed=args.seed, workers=args.workers,
    )
    import torch

    from .choices import check_torch_supported
    from .store import check_url

    if exp.storage_url.startswith("sqlite:///db/"):
        os.makedirs("db", exist_ok=True)
    check_url(exp.storage_url, create=True)
    check_torch_supported()
    from .workers import BackendSpec

    if args.replay:
        backend = BackendSpec("replay", _storage_url(args.replay))
        check_url(backend.source, create=False)
        if args.gpus:
            return cmd_tune_gpus(args, _gpu_list(args.gpus))
    else:
        backend = BackendSpec()
        if not torch.cuda.is_available():
            raise CliError(NO_GPU.format(cmd="tune"))
        for gpu in _gpu_list(args.gpus) if args.gpus else [args.gpu]:
            if not 0 <= gpu < torch.cuda.device_count():
                raise CliError(f"GPU {gpu} does not exist: {torch.cuda.device_count()} GPU(s) visible")
        if args.gpus:
            return cmd_tune_gpus(args, _gpu_list(args.gpus))
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
        total=len(problems) * exp.trials, disable=args.no_progress, unit="trial", desc="tuning"
    ) as bar:
        tuner = Tuner(exp, pool, store, progress=bar)
        names = tuner.run()
    wall = time.monotonic() - start
    rate = tuner.measured / tuner.measure_wall_s if tuner.measure_wall_s else 0.0
    log.info("measured %d trials in %.0f s of search (%.2f trials/s); %.0f s in all", tuner.measured,
             tuner.measure_wall_s, rate, wall)
    from .show import render, study_rows

    print(render([r for r in study_rows(store) if any(n.startswith(f"{r.kernel}/{r.shape}/{r.dtype}@") for n in names)]))
    print(f"search throughput: {tuner.measured} trials in {tuner.measure_wall_s:.0f} s = {rate:.2f} trials/s")
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
    print(render(rows, wide=args.wide, markdown=args.markdown))
    return 0


def cmd_report(args) -> int:
    import matplotlib

    matplotlib.use("Agg")  # files only; never open a window (or need a display) from the CLI
    from .report import ReportError, build

    out = args.out or os.path.join("reports", os.path.splitext(os.path.basename(args.db.split("://")[-1]))[0])
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


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose + 1, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from .choices import UnsupportedTorch
    from .experiment import ExperimentError
    from .store import StoreError

    args.argv = list(sys.argv[1:] if argv is None else argv)
    handlers = {"gpus": cmd_gpus, "tune": cmd_tune, "show": cmd_show, "report": cmd_report}
    try:
        return handlers[args.command](args)
    except (CliError, ExperimentError, StoreError, UnsupportedTorch) as exc:
        print(f"inductor-tune: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("inductor-tune: interrupted; re-run the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
