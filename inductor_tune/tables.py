"""The databases as tables: every stored trial as a pandas DataFrame (``load_trials``), and the
per-study table of ``inductor-tune show`` as CSV or JSON; needs no GPU.

Torch-free.  pandas is imported by ``load_trials`` only, so `show --csv` and `show --json` answer
without it.  Every value comes from the store's records as the other readers decode them: configs
with ``TrialConfig.from_json``, the main kernel slot as the figures pick it, Inductor's own config
for the default trial from the record of its choices (``figdata``).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
from typing import TYPE_CHECKING, Any, Sequence

from .figdata import _default_choice, _matches, _slot_from_key, _space_slots, main_slot, open_store
from .records import Outcome
from .runtime.launch import LAUNCH_FIELDS, POW2_FIELDS, STAGE_FIELDS
from .show import StudyRow
from .space import TrialConfig
from .store import Store

if TYPE_CHECKING:
    import pandas

TRIAL_COLUMNS = (
    "study", "experiment", "gpu", "gpu_fingerprint", "kernel", "rows", "cols", "dtype", "replayed",
    "trial", "outcome", "reason", "inductor_default", "verdict_best",
    "time_ms", "time_p20_ms", "time_p80_ms", "gbps", "pct_of_ceiling", "speedup_vs_default", "rel_error",
    "config", "split_reductions", "mix_order_reduction", "n_slots", "slot", *LAUNCH_FIELDS,
)
# Launch fields are missing where a trial has none (an illegal sample was never built), so the
# integer and boolean columns need pandas' nullable types rather than floats and objects.
_NULLABLE = {**{name: "Int64" for name in ("n_slots", *POW2_FIELDS, *STAGE_FIELDS)},
             **{name: "boolean" for name in ("persistent", "split_reductions", "mix_order_reduction")}}


def load_trials(db: str | Store, gpu: str | None = None, kernel: str | None = None) -> "pandas.DataFrame":
    """One row per stored trial (``TRIAL_COLUMNS``) of a database file, URL or open ``Store``.

    Per trial: its study (name, experiment, GPU name and fingerprint, kernel, rows, cols, dtype,
    replayed), Optuna trial number, outcome and reason, whether it is Inductor's default and whether
    the study's verdict picked it, the stored times, GB/s, % of the copy ceiling and speedup over the
    study's default trial, and its launch config: ``config`` (every kernel, readable), the graph flags,
    the number of kernels and the launch fields of the main one (``slot``, the kernel that dominates
    traffic).  Inductor's default gets the config Inductor picked for that kernel (no NUM_STAGES: the
    record of its choice keeps none); illegal samples, never built, get none.
    ``gpu``: only studies whose GPU name or fingerprint contains it; ``kernel``: only that kernel.
    Reading never writes to the database.
    """
    import pandas as pd

    store = db if isinstance(db, Store) else open_store(db)
    rows = [row for study in store.studies() if _matches(gpu, study) and (not kernel or study.kernel == kernel)
            for row in _trial_rows(store, study)]
    return pd.DataFrame.from_records(rows, columns=list(TRIAL_COLUMNS)).astype(_NULLABLE)


def _trial_rows(store: Store, study) -> list[dict[str, Any]]:
    trials = store.trials(study.id)
    verdict = store.verdict(study.id)
    best = verdict.best_trial_number if verdict is not None else None
    known = _space_slots(study)
    base = dict(study=study.name, experiment=study.experiment, gpu=study.gpu.name,
                gpu_fingerprint=study.gpu.fingerprint, kernel=study.kernel, rows=study.rows, cols=study.cols,
                dtype=study.dtype, replayed=bool(study.replayed))
    out = []
    for t in trials:
        row = dict(
            base, trial=t.trial_number, outcome=t.outcome.value, reason=t.reason, inductor_default=t.inductor_default,
            verdict_best=best is not None and t.trial_number == best, time_ms=t.time_ms, time_p20_ms=t.time_p20_ms,
            time_p80_ms=t.time_p80_ms, gbps=t.gbps, pct_of_ceiling=t.pct_of_ceiling,
            speedup_vs_default=t.speedup_vs_default, rel_error=t.rel_error,
        )
        row.update(_launch(study, t, known))
        out.append(row)
    return out


def _launch(study, trial, known) -> dict[str, Any]:
    """The launch columns of one trial record (empty for an illegal sample: its record holds only
    the sampler's params, which never made a config)."""
    if trial.outcome == Outcome.CONSTRAINT:
        return {}
    config = TrialConfig.from_json(trial.config_json)
    flags = dict(config=config.describe(), split_reductions=config.flags.split_reductions,
                 mix_order_reduction=config.flags.mix_order_reduction)
    if config.inductor_default:
        choice = _default_choice(study, trial, main_slot)
        n_slots = len(json.loads(trial.slots_json)) if trial.slots_json else None
        if choice is None:
            return dict(flags, n_slots=n_slots)
        return dict(flags, n_slots=n_slots, slot=choice.slot, **{f: getattr(choice, f, None) for f in LAUNCH_FIELDS})
    if not config.slots:
        return flags
    slot = main_slot([known.get(k) or _slot_from_key(k) for k, _ in config.slots], study.rows, study.cols)
    cfg = config.slot_map()[slot.key]
    return dict(flags, n_slots=len(config.slots), slot=slot.key, **{f: getattr(cfg, f) for f in LAUNCH_FIELDS})


# -- the `show` table --------------------------------------------------------------------------

STUDY_COLUMNS = (*(f.name for f in dataclasses.fields(StudyRow)), "default_pct", "best_pct")


def study_records(rows: Sequence[StudyRow]) -> list[dict[str, Any]]:
    """The rows `show` prints, unrounded, one dict each (``STUDY_COLUMNS``); missing numbers are None."""
    def value(v):
        return None if isinstance(v, float) and math.isnan(v) else v

    return [{k: value(v) for k, v in {**dataclasses.asdict(r), "default_pct": r.default_pct,
                                      "best_pct": r.best_pct}.items()} for r in rows]


def render_studies(rows: Sequence[StudyRow], fmt: str) -> str:
    """`show`'s table as ``csv`` (a header line, empty cells for missing numbers) or ``json`` (a list of objects)."""
    records = study_records(rows)
    if fmt == "json":
        return json.dumps(records, indent=1) + "\n"
    if fmt != "csv":
        raise ValueError(f"unknown table format {fmt!r}")
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(STUDY_COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return out.getvalue()
