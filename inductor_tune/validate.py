"""Validate a heuristic file on the GPU: Inductor default vs installed rules vs best found vs peers.

Per kernel/shape/dtype, one worker process (``variants``) compiles Inductor's default, the same
function with the heuristics installed (``heuristics.install``: the real extension point, not a
forced trial config), the per-shape best config the studies found (when a database has one) and the
peer libraries, checks each against the float64 reference, captures each in a CUDA graph and times
them interleaved round by round (drift hits all alike).  The parent turns the rounds into ratios
with their spread, stores a validation record and reports regressions beyond the noise band.

Gate runs (``inductor-tune validate --random``, see gate.py) measure hundreds of unstudied problems,
most of which the rules leave alone: payload ``skip_untouched`` times only the default where the
rules compiled to Inductor's own launch configs (result ``untouched``), ``peers`` false skips the
peer libraries, and a problem that fails is stored as such instead of stopping the run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import statistics
from collections import Counter
from typing import Any, Mapping, Sequence

from .stats import NOISE_FLOOR, geomean
# The worker side (one process per problem) is ``variants``: the workers run it without this module,
# which dispatches to them.
from .variants import (  # noqa: F401
    BEST, DEFAULT, DEFAULT_AGAIN, HEURISTICS, OWN_VARIANTS, UNTOUCHED_ROUNDS, measure_variants,
)

log = logging.getLogger(__name__)

# -- parent side ------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Variant:
    name: str
    median_ms: float
    gbps: float
    pct_of_ceiling: float
    ratio_to_default: float  # default time / this time (> 1: faster than Inductor's default)
    ratio_low: float
    ratio_high: float


@dataclasses.dataclass(frozen=True)
class ProblemFailure:
    """A gate problem that gave no row: a variant failed to compile, its worker died or hung, or
    Inductor's default failed its check.  Stored and counted; the gate fails on it."""

    kernel: str
    shape: str
    dtype: str
    reason: str


@dataclasses.dataclass(frozen=True)
class ValidationRow:
    kernel: str
    shape: str
    dtype: str
    variants: tuple[Variant, ...]
    noise: float  # the default's own round-to-round spread, relative
    # rules changed the kernel and it is slower in every round, beyond the noise band, than Inductor's default and
    # than its second compile where one was timed (``DEFAULT_AGAIN``)
    regressed: bool
    heuristics_applied: bool  # the compile under the rules differs from Inductor's own choice
    notes: tuple[str, ...]
    studied: bool = False  # a study of this GPU stack tuned this shape (so a best found exists)
    # a rule applied, yet the compile built Inductor's own kernels and launch configs (``same_program``)
    same_program: bool = False

    def variant(self, name: str) -> Variant | None:
        return next((v for v in self.variants if v.name == name), None)

    def best_found(self) -> Variant | None:
        """The study's winner; Inductor's default where the study found nothing better."""
        return self.variant(BEST) or (self.variant(DEFAULT) if self.studied else None)

    def best_peer(self) -> Variant | None:
        peers = [v for v in self.variants if v.name not in OWN_VARIANTS]
        return min(peers, key=lambda v: v.median_ms) if peers else None


