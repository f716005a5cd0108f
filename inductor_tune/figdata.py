"""Data behind the inspection figures: small frozen records read from a ``Store``; needs no GPU.

Every number comes from the database: default and best GB/s exactly as ``inductor-tune show``
computes them, configs decoded with ``TrialConfig.from_json``, Inductor's own choice from the
default trial's ``inductor_choice_json``, search histories from Optuna's tables.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import statistics
import warnings
from typing import Any, Callable, Sequence

from .gpu import GpuIdentity
from .records import Outcome
from .show import study_row  # the same default/best GB/s as `inductor-tune show`, by construction
from .dbfiles import url_of
from .runtime.launch import choices_for_slot
from .space import KernelSlot, SearchSpace, TrialConfig
from .store import Store

log = logging.getLogger(__name__)


# -- records ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class GpuInfo(GpuIdentity):
    """A stored GPU stack as the figures and the report show it: its identity, the fingerprint its rows
    are stored under and the copy ceiling measured on it."""

    fingerprint: str = ""
    ceiling_gbps: float = 0.0

    @property
    def memory_gb(self) -> float:
        return self.memory_bytes / 1e9

    @property
    def l2_mb(self) -> float:
        return self.l2_bytes / 2**20


@dataclasses.dataclass(frozen=True)
class ShapePoint:
    """One study: Inductor's default vs the best config found, as `show` reports it."""

    gpu: str  # fingerprint (name, SMs, torch, triton): two stacks never share a line
    gpu_name: str
    study: str
    kernel: str
    dtype: str
    rows: int
    cols: int
    default_gbps: float | None
    best_gbps: float | None
    ceiling_gbps: float | None
    speedup: float | None
    speedup_low: float | None
    speedup_high: float | None
    improved: bool | None  # None: no verdict yet
    verdict: str


@dataclasses.dataclass(frozen=True)
class SlotChoice:
    """The launch config of a study's main reduction kernel, from one source."""

    source: str  # "best" or "default"
    gpu: str
    kernel: str
    dtype: str
    rows: int
    cols: int
    slot: str
    persistent: bool
    XBLOCK: int
    num_warps: int
    R0_BLOCK: int | None  # None when persistent (the whole row is one block)
    num_stages: int | None
    RSPLIT_SIZE: int | None
    improved: bool | None
    # The graph flags the config ran with (Inductor's own are both on): turning mix-order off replaces
    # the main kernel by another one, which the slot fields alone do not show.
    split_reductions: bool = True
    mix_order_reduction: bool = True
    mix_order: bool = False  # the main kernel is a mix-order kernel (RSPLIT_SIZE applies)
    speedup: float | None = None  # the verdict's, for the best config


@dataclasses.dataclass(frozen=True)
class ExtraSeries:
    """A series the database does not hold (distilled heuristic, Quack, Liger), supplied by the caller."""

    label: str
    cols: tuple[int, ...]
    gbps: tuple[float, ...]
    kind: str = "peer"  # picks the color: "heuristic" or "peer"
    color: str | None = None


@dataclasses.dataclass(frozen=True)
class HistoryPoint:
    number: int
    state: str  # Optuna state: COMPLETE, FAIL (measured failure), PRUNED (illegal, never compiled)
    outcome: str
    gbps: float | None
    best_gbps: float | None  # best so far, over COMPLETE trials
    inductor_default: bool


@dataclasses.dataclass(frozen=True)
class StudyHistory:
    study: str
    points: tuple[HistoryPoint, ...]
    importances: tuple[tuple[str, float], ...]  # parameter, importance (sums to 1); empty if too few trials


@dataclasses.dataclass(frozen=True)
class GridCell:
    num_warps: int
    block: int
    median_gbps: float
    count: int


@dataclasses.dataclass(frozen=True)
class GpuComparison:
    gpus: tuple[str, ...]
    rows: tuple[tuple[str, int, int, str, tuple[str, ...]], ...]  # kernel, M, N, dtype, best config per GPU
    message: str


# -- data ------------------------------------------------------------------------------------


def open_store(db: str) -> Store:
    """A read-only view of a database file or URL; StoreError if it holds no inductor_tune tables."""
    return Store(url_of(db), create=False)


def gpus(store: Store) -> list[GpuInfo]:
    """Every GPU stack of the database: those of its studies and those its validation records ran on."""
    import sqlalchemy as sa

    from .store import Gpu

    with store.session() as s:
        rows = list(s.scalars(sa.select(Gpu).order_by(Gpu.id)))
    return [GpuInfo(**dataclasses.asdict(GpuIdentity.from_record(g)), fingerprint=g.fingerprint,
                    ceiling_gbps=g.ceiling_gbps) for g in rows]


