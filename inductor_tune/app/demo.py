"""``inductor-tune demo``: the whole pipeline on a CPU, replayed from the committed H200 sweeps.

A short study per kernel/shape is answered by worker processes from ``db/sweeps.sqlite`` (real
measurements, labelled replayed), its best configs are cross-measured (replayed too), then distilled
into a heuristic file, drawn in a report and turned into a patch against the installed torch.
Nothing here is measured: every number comes from the recorded sweeps, and every study and record
says so.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import tempfile
from typing import Any, Callable

import yaml

from .common import AppError, check_out_folder, import_torch, one_line_message

log = logging.getLogger(__name__)

KERNELS = ["rmsnorm_fwd", "layernorm_fwd"]
SHAPES = ["32768x1024", "32768x4096", "32768x16384"]
OUTPUTS = ("demo.yaml", "demo.sqlite", "crossmeasure.sqlite", "heuristics.yaml", "report", "demo.patch")


@dataclasses.dataclass(frozen=True)
class DemoRequest:
    out: str | None = None  # a new or empty folder; None: a new temporary one
    trials: int = 12  # per replayed study
    sweeps: str | None = None  # the recording that answers; None: the checkout's db/sweeps.sqlite


def experiment_text(storage_url: str, trials: int) -> str:
    """A study on the sweeps' own sub-grid, so that every config drawn has a recorded measurement."""
    with open(os.path.join(_root(), "experiments", "sweep_fwd.yaml")) as fh:
        sweep = yaml.safe_load(fh)
    return yaml.safe_dump({
        "name": "demo", "kernels": KERNELS, "shapes": SHAPES, "dtypes": ["bf16"], "trials": trials,
        "storage": storage_url, "grid": sweep["grid"], "workers": 2, "rounds": 2,
    })


def _root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def existing_outputs(out: str) -> list[str]:
    """What the demo would write in ``out`` that is there already (it refuses to overwrite any of it)."""
    return [name for name in OUTPUTS if os.path.lexists(os.path.join(out, name))]


def _prepare(out: str) -> None:
    check_out_folder(out)
    taken = existing_outputs(out)
    if taken:
        raise AppError(f"--out {out} already holds {', '.join(taken)}; the demo never overwrites files: "
                       "name a new or empty folder")
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        raise AppError(f"cannot create --out {out}: {exc.strerror or exc}") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise AppError(f"--out {out} is not writable")


def run(request: DemoRequest, on_step: Callable[[str, Any], None] | None = None) -> dict[str, str]:
    """Run tune and crossmeasure (replayed) -> distill -> report -> patch into ``request.out``; returns what
    was written where.  ``on_step`` hears of each step's result (tune, crossmeasure, distill, report,
    patch: what the command of that name returns) as it finishes."""
    from .crossmeasure import CrossmeasureRequest, crossmeasure
    from .results import report
    from .rules import DistillRequest, PatchRequest, distill, patch
    from .tune import TuneRequest, tune

    if request.out is not None:
        _prepare(request.out)
    import_torch("demo")  # its tune and crossmeasure steps need it: say so before the first step runs
    out = os.path.abspath(request.out or tempfile.mkdtemp(prefix="inductor-tune-demo-"))
    os.makedirs(out, exist_ok=True)
    sweeps = request.sweeps or os.path.join(_root(), "db", "sweeps.sqlite")
    db = os.path.join(out, "demo.sqlite")
    exp = os.path.join(out, "demo.yaml")
    with open(exp, "w") as fh:
        fh.write(experiment_text(f"sqlite:///{db}", request.trials))
    # Crossmeasure records go into a database of their own, as on a GPU: a command never writes into a
    # database it reads studies from.
    cm = os.path.join(out, "crossmeasure.sqlite")
    written = {"experiment": exp, "database": db, "crossmeasure": cm, "heuristics": os.path.join(out, "heuristics.yaml"),
               "report": os.path.join(out, "report", "index.html"), "patch": os.path.join(out, "demo.patch")}
    steps = [
        # TPE, as a GPU study: on the sweeps' own sub-grid every config it draws is recorded.
        ("tune", lambda: tune(TuneRequest(exp, sampler="tpe", replay=sweeps, progress=False))),
        ("crossmeasure", lambda: crossmeasure(CrossmeasureRequest((db,), cm, workers=2, replay=sweeps,
                                                                  progress=False))),
        ("distill", lambda: distill(DistillRequest((db, cm), "H200", written["heuristics"], allow_replayed=True))),
        ("report", lambda: report(db, os.path.join(out, "report"))),
        ("patch", lambda: patch(PatchRequest(written["heuristics"], written["patch"]))),
    ]
    for name, step in steps:
        log.info("demo step %s", name)
        try:
            result = step()
        except Exception as exc:
            message = one_line_message(exc)
            if message is None:
                raise
            raise AppError(f"demo step `{name}` failed: {message}") from None
        if on_step is not None:
            on_step(name, result)
        failed = _failures(name, result)
        if failed:
            raise AppError(f"demo step `{name}` failed: {failed}")
    return written


def _failures(name: str, result) -> str:
    if name == "tune":
        failed = sum(len(r.failed) for r in result)
        return f"{failed} study(ies) failed" if failed else ""
    if name == "crossmeasure" and not result.ok:
        return f"{result.counts['failed']} shape(s) failed"
    return ""