def summarize_problem(kernel: str, shape: str, dtype: str, data: dict[str, Any], ceiling_gbps: float) -> ValidationRow:
    times = data["times"]
    notes = list(data["notes"])
    versions = data.get("peer_versions") or {}  # records before stop 19 do not name them
    if versions:
        notes.append("peer versions: " + ", ".join(f"{name} {version or 'not installed'}"
                                                   for name, version in sorted(versions.items())))
    if DEFAULT not in times:
        raise ValueError(f"{kernel} {shape}: Inductor's default was not timed ({'; '.join(notes)})")
    base = times[DEFAULT]
    default_ms = statistics.median(base)
    noise = (max(base) - min(base)) / default_ms
    variants = []
    for name, rounds in times.items():
        med = statistics.median(rounds)
        ratios = [d / t for d, t in zip(base, rounds)]
        gbps = data["bytes"] / (med * 1e-3) / 1e9
        variants.append(Variant(name, med, gbps, 100 * gbps / ceiling_gbps, default_ms / med, min(ratios), max(ratios)))
    if data.get("untouched") and HEURISTICS not in times:
        # No rule applied, so the heuristics variant is Inductor's own program: ratio 1 by construction,
        # never a regression (it was timed once, as the default).
        variants.append(dataclasses.replace(next(v for v in variants if v.name == DEFAULT), name=HEURISTICS))
    heur = next((v for v in variants if v.name == HEURISTICS), None)
    timed_rules = rules_on_timed_graph(data)
    if timed_rules is not None:
        applied = bool(timed_rules)
    else:  # records written before the rules applied were logged
        applied = _configs(data["heuristic_choice"]) != _configs(data["default_choice"])
    # Only a kernel the rules changed can regress, and only if slower than each compile of the default.
    inductors_program = applied and same_program(data)
    defaults = [times[name] for name in (DEFAULT, DEFAULT_AGAIN) if name in times]
    regressed = bool(applied and not inductors_program and heur and HEURISTICS in times
                     and all(slower_beyond_noise(rounds, times[HEURISTICS]) for rounds in defaults))
    return ValidationRow(kernel, shape, dtype, tuple(variants), noise, regressed, applied, tuple(notes),
                         bool(data.get("studied")), inductors_program)


def slower_beyond_noise(default_rounds: Sequence[float], rounds: Sequence[float]) -> bool:
    """``rounds`` slower than ``default_rounds`` in every round, and their medians apart by more than the band:
    the default's own spread or the floor."""
    default_ms = statistics.median(default_rounds)
    band = max((max(default_rounds) - min(default_rounds)) / default_ms, NOISE_FLOOR)
    every_round = max(d / t for d, t in zip(default_rounds, rounds)) < 1.0
    return every_round and default_ms / statistics.median(rounds) < 1 - band


def rules_on_timed_graph(data: dict[str, Any]) -> list[str] | None:
    """The rule applications of a validation record that set a kernel of the graph its problem times, or None for
    records written before applications were logged.  Only those can change the timing; records written before
    stop 51 list the untimed forward graph's of a backward problem too, and are read as they are."""
    return data.get("timed_rules_applied", data.get("rules_applied"))


def _configs(choice: list[dict[str, Any]]) -> list:
    return sorted(json.dumps(c.get("config"), sort_keys=True) for c in choice)


# Inductor compiles some kernels only to time them while it compiles (each split of a mix-order kernel whose split
# it autotunes: the for_benchmark code of codegen/simd.py) and leaves them the bare placeholder name; the program it
# runs never calls them.
TIMED_WHILE_COMPILING = "triton_"


def _kernel_key(entry: Mapping[str, Any]) -> tuple[str, str]:
    # Forward and backward graphs number their kernels alike, and a forced config renames the
    # category (triton_per_ -> triton_unk_): match on the fused ops and the sizes.
    name = re.sub(r"_\d+$", "", re.sub(r"^triton_[a-z]+_", "", str(entry.get("kernel", ""))))
    return name, json.dumps(entry.get("size_hints"), sort_keys=True)


def kernels_changed(default_choice: Sequence[Mapping], rules_choice: Sequence[Mapping]) -> int:
    """Kernels of the rules' compile (``evaluate.inductor_choices_made``) whose launch config no kernel of
    the default compile has.  A kernel the rules left alone has the default's source, so Inductor reuses
    it and it is not among the rules' new kernels; one still autotuning among candidates was not forced
    (a rule forces exactly one config) and is skipped so that autotuning noise does not count, and so is one
    compiled only to be timed while compiling (``TIMED_WHILE_COMPILING``)."""
    seen = Counter((_kernel_key(e), json.dumps(e.get("config"), sort_keys=True)) for e in default_choice)
    changed = 0
    for entry in rules_choice:
        if (entry.get("candidates") or 1) > 1 or entry.get("kernel") == TIMED_WHILE_COMPILING:
            continue
        key = (_kernel_key(entry), json.dumps(entry.get("config"), sort_keys=True))
        if seen[key]:
            seen[key] -= 1
        else:
            changed += 1
    return changed