def gpu_matches(gpu: str | None, name: str, fingerprint: str) -> bool:
    """``--gpu``'s rule: a case-insensitive substring of the GPU's name or fingerprint."""
    return not gpu or gpu.lower() in (name + " " + fingerprint).lower()


def _matches(gpu: str | None, study) -> bool:
    return gpu_matches(gpu, study.gpu.name, study.gpu.fingerprint)


def shape_points(store: Store, gpu: str | None = None, kernel: str | None = None) -> list[ShapePoint]:
    """Per study, default and best GB/s (verdict when there is one), sorted by kernel, dtype, M, N."""
    out = []
    for study in store.studies():
        if not _matches(gpu, study) or (kernel and study.kernel != kernel):
            continue
        row = study_row(store, study)
        verdict = store.verdict(study.id)
        improved = verdict.improved if verdict is not None and verdict.default_ms else None
        out.append(ShapePoint(
            study.gpu.fingerprint, study.gpu.name, study.name, study.kernel, study.dtype, study.rows, study.cols,
            row.default_gbps, row.best_gbps, row.ceiling_gbps, row.speedup, row.speedup_low, row.speedup_high,
            improved, row.verdict,
        ))
    return sorted(out, key=lambda p: (p.gpu, p.kernel, p.dtype, p.rows, p.cols))


def main_slot(slots: Sequence[KernelSlot], rows: int, cols: int) -> KernelSlot:
    """The kernel that dominates traffic: the largest tile space, preferring the per-row reduction."""
    return max(slots, key=lambda s: (s.xnumel * s.rnumel, s.rnumel == cols, s.xnumel == rows))


def _space_slots(study) -> dict[str, KernelSlot]:
    slots: dict[str, KernelSlot] = {}
    if not study.space_json:
        return slots
    for _, structure in SearchSpace.from_json(study.space_json).structures:
        for slot in structure:
            slots.setdefault(slot.key, slot)
    return slots


def _choice_from_slot(source, study, slot: KernelSlot, config: TrialConfig, improved, speedup) -> SlotChoice:
    cfg = config.slot_map()[slot.key]
    return SlotChoice(
        source, study.gpu.fingerprint, study.kernel, study.dtype, study.rows, study.cols, slot.key, cfg.persistent,
        cfg.XBLOCK, cfg.num_warps, None if cfg.persistent else cfg.R0_BLOCK,
        None if cfg.persistent else cfg.num_stages, cfg.RSPLIT_SIZE, improved, config.flags.split_reductions,
        config.flags.mix_order_reduction, slot.mix_order, speedup,
    )


def _default_choice(study, default_rec, pick) -> SlotChoice | None:
    """Inductor's own config for the main slot, matched on size hints, mix-order and persistence.

    Inductor reports its choices per generated kernel, the probe per slot; both list kernels of the
    same size in generation order, so the n-th slot of a size takes the n-th choice of that size.
    """
    if default_rec is None or not default_rec.slots_json or not default_rec.inductor_choice_json:
        return None
    slots = [KernelSlot(**s) for s in json.loads(default_rec.slots_json)]
    slot = pick(slots, study.rows, study.cols)
    choices = [c for c in choices_for_slot(json.loads(default_rec.inductor_choice_json), slot)
               if ("PERSISTENT" in c["heuristic"]) == slot.default_persistent]
    twins = [s for s in slots if fits_same(s, slot)]
    if not choices:
        log.info("%s: no Inductor choice matches slot %s", study.name, slot.key)
        return None
    cfg = choices[min(twins.index(slot), len(choices) - 1)]["config"]
    persistent = slot.default_persistent
    return SlotChoice(
        "default", study.gpu.fingerprint, study.kernel, study.dtype, study.rows, study.cols, slot.key, persistent,
        cfg["XBLOCK"], cfg["num_warps"], None if persistent else cfg.get("R0_BLOCK"),
        None if persistent else cfg.get("num_stages"), cfg.get("RSPLIT_SIZE"), None, mix_order=slot.mix_order,
    )


def fits_same(a: KernelSlot, b: KernelSlot) -> bool:
    return (a.xnumel, a.rnumel, a.mix_order, a.default_persistent) == (b.xnumel, b.rnumel, b.mix_order,
                                                                      b.default_persistent)


