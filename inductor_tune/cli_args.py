"""The command line's arguments: the parser, and the checks an argument's text alone allows.

Every bad argument is a ``CliError``: one ``inductor-tune: error:`` line and exit status 2, argparse's
own complaints included.
"""

from __future__ import annotations

import argparse

from . import __version__
from .app.common import AppError


class CliError(AppError):
    """A bad argument, reported as one line with exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse's errors as the one line every other bad input gets (it prints its usage and exits)."""

    def error(self, message: str):
        command = self.prog.removeprefix("inductor-tune").strip()
        raise CliError(f"{command + ': ' if command else ''}{message} (see `{self.prog} --help`)")


def parser() -> argparse.ArgumentParser:
    p = Parser(
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
    _reading_arguments(sub)
    _crossmeasure_arguments(sub)
    _validate_arguments(sub)
    _pipeline_arguments(sub)
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


def _reading_arguments(sub) -> None:
    """The commands that read databases and heuristic files, with no GPU."""
    s = sub.add_parser("show", help="per study: Inductor default vs best found, GB/s, %% of ceiling, speedup")
    s.add_argument("db", help="SQLite file or SQLAlchemy URL")
    s.add_argument("--gpu", help="only studies whose GPU name or fingerprint contains this")
    s.add_argument("--kernel", help="only this kernel")
    s.add_argument("--wide", action="store_true", help="also print the best config")
    fmt = s.add_mutually_exclusive_group()
    fmt.add_argument("--markdown", action="store_true", help="print a Markdown table")
    fmt.add_argument("--csv", action="store_true", help="print the table as CSV: every column, unrounded")
    fmt.add_argument("--json", action="store_true", help="print the table as a JSON list: every column, unrounded")

    r = sub.add_parser("report", help="figures (PNG) and one self-contained HTML page for a database of studies "
                                      "and/or validation records")
    r.add_argument("db", help="SQLite file or SQLAlchemy URL")
    r.add_argument("--gpu", help="only studies and validation records whose GPU name or fingerprint contains this")
    r.add_argument("--heuristics", metavar="FILE",
                   help="a heuristic file to picture (kernel family x size bucket); only its validation runs are "
                        "drawn (default: the file each validation run names, where it still holds that run's rules)")
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
    d.add_argument("--max-excused-loss", type=float, default=0.02, metavar="FRACTION",
                   help="the most loss a shape's noise may excuse before a config counts as slower than the default "
                   "there (default 0.02; 0: a rule's config may read slower than the default at none of its shapes)")
    d.add_argument("--hold-out", metavar="SHAPES",
                   help="comma-separated MxN shapes (every kernel) kept out of the fit and scored on instead")
    d.add_argument("--candidates-from", metavar="GPU",
                   help="the GPU whose studies proposed the configs --gpu crossmeasured (crossmeasure "
                   "--candidates-from): they frame its records; only --gpu's measurements are fitted")
    d.add_argument("--workers", type=int,
                   help="processes refitting the hold-out folds side by side (default: CPU cores); the file "
                   "written is the same for any number")
    d.add_argument("--no-folds", action="store_true",
                   help="skip the leave-one-out refits scored into the file's `holdout` (most of the time on large "
                   "data); the rules written are the same")


def _crossmeasure_arguments(sub) -> None:
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
    c.add_argument("--span-probes", type=int, default=0, metavar="K",
                   help="instead of the studied shapes, time K random probes inside the span of each size group "
                   "whose fitted rule sets a config (random rows and N, none at a studied shape): that config and "
                   "the group's covered candidates, where no study looked (default 0: off; else at least 5, one at N "
                   "of each alignment class, as distill needs to settle a rule)")
    c.add_argument("--edge-probes", type=int, default=0, metavar="K",
                   help="with or instead of --span-probes: K probes at each kernel a config rule matches, with rows "
                   "in the lowest octave of the rule's rows, where its grid is smallest (default 0: off)")
    c.add_argument("--hull-probes", type=int, default=0, metavar="K",
                   help="with --span-probes: K more probes per config rule at odd N inside its rows and N span but "
                   "outside the hull of its odd evidence, which a win grows (default 0: off)")
    c.add_argument("--fill", type=int, default=0, metavar="K",
                   help="instead of the studied shapes: where no config of a size group (or of a row band the fit "
                   "cuts) timed at all of its shapes is adoptable, time its K adoptable candidates timed at the most "
                   "shapes (a fifth at least) at those that lack them, probes included (default 0: off)")
    c.add_argument("--fill-share", type=float, default=None, metavar="F",
                   help="--fill: the least share of a set's shapes a candidate must be timed at already to be filled "
                   "in, 0 to 1 (default 0.2: a fifth)")
    c.add_argument("--fill-shapes", type=int, default=None, metavar="N",
                   help="--fill: only the sets whose shapes to time fit in N, those where the fit's rules leave "
                   "the most to the best found per shape to time first (default: every set)")
    c.add_argument("--seed", default="0", help="--span-probes, --edge-probes: seed of the draw (default 0)")
    c.add_argument("--max-gib", type=float, default=4.0, metavar="GIB",
                   help="--span-probes, --edge-probes: the most GPU memory a probe may keep resident (default 4, "
                   "the bound of validate --random)")
    c.add_argument("--avoid-draw", metavar="FILES",
                   help="comma-separated held-out draws (validate --draw-out) whose shapes no probe takes")
    c.add_argument("--candidates-from", metavar="GPU",
                   help="plan from the studies of this GPU (fingerprint or part of its name) and time the plan on "
                   "this one, a GPU with no studies of its own; the records say where the candidates came from")
    c.add_argument("--gpu", type=int, default=0, help="CUDA device index (default 0)")
    c.add_argument("--workers", type=int, help="worker processes (default: CPU cores - 1)")
    c.add_argument("--replay", metavar="DB", help="answer from measurements recorded in DB (labelled replayed)")
    c.add_argument("--plan-only", metavar="GPU", help="print the plan for the studies of this GPU and stop (no GPU)")
    c.add_argument("--no-progress", action="store_true", help="no progress bar")


def _validate_arguments(sub) -> None:
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
    which.add_argument("--draw", metavar="FILE", help="the gate on a committed draw (`--draw-out`), scored exactly as "
                       "written, once none of its problems is found at a shape of the --db databases; exits as "
                       "--random does")
    v.add_argument("--seed", default="0", help="--random: seed of the draw (default 0)")
    v.add_argument("--rows", metavar="LO:HI", help="--random: draw rows log-uniform in this range (default 1:1000000)")
    v.add_argument("--cols", metavar="LO:HI", help="--random: draw N log-uniform in this range (default 128:262144)")
    v.add_argument("--draw-out", metavar="FILE", help="--random: write the draw to this new file and stop (no GPU): "
                   "a held-out set fixed before the rules it scores are fitted; crossmeasure --avoid-draw keeps it out")
    v.add_argument("--avoid-draw", metavar="FILES", help="--random: comma-separated held-out draws (`--draw-out` "
                   "files) whose shapes the draw keeps out too, as it keeps out the studied ones")
    v.add_argument("--max-gib", type=float, default=4.0, help="--random: largest memory a problem may keep "
                   "resident on the GPU, GiB (default 4)")
    from .models import CATALOG as MODEL_CATALOG

    which.add_argument("--models", nargs="?", const="all", metavar="NAMES",
                       help="whole-model training steps instead of kernels: comma-separated models "
                       f"({', '.join(MODEL_CATALOG)}) or all (the default); a model --storage already holds a "
                       "record of for the same file, GPU and --rounds is not measured again")
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


def _pipeline_arguments(sub) -> None:
    """bench-search, demo and patch."""
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


def gpu_list(text: str) -> tuple[int, ...]:
    try:
        gpus = [int(g) for g in text.split(",") if g.strip()]
    except ValueError:
        raise CliError(f"--gpus {text!r} is not a comma-separated list of device indices, e.g. 0,1") from None
    if not gpus or len(set(gpus)) != len(gpus) or min(gpus) < 0:
        raise CliError(f"--gpus {text!r} must name distinct device indices, e.g. 0,1")
    return tuple(gpus)


def gpu_index(gpu: int) -> int:
    if gpu < 0:
        raise CliError(f"--gpu {gpu}: a device index is 0 or more")
    return gpu


def worker_count(workers: int | None) -> int | None:
    if workers is not None and workers < 1:
        raise CliError("--workers must be at least 1")
    return workers


def int_option(flag: str, text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise CliError(f"{flag} {text!r} is not an integer") from None
    if value < minimum:
        raise CliError(f"{flag} must be at least {minimum} (got {value})")
    return value


def gib_option(value: float) -> float:
    """``--max-gib``: a memory bound, which must be a positive, finite number of GiB."""
    if not 0 < value < float("inf"):
        raise CliError(f"--max-gib must be a positive number of GiB (got {value})")
    return value


def range_option(flag: str, text: str | None, default: tuple[int, int]) -> tuple[int, int]:
    if text is None:
        return default
    low, sep, high = text.partition(":")
    if not sep or not all(v.isascii() and v.isdigit() for v in (low, high)) or int(low) > int(high):
        raise CliError(f"{flag} {text!r} is not a range LO:HI of integers with LO <= HI, e.g. 4096:131072")
    return int(low), int(high)


def comma_list(text: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in text.split(",") if s.strip())