def same_program(data: Mapping[str, Any]) -> bool:
    """Whether the compile under the rules built the default's kernels with the default's launch configs, kernels
    it only timed while compiling aside: a split-autotune entry that kept Inductor's split, or a rule whose config
    is Inductor's own.  A rule applied there, yet the program is Inductor's, so a difference in its timing is
    compile-to-compile variance and cannot be the rule's regression (held-out set 55, stop 62).  False where a
    record lacks either compile's kernels."""
    def run(choice: Sequence[Mapping] | None) -> list[Mapping]:
        return [c for c in choice or [] if c.get("kernel") != TIMED_WHILE_COMPILING]

    default, rules = run(data.get("default_choice")), run(data.get("heuristic_choice"))
    return bool(default) and len(default) == len(rules) and \
        kernels_changed(default, rules) == 0 and kernels_changed(rules, default) == 0




def render(rows: Sequence[ValidationRow]) -> str:
    """The validation table: GB/s, % of ceiling, ratio to default and to the best peer."""
    header = ["kernel", "shape", "default GB/s", "heur GB/s", "heur %ceil", "heur/default [range]", "best found/default",
              "best peer", "heur/peer", "rules applied"]
    lines = []
    for r in rows:
        d, h, b, p = r.variant(DEFAULT), r.variant(HEURISTICS), r.variant(BEST), r.best_peer()
        lines.append([
            r.kernel, r.shape, f"{d.gbps:.0f}",
            f"{h.gbps:.0f}" if h else "-", f"{h.pct_of_ceiling:.1f}" if h else "-",
            f"{h.ratio_to_default:.3f} [{h.ratio_low:.3f}-{h.ratio_high:.3f}]" + (" REGRESSED" if r.regressed else "")
            if h else "-",
            f"{b.ratio_to_default:.3f}" if b else ("1 (default)" if r.studied else "-"),
            f"{p.name} {p.gbps:.0f}" if p else "-",
            f"{p.median_ms / h.median_ms:.3f}" if p and h else "-",
            ("yes (Inductor's program)" if r.same_program else "yes") if r.heuristics_applied else "no (default kept)",
        ])
    widths = [max(len(header[i]), *(len(l[i]) for l in lines)) for i in range(len(header))]
    fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    out = [fmt(header), fmt(["-" * w for w in widths])] + [fmt(l) for l in lines]
    heur_ratios = [r.variant(HEURISTICS).ratio_to_default for r in rows if r.variant(HEURISTICS)]
    if heur_ratios:
        out.append(f"heuristics vs Inductor default: geomean {geomean(heur_ratios):.3f}, worst {min(heur_ratios):.3f}"
                   f" ({sum(r.regressed for r in rows)} shape(s) regressed beyond noise)")
    again = [r.variant(DEFAULT_AGAIN).ratio_to_default for r in rows if r.variant(DEFAULT_AGAIN)]
    if again:
        out.append(f"Inductor's default compiled twice (compile-to-compile variance, which a regression must exceed): "
                   f"first/second geomean {geomean(again):.3f}, range {min(again):.3f}-{max(again):.3f} over "
                   f"{len(again)} shape(s)")
    vs_best = [r.best_found().median_ms / r.variant(HEURISTICS).median_ms for r in rows
               if r.best_found() and r.variant(HEURISTICS)]
    if vs_best:
        out.append(f"heuristics vs per-shape best found (Inductor's default where the study found nothing better): "
                   f"geomean {geomean(vs_best):.3f}, worst {min(vs_best):.3f} over {len(vs_best)} shape(s)")
    vs_peer = [r.best_peer().median_ms / r.variant(HEURISTICS).median_ms for r in rows
               if r.best_peer() and r.variant(HEURISTICS)]
    if vs_peer:
        out.append(f"heuristics vs best peer: geomean {geomean(vs_peer):.3f}, worst {min(vs_peer):.3f}"
                   f" over {len(vs_peer)} shape(s)")
    grouped: dict[str, list[str]] = {}
    for r in rows:
        for note in r.notes:
            grouped.setdefault(note, []).append(f"{r.kernel} {r.shape}")
    for note, where in grouped.items():
        out.append(f"note: {note} ({', '.join(where) if len(where) <= 3 else f'{len(where)} shapes'})")
    return "\n".join(out)