def config_choices(
    store: Store, gpu: str | None = None, kernel: str | None = None,
    pick: Callable[[Sequence[KernelSlot], int, int], KernelSlot] = main_slot,
) -> list[SlotChoice]:
    """Best config (verdict's, else the fastest trial) and Inductor's default, for each study's main slot."""
    out = []
    for study in store.studies():
        if not _matches(gpu, study) or (kernel and study.kernel != kernel):
            continue
        trials = store.trials(study.id)
        ok = [t for t in trials if t.outcome == Outcome.OK]
        default_rec = next((t for t in trials if t.inductor_default), None)
        default = _default_choice(study, default_rec, pick)
        if default is not None:
            out.append(default)
        verdict = store.verdict(study.id)
        if verdict is not None and verdict.best_config_json:
            text, improved, speedup = verdict.best_config_json, verdict.improved, verdict.speedup
        else:
            fastest = min((t for t in ok if not t.inductor_default), key=lambda t: t.time_ms, default=None)
            text, improved, speedup = (fastest.config_json, None, None) if fastest else (None, None, None)
        if text is None:
            continue
        config = TrialConfig.from_json(text)
        known = _space_slots(study)
        slots = [known.get(k) or _slot_from_key(k) for k, _ in config.slots]
        slot = pick(slots, study.rows, study.cols)
        out.append(_choice_from_slot("best", study, slot, config, improved, speedup))
    return sorted(out, key=lambda c: (c.gpu, c.kernel, c.dtype, c.rows, c.cols, c.source))


def _slot_from_key(key: str) -> KernelSlot:
    # Keys are "fw.red.x32768.r4096[#n]" (space.slot_key); used only when a study lacks its space.
    parts = key.split("#")[0].split(".")
    return KernelSlot(key, parts[0] == "bw", int(parts[2][1:]), int(parts[3][1:]), parts[1] == "mix", False)


