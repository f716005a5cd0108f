"""``inductor-tune report``: PNG figures and one self-contained HTML page for a database.

The database may hold studies (``tune``), validation records (``validate``) or both; each kind gets
its section.  A heuristic file gets a picture of its rules: the one passed in (``--heuristics``, whose
validation runs alone are then drawn), else the file each drawn validation run names, when that file
is there and still has the run's digest (the rules it validated).
"""

from __future__ import annotations

import dataclasses
import html
import logging
import os
from pathlib import Path

from . import plot, report_figures as rf
from .report_html import model_table, page, runs_table, study_table
from .show import study_rows

log = logging.getLogger(__name__)

Figure = rf.Figure  # the name callers know


class ReportError(Exception):
    """Nothing to report (no studies, nothing matching the GPU filter): one line for the user."""


@dataclasses.dataclass(frozen=True)
class Report:
    html: Path
    figures: tuple[Path, ...]
    notes: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class HeuristicFile:
    """A heuristic file as read (``heuristics.load``) and the path it is named by."""

    path: str
    heuristics: object


@dataclasses.dataclass
class Section:
    """One part of the page: its heading, text (HTML), and figures."""

    heading: str
    html: str = ""
    figures: list = dataclasses.field(default_factory=list)


def build(db: str, out_dir: str | os.PathLike, gpu: str | None = None,
          heuristics: HeuristicFile | None = None) -> Report:
    """Write the PNGs and ``index.html`` for ``db`` (or what it holds of one GPU) into ``out_dir``."""
    store = plot.open_store(db)
    points = plot.shape_points(store, gpu=gpu)
    records = plot.validation_records(store, gpu)
    if not points and not records:
        where, there = (f" on a GPU matching {gpu!r}", " there") if gpu else ("", "")
        raise ReportError(f"{db} has no studies{where} and no validation records{there}; nothing to report")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    sections = []
    if points:
        sections.append(_studies(store, points, gpu, out, notes))
    files = [heuristics] if heuristics else []
    if records:
        sections.append(_validation(store, gpu, heuristics, out, notes, files))
    sections += [_heuristics(f, out) for f in files]
    html_path = out / "index.html"
    html_path.write_text(page(db, gpu, store, sections, len(study_rows(store, gpu=gpu))), encoding="utf-8")
    figures = tuple(p for s in sections for _, p in s.figures)
    log.info("wrote %s and %d figures", html_path, len(figures))
    return Report(html_path, figures, tuple(notes))


def _studies(store, points, gpu, out: Path, notes: list[str]) -> Section:
    section = Section("Studies", study_table(study_rows(store, gpu=gpu)))
    section.figures += rf.study_figures(store, points, plot.config_choices(store, gpu=gpu), out)
    comparison = plot.compare_gpus(store)
    notes.append(comparison.message)
    section.html += f"<h3>Across GPUs</h3><p>{html.escape(comparison.message)}</p>"
    if len(comparison.gpus) > 1:
        section.figures.append(rf.gpu_figure(points, comparison, out))
    return section


def _validation(store, gpu, heuristics: HeuristicFile | None, out: Path, notes: list[str],
                files: list[HeuristicFile]) -> Section:
    """Every run's table row; the figure of each kernel-level run (of ``heuristics``' digest when given)."""
    runs = plot.validation_runs(store, gpu)
    points = plot.validation_points(store, gpu=gpu)
    section = Section("Validation records", runs_table(store, runs, gpu))
    drawn = [r for r in reversed(runs) if any((p.heuristics_path, p.digest) == (r.heuristics_path, r.digest)
                                              for p in points)]
    if heuristics is not None:
        digest = heuristics.heuristics.digest()
        note = plot.validation_note(runs, heuristics.path, digest)
        notes.append(note)
        section.html += f"<p>{html.escape(heuristics.path)}: {html.escape(note)}.</p>"
        drawn = [r for r in drawn if r.digest == digest]
    for run in drawn:
        section.figures.append(rf.validation_figure(points, run, out))
    for path in dict.fromkeys(r.heuristics_path for r in reversed(runs)) if heuristics is None else ():
        found, why = _named_file(path, {r.digest for r in runs if r.heuristics_path == path})
        if found:
            files.append(found)
        elif why:
            notes.append(why)
    section.html += model_table(store, gpu)
    return section


def _named_file(path: str, digests: set[str]) -> tuple[HeuristicFile | None, str | None]:
    """The heuristic file validation runs name (``path``, from the current folder), when it is here and
    holds the rules one of those runs validated (one of ``digests``)."""
    from . import heuristics as rules
    from .heuristics import HeuristicsError

    if not os.path.isfile(path):
        return None, None
    try:
        heur = rules.load(path)
    except (HeuristicsError, OSError) as exc:
        return None, f"{path}, named by validation records, cannot be read: {exc}"
    if heur.digest() not in digests:
        return None, None  # another version of the file: its rules are not the ones the runs validated
    return HeuristicFile(path, heur), None


def _heuristics(file: HeuristicFile, out: Path) -> Section:
    return Section(f"Heuristic file {file.path}", "", [rf.heuristics_figure(file.heuristics, file.path, out)])
