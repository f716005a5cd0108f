"""``inductor-tune demo``: the whole pipeline on a CPU, replayed from the committed H200 sweeps.

A short study per kernel/shape is answered by worker processes from ``db/sweeps.sqlite`` (real
measurements, labelled replayed), its best configs are cross-measured (replayed too), then distilled
into a heuristic file, drawn in a report and turned into a patch against the installed torch.
Nothing here is measured: every number comes from the recorded sweeps, and every study and record
says so.
"""

from __future__ import annotations

import logging
import os
import tempfile

import yaml

log = logging.getLogger(__name__)

KERNELS = ["rmsnorm_fwd", "layernorm_fwd"]
SHAPES = ["32768x1024", "32768x4096", "32768x16384"]


def experiment_text(storage_url: str, trials: int) -> str:
    """A study on the sweeps' own sub-grid, so that every config drawn has a recorded measurement."""
    with open(os.path.join(_root(), "experiments", "sweep_fwd.yaml")) as fh:
        sweep = yaml.safe_load(fh)
    return yaml.safe_dump({
        "name": "demo", "kernels": KERNELS, "shapes": SHAPES, "dtypes": ["bf16"], "trials": trials,
        "storage": storage_url, "grid": sweep["grid"], "workers": 2, "rounds": 2,
    })


def _root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


OUTPUTS = ("demo.yaml", "demo.sqlite", "crossmeasure.sqlite", "heuristics.yaml", "report", "demo.patch")


def existing_outputs(out: str) -> list[str]:
    """What the demo would write in ``out`` that is there already (it refuses to overwrite any of it)."""
    return [name for name in OUTPUTS if os.path.lexists(os.path.join(out, name))]


def run(out: str | None = None, trials: int = 12, sweeps: str | None = None) -> dict[str, str]:
    """Run tune and crossmeasure (replayed) -> distill -> report -> patch into ``out``; returns what was
    written where."""
    from .cli import CliError, main

    out = os.path.abspath(out or tempfile.mkdtemp(prefix="inductor-tune-demo-"))
    os.makedirs(out, exist_ok=True)
    sweeps = sweeps or os.path.join(_root(), "db", "sweeps.sqlite")
    db = os.path.join(out, "demo.sqlite")
    exp = os.path.join(out, "demo.yaml")
    with open(exp, "w") as fh:
        fh.write(experiment_text(f"sqlite:///{db}", trials))
    # Crossmeasure records go into a database of their own, as on a GPU: a command never writes into a
    # database it reads studies from.
    cm = os.path.join(out, "crossmeasure.sqlite")
    written = {"experiment": exp, "database": db, "crossmeasure": cm, "heuristics": os.path.join(out, "heuristics.yaml"),
               "report": os.path.join(out, "report", "index.html"), "patch": os.path.join(out, "demo.patch")}
    steps = [
        # TPE, as a GPU study: on the sweeps' own sub-grid every config it draws is recorded.
        ("tune", ["tune", exp, "--replay", sweeps, "--sampler", "tpe", "--no-progress"]),
        ("crossmeasure", ["crossmeasure", db, "--replay", sweeps, "--storage", cm, "--workers", "2", "--no-progress"]),
        ("distill", ["distill", db, cm, "--gpu", "H200", "--allow-replayed", "--out", written["heuristics"]]),
        ("report", ["report", db, "--out", os.path.join(out, "report")]),
        ("patch", ["patch", written["heuristics"], "--out", written["patch"]]),
    ]
    for name, argv in steps:
        log.info("demo step %s: inductor-tune %s", name, " ".join(argv))
        code = main(argv)
        if code != 0:
            raise CliError(f"demo step `{name}` failed with exit status {code}")
    return written