def study_history(url: str, study_name: str) -> StudyHistory:
    """Every Optuna trial of one study with its GB/s, and parameter importances (Optuna's default evaluator)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # A report reads: Optuna must not create its tables (or stamp its version) in the database.
    storage = optuna.storages.RDBStorage(url, skip_table_creation=True)
    study = optuna.load_study(study_name=study_name, storage=storage)
    points, best = [], None
    for t in study.trials:
        gbps = t.user_attrs.get("gbps") if t.state == optuna.trial.TrialState.COMPLETE else None
        if gbps is not None:
            best = gbps if best is None else max(best, gbps)
        points.append(HistoryPoint(t.number, t.state.name, t.user_attrs.get("outcome", ""), gbps, best,
                                   bool(t.user_attrs.get("inductor_default"))))
    # The default trial has no params and constraint trials are PRUNED: importance only sees
    # COMPLETE trials that sampled something.
    searched = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE and t.params]
    importances: tuple[tuple[str, float], ...] = ()
    if len(searched) >= 3:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "less than 2 trials per regime": expected with 20 trials
            try:
                imp = optuna.importance.get_param_importances(study)
                importances = tuple((k, float(v)) for k, v in imp.items())
            except (RuntimeError, ValueError) as exc:
                log.info("no parameter importance for %s: %s", study_name, exc)
    return StudyHistory(study_name, tuple(points), importances)


def warps_block_grid(store: Store, study_name: str, block: str = "auto") -> tuple[str, list[GridCell]]:
    """Median GB/s of the measured trials per (num_warps, block) of the main slot.

    ``block`` is "XBLOCK", "R0_BLOCK" (looped trials only) or "auto": XBLOCK, which every trial has,
    unless every measured trial was looped.  Returns the block name used and the cells.
    """
    study = next((s for s in store.studies() if s.name == study_name), None)
    if study is None:
        raise KeyError(study_name)
    known = _space_slots(study)
    samples = []
    for t in store.trials(study.id):
        if t.outcome != Outcome.OK or t.inductor_default or not t.gbps:
            continue
        config = TrialConfig.from_json(t.config_json)
        if not config.slots:
            continue
        slot = main_slot([known.get(k) or _slot_from_key(k) for k, _ in config.slots], study.rows, study.cols)
        samples.append((config.slot_map()[slot.key], t.gbps))
    if block == "auto":
        looped = sum(not c.persistent for c, _ in samples)
        block = "R0_BLOCK" if samples and looped == len(samples) else "XBLOCK"
    cells = collections.defaultdict(list)
    for cfg, gbps in samples:
        value = cfg.R0_BLOCK if block == "R0_BLOCK" else cfg.XBLOCK
        if value is not None and not (block == "R0_BLOCK" and cfg.persistent):
            cells[(cfg.num_warps, value)].append(gbps)
    return block, [GridCell(w, b, statistics.median(v), len(v)) for (w, b), v in sorted(cells.items())]


def compare_gpus(store: Store, kernel: str | None = None) -> GpuComparison:
    """Best config per shape on each GPU; with a single GPU, says there is nothing to compare."""
    choices = [c for c in config_choices(store, kernel=kernel) if c.source == "best"]
    fps = tuple(sorted({c.gpu for c in choices}))
    if len(fps) < 2:
        which = fps[0] if fps else "none"
        return GpuComparison(fps, (), f"only one GPU in this database ({which}): nothing to compare across GPUs")
    table = collections.defaultdict(dict)
    for c in choices:
        table[(c.kernel, c.rows, c.cols, c.dtype)][c.gpu] = describe_choice(c)
    rows = tuple((k, m, n, d, tuple(v.get(fp, "-") for fp in fps)) for (k, m, n, d), v in sorted(table.items()))
    return GpuComparison(fps, rows, f"{len(fps)} GPUs, {len(rows)} shapes")


def describe_choice(c: SlotChoice) -> str:
    kind = "persistent" if c.persistent else f"looped R0={c.R0_BLOCK} st={c.num_stages}"
    split = f" split={c.RSPLIT_SIZE}" if c.RSPLIT_SIZE else ""
    flags = "".join(f" {name} off" for name, on in (("split reductions", c.split_reductions),
                                                     ("mix-order", c.mix_order_reduction)) if not on)
    return f"{kind} X={c.XBLOCK} w={c.num_warps}{split}{flags}"


# -- validation runs (`inductor-tune validate`) ------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ValidationRun:
    """All validation records of one heuristic file version (path as given to validate, digest of its rules)."""

    heuristics_path: str
    digest: str
    records: int
    shapes: int  # distinct (kernel, M, N, dtype); fewer than records when shapes were re-measured
    kernels: tuple[str, ...]
    first: Any  # datetime of the earliest / latest record
    last: Any


@dataclasses.dataclass(frozen=True)
class ValidationPoint:
    """One variant of one validated problem, from the latest record of that problem in its run."""

    heuristics_path: str
    digest: str
    kernel: str
    dtype: str
    rows: int
    cols: int
    variant: str  # inductor_default, heuristics, best_found, or a peer library (quack, liger)
    median_ms: float
    gbps: float
    pct_of_ceiling: float
    ceiling_gbps: float  # the copy ceiling of that validation run: gbps / (pct_of_ceiling / 100)
    ratio_to_default: float  # default time / this time, with the per-round range
    ratio_low: float
    ratio_high: float
    studied: bool | None  # a study tuned this shape (None: record older than that field)
    regressed: bool  # the record's verdict: the rules made this shape slower beyond noise
    applied: bool  # the rules changed a kernel of this shape
    notes: tuple[str, ...]  # why variants are missing (peer not importable, not the same op, ...)
    created: Any
    # False: the record holds no rounds of this variant.  A gate run times the rules only where they
    # change a kernel and stores Inductor's own time for them elsewhere: that number was not measured.
    measured: bool = True
    drawn: bool = False  # a problem of a random draw (``validate --random``), not a chosen shape
    version: str | None = None  # a peer library's installed version (records since stop 19 keep it)


def _as_store(store_or_url) -> Store:
    return store_or_url if isinstance(store_or_url, Store) else open_store(str(store_or_url))


def validation_records(store_or_url, gpu: str | None = None) -> list:
    """Every validation record, oldest first, of the GPUs matching ``gpu``; none in databases older than the table."""
    from .store import ValidationRecord

    store = _as_store(store_or_url)
    # Databases written before validation records existed (db/sweeps.sqlite) lack the table, and reading
    # never upgrades a database; the store's own check is what crossmeasures() uses for the same case.
    if not store._has_table(ValidationRecord):
        return []
    records = store.validations()
    if gpu:
        keep = {g.fingerprint for g in gpus(store) if gpu_matches(gpu, g.name, g.fingerprint)}
        ids = _gpu_ids(store)
        records = [r for r in records if ids.get(r.gpu_id) in keep]
    return records


def validation_gpu_names(store_or_url) -> set[str]:
    """The names of the GPUs a database's validation records ran on (a fit reads records of its file's GPU only)."""
    import sqlalchemy as sa

    from .store import Gpu, ValidationRecord

    store = _as_store(store_or_url)
    if not store._has_table(ValidationRecord):
        return set()
    with store.session() as s:
        return set(s.scalars(sa.select(Gpu.name).join(ValidationRecord, ValidationRecord.gpu_id == Gpu.id).distinct()))


def _gpu_ids(store: Store) -> dict[int, str]:
    import sqlalchemy as sa

    from .store import Gpu

    with store.session() as s:
        return dict(s.execute(sa.select(Gpu.id, Gpu.fingerprint)).all())


def validation_runs(store_or_url, gpu: str | None = None) -> list[ValidationRun]:
    """One entry per (heuristics_path, digest) in a validation database, oldest run first."""
    groups = collections.defaultdict(list)
    for rec in validation_records(store_or_url, gpu):
        groups[(rec.heuristics_path, rec.heuristics_digest)].append(rec)
    runs = [
        ValidationRun(path, digest, len(recs), len({(r.kernel, r.rows, r.cols, r.dtype) for r in recs}),
                      tuple(sorted({r.kernel for r in recs})), min(r.created for r in recs),
                      max(r.created for r in recs))
        for (path, digest), recs in groups.items()
    ]
    return sorted(runs, key=lambda r: (r.last, r.heuristics_path))


MODEL_PREFIX = "model:"


def _latest_records(store_or_url, heuristics_path: str | None, digest: str | None, gpu: str | None = None) -> list:
    """Per (path, digest, kernel, M, N, dtype), the latest record (re-measured shapes replace older ones)."""
    latest = {}
    for rec in validation_records(store_or_url, gpu):  # ordered by id: later records win
        if rec.kernel.startswith(MODEL_PREFIX):  # whole-model steps (validate --models) have no kernel variants
            continue
        if (heuristics_path is not None and rec.heuristics_path != heuristics_path) or (
                digest is not None and rec.heuristics_digest != digest):
            continue
        key = (rec.heuristics_path, rec.heuristics_digest, rec.kernel, rec.rows, rec.cols, rec.dtype)
        if key not in latest or (rec.created, rec.id) >= (latest[key].created, latest[key].id):
            latest[key] = rec
    return sorted(latest.values(), key=lambda r: (r.heuristics_path, r.heuristics_digest, r.kernel, r.dtype,
                                                   r.cols, r.rows))


def validation_points(store_or_url, heuristics_path: str | None = None, digest: str | None = None,
                      gpu: str | None = None) -> list[ValidationPoint]:
    """Every variant of the latest record per problem, optionally of one file path and/or digest and GPU.

    Numbers are the stored summary's (``validate.ValidationRow``); nothing is recomputed but the ceiling.
    """
    out = []
    for rec in _latest_records(store_or_url, heuristics_path, digest, gpu):
        result = json.loads(rec.result_json)
        summary, timed = result.get("summary"), result.get("times") or {}
        if summary is None:  # a gate problem that failed: nothing was timed
            continue
        for v in summary["variants"]:
            out.append(ValidationPoint(
                rec.heuristics_path, rec.heuristics_digest, rec.kernel, rec.dtype, rec.rows, rec.cols, v["name"],
                v["median_ms"], v["gbps"], v["pct_of_ceiling"], v["gbps"] / (v["pct_of_ceiling"] / 100),
                v["ratio_to_default"], v["ratio_low"], v["ratio_high"], summary.get("studied"),
                bool(summary["regressed"]), bool(summary["heuristics_applied"]), tuple(summary["notes"]), rec.created,
                v["name"] in timed, "gate" in result, (result.get("peer_versions") or {}).get(v["name"]),
            ))
    return out


def validation_rows(store_or_url, heuristics_path: str | None = None, digest: str | None = None,
                    gpu: str | None = None) -> list:
    """The same latest records as ``validate.ValidationRow``s, for ``validate.render``'s table."""
    from .validate import row_from_summary

    rows = []
    for rec in _latest_records(store_or_url, heuristics_path, digest, gpu):
        s = json.loads(rec.result_json).get("summary")
        if s is None:  # a gate problem that failed: nothing was timed
            continue
        rows.append(row_from_summary(s))
    return rows


def validation_note(runs: Sequence[ValidationRun], heuristics_path: str, digest: str) -> str:
    """One plain sentence: which run validated this file's rules, or that none did."""
    mine = [r for r in runs if r.digest == digest]
    if mine:
        return "; ".join(f"validated as {r.heuristics_path} (digest {r.digest}): {r.shapes} shapes, "
                         f"{r.records} records, {r.first:%Y-%m-%d %H:%M} .. {r.last:%Y-%m-%d %H:%M} UTC" for r in mine)
    text = (f"the validation database has no record of {heuristics_path} with digest {digest}: "
            "these rules were never validated on the GPU")
    older = [r for r in runs if r.heuristics_path == heuristics_path]
    if older:
        text += ("; it holds runs of other versions of this path (digests "
                 + ", ".join(r.digest for r in older) + "), not shown: their rules differ")
    return text