def best_configs(db_urls: Sequence[str], fp_key: str) -> dict[tuple[str, str, str], str | None]:
    """Per (kernel, shape, dtype): the verdict's winner on this exact GPU stack (None: default won)."""
    from .store import Store

    found: dict[tuple[str, str, str], str | None] = {}
    for url in db_urls:
        store = Store(url, create=False)
        for study in store.studies():
            if not study.name.endswith("@" + fp_key):  # other GPUs, replayed and sweep studies
                continue
            verdict = store.verdict(study.id)
            if verdict is None:
                continue
            key = (study.kernel, f"{study.rows}x{study.cols}", study.dtype)
            found[key] = verdict.best_config_json if verdict.improved else None
    return found


def gate_record(gate: dict[str, Any], whole: bool) -> dict[str, Any]:
    """What a gate run's record keeps of the draw: the first record the whole draw, every other one its
    arguments and the draw's digest (the problem list, 300 entries, would otherwise fill the database)."""
    digest = hashlib.sha256(json.dumps(gate, sort_keys=True).encode()).hexdigest()[:16]
    kept = gate if whole else {k: v for k, v in gate.items() if k != "problems"}
    return {**kept, "draw_sha256": digest}


def timing_record(timing, rounds: int) -> str:
    """The timing JSON of a validation record: the spec, the method and the rounds."""
    return json.dumps({**dataclasses.asdict(timing), "method": "triton.testing.do_bench", "rounds": rounds,
                       "interleaved": True})


def row_from_summary(summary: dict[str, Any]) -> ValidationRow:
    """A stored record's "summary" back as the row it was made from."""
    fields = {f.name for f in dataclasses.fields(ValidationRow)}
    s = dict(summary, variants=tuple(Variant(**v) for v in summary["variants"]), notes=tuple(summary["notes"]))
    return ValidationRow(**{k: v for k, v in s.items() if k in fields})


def recorded_gate_rows(store, pool, heuristics_digest: str, gate: dict[str, Any], rounds: int,
                       timing) -> dict[tuple[str, str, str], ValidationRow | ProblemFailure]:
    """The problems of this gate draw that ``store`` already holds a record of, for the same file (by digest), GPU
    stack and timing, as rows: a gate run stopped part way (a device call's time limit) is finished by the same
    command, which measures only the rest.  Keyed as ``best_configs``; the latest record of a problem counts."""
    gpu_id = store.upsert_gpu(pool.fingerprint, pool.ceiling_gbps)
    mine = (gpu_id, heuristics_digest, timing_record(timing, rounds))
    sha = gate_record(gate, whole=True)["draw_sha256"]
    out: dict[tuple[str, str, str], ValidationRow | ProblemFailure] = {}
    for rec in store.validations():
        result = json.loads(rec.result_json)
        if (rec.gpu_id, rec.heuristics_digest, rec.timing_json) != mine or result.get("gate", {}).get(
                "draw_sha256") != sha:
            continue
        shape = f"{rec.rows}x{rec.cols}"
        out[rec.kernel, shape, rec.dtype] = (
            ProblemFailure(rec.kernel, shape, rec.dtype, result["failed"]) if "failed" in result
            else row_from_summary(result["summary"]))
    return out


