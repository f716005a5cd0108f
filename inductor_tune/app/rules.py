"""``distill`` and ``patch``: one GPU's studies into a heuristic file, and that file into Inductor's sources."""

from __future__ import annotations

import dataclasses
import os
import re
from typing import TYPE_CHECKING

from .common import AppError, same_file, storage_url, write_atomic

if TYPE_CHECKING:
    from ..heuristics import Heuristics
    from ..problem import Shape


@dataclasses.dataclass(frozen=True)
class DistillRequest:
    dbs: tuple[str, ...]  # databases with studies and crossmeasure records, as given (named in the provenance)
    gpu: str  # fingerprint or (part of) a name
    out: str | None = None  # None: heuristics/<gpu>.yaml
    min_coverage: float = 1.0
    min_shapes: int = 1
    allow_replayed: bool = False
    hold_out: tuple[Shape, ...] = ()
    candidates_from: str | None = None  # the GPU whose studies proposed what this GPU crossmeasured
    workers: int = 1  # processes for the hold-out refits
    folds: bool = True  # False: skip the leave-one-out refits (the rules are the same)
    max_excused_loss: float = 0.02  # FitParams.max_excused_loss


@dataclasses.dataclass(frozen=True)
class DistillResult:
    heuristics: Heuristics
    out: str


@dataclasses.dataclass(frozen=True)
class PatchRequest:
    heuristics: str
    out: str | None = None  # None: patches/<gpu>-torch<version>.patch
    torch_root: str | None = None  # None: the installed torch


@dataclasses.dataclass(frozen=True)
class PatchResult:
    heuristics: Heuristics
    out: str
    torch_version: str
    torch_root: str


def distill(request: DistillRequest) -> DistillResult:
    from ..distill import DistillError, FitParams, distill as fit
    from ..heuristics import dump

    for db in request.dbs:
        if "://" not in db and not os.path.exists(db):
            raise AppError(f"no database at {db}")
    if request.out and os.path.isdir(request.out):
        raise AppError(f"--out {request.out} is a directory; name the heuristic file to write")
    if request.out and any(same_file(request.out, db) for db in request.dbs):
        raise AppError(f"--out {request.out} is one of the databases read; name a heuristic file of its own")
    params = FitParams(min_coverage=request.min_coverage, min_shapes=request.min_shapes,
                       allow_replayed=request.allow_replayed, max_excused_loss=request.max_excused_loss)
    try:
        heur = fit([storage_url(db) for db in request.dbs], request.gpu, params, names=list(request.dbs),
                   hold_out=request.hold_out, candidates_from=request.candidates_from, workers=request.workers,
                   folds=request.folds)
    except DistillError as exc:
        raise AppError(str(exc)) from None
    # The default file is named after the GPU (from the database): a slug, never a path of its own.
    slug = re.sub(r"[^a-z0-9]+", "-", heur.gpu.name.split()[-1].lower()).strip("-") or "gpu"
    out = request.out or os.path.join("heuristics", f"{slug}.yaml")
    try:
        dump(heur, out)
    except OSError as exc:
        raise AppError(f"cannot write {out}: {exc.strerror or exc}") from None
    return DistillResult(heur, out)


def patch(request: PatchRequest) -> PatchResult:
    from ..heuristics import load
    from ..patch import default_out, generate, installed_torch_root

    heur = load(request.heuristics)
    if request.out and os.path.isdir(request.out):
        raise AppError(f"--out {request.out} is a directory; name the patch file to write")
    if request.out and same_file(request.out, request.heuristics):
        raise AppError(f"--out {request.out} is the heuristic file read; name a patch file of its own")
    text, version = generate(heur, request.torch_root)
    out = request.out or default_out(heur, version)
    try:
        write_atomic(out, text)
    except OSError as exc:
        raise AppError(f"cannot write {out}: {exc.strerror or exc}") from None
    return PatchResult(heur, out, version, request.torch_root or installed_torch_root())