@dataclasses.dataclass
class _Recorder:
    """Turns one problem's result into its row and stores its record (see ``run_validation``)."""

    store: Any
    base: dict[str, Any]  # the fields every record of the run shares
    ceiling_gbps: float
    gate: dict[str, Any] | None
    draw_stored: bool  # a record of this run's draw (file and GPU alike) already keeps the whole draw

    def record(self, problem, result) -> ValidationRow | ProblemFailure:
        from .workers import TaskFailure

        extra = {}
        if self.gate is not None:
            extra = {"gate": gate_record(self.gate, whole=not self.draw_stored)}
            self.draw_stored = True
        record = dict(self.base, kernel=problem.kernel, rows=problem.shape.rows, cols=problem.shape.cols,
                      dtype=problem.dtype)
        failure = None
        if isinstance(result, TaskFailure):
            failure = result.reason
            result = {"outcome": getattr(result.outcome, "value", str(result.outcome))}
        else:
            try:
                row = summarize_problem(problem.kernel, str(problem.shape), problem.dtype, result, self.ceiling_gbps)
            except ValueError as exc:  # Inductor's default itself was not timed
                if self.gate is None:
                    raise
                failure = str(exc)
        if failure is not None:
            if self.gate is None:
                raise RuntimeError(f"validating {problem.kernel} {problem.shape} failed: {failure}")
            log.warning("gate: %s %s %s failed: %s", problem.kernel, problem.shape, problem.dtype, failure)
            # No "summary": readers of the records (figdata) take only problems that were timed.
            self.store.add_validation(**record, regressed=False,
                                      result_json=json.dumps({**result, "failed": failure, **extra}))
            return ProblemFailure(problem.kernel, str(problem.shape), problem.dtype, failure)
        self.store.add_validation(**record, regressed=row.regressed,
                                  result_json=json.dumps({**result, "summary": dataclasses.asdict(row), **extra}))
        return row


def run_validation(heuristics_path: str, problems, pool, store, db_urls: Sequence[str], rounds: int, timing,
                   progress=None, gate: dict[str, Any] | None = None,
                   done: dict[tuple[str, str, str], ValidationRow | ProblemFailure] | None = None,
                   ) -> list[ValidationRow | ProblemFailure]:
    """Measure every problem (one task, so one worker process, each) and store a record per problem.

    ``gate`` (the draw, as JSON data) makes this a gate run: it goes into every record, problems the
    rules leave alone are timed as the default only, there are no peers or best found, and a failed
    problem is stored and returned as a ``ProblemFailure`` instead of raising RuntimeError.  A gate run
    stores each record as its problem finishes, and the problems in ``done`` (``recorded_gate_rows``) are
    not measured again: their rows come back as they were recorded.
    """
    import os

    from . import heuristics
    from .tasks import ValidateTask
    from .workers import run_tasks

    heur = heuristics.load(heuristics_path)
    done = done or {}
    best = best_configs(db_urls, pool.fingerprint.key) if gate is None else {}
    base = dict(gpu_id=store.upsert_gpu(pool.fingerprint, pool.ceiling_gbps), heuristics_path=heuristics_path,
                heuristics_digest=heur.digest(), timing_json=timing_record(timing, rounds))
    recorder = _Recorder(store, base, pool.ceiling_gbps, gate, draw_stored=bool(done))
    rows: dict[int, ValidationRow | ProblemFailure] = {}
    tasks = []
    for i, problem in enumerate(problems):
        key = (problem.kernel, str(problem.shape), problem.dtype)
        if key in done:
            rows[i] = done[key]
            continue
        tasks.append(ValidateTask(i, problem, os.path.abspath(heuristics_path), rounds, timing, best.get(key),
                                  studied=key in best, skip_untouched=gate is not None, peers=gate is None))
    if progress is not None and rows:
        progress.update(len(rows))
    results = {}

    def keep(task: ValidateTask, result) -> None:
        if gate is not None:  # stored as it comes, so that a stopped gate run keeps what it measured
            rows[task.task_id] = recorder.record(task.problem, result)
        else:
            results[task.task_id] = result
        if progress is not None:
            progress.update(1)

    run_tasks(pool, tasks, keep)
    for task in tasks:
        if task.task_id not in rows:
            rows[task.task_id] = recorder.record(task.problem, results[task.task_id])
    return [rows[i] for i in range(len(problems))]
