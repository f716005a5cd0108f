"""An Optuna study kept in RDB storage whose sampler runs on an in-memory copy.

Sampling straight from RDB storage is the tuner's bottleneck: with several trials in flight,
TPE's constant liar re-reads every RUNNING trial from the database for each parameter it suggests
(Optuna's cache only holds finished trials), about 0.1-0.3 s per trial on a GPU host's CPU, i.e.
fewer trials per second than the GPU measures.  The process that holds a study's lease is its only
writer, so an in-memory copy is exact: the sampler asks and is told there, and every trial is
written to the RDB study as well (RUNNING when dispatched, with its heartbeat, then finished), so
other processes, ``show`` and optuna-dashboard see the same ledger and ``kill -9`` leaves RUNNING
trials for the next run to settle: finished as their stored records say, or failed and retried.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Iterable

import json

import optuna
from optuna.trial import TrialState, create_trial

from .space import SlotConfig, TrialConfig

log = logging.getLogger(__name__)

# What the value told to Optuna is (search.Tuner._told: the trial's median time); optuna-dashboard
# labels its objective axis with it instead of "Objective 0".
METRIC_NAMES = ["time_ms"]
# The launch config a trial forced, readable: the dashboard shows params as the sampler stores
# them (log2 exponents per slot), which neither say the block sizes nor cover Inductor's default.
LAUNCH_ATTR = "launch"

FINISHED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
LOST_ATTR = "lost_process"  # set on a RUNNING trial failed because its process died
# Set on a RUNNING trial whose process died after storing its record: finished from that record
# by the next run, so its datetime_complete is that run's, not the measurement's.
SETTLED_ATTR = "finished_from_record"


@dataclasses.dataclass(frozen=True)
class Ledgered:
    """A trial as written to the RDB study."""

    trial_id: int
    number: int


class MirroredStudy:
    def __init__(self, storage: optuna.storages.RDBStorage, name: str, sampler: optuna.samplers.BaseSampler):
        self.storage = storage
        # The RDB study never samples (its sampler is never asked); RandomSampler avoids TPE's setup.
        self.study = optuna.create_study(
            study_name=name, storage=storage, direction="minimize", load_if_exists=True,
            sampler=optuna.samplers.RandomSampler(),
        )
        self.study_id = self.study._study_id
        if self.study.metric_names != METRIC_NAMES:  # studies created before it was set get it on resume
            self.study.set_metric_names(METRIC_NAMES)
        self.shadow = optuna.create_study(direction="minimize", sampler=sampler)
        for trial in storage.get_all_trials(self.study_id, deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)):
            if trial.params:  # Inductor's default has none: nothing for the sampler to learn from
                self.shadow.add_trial(trial)

    @property
    def name(self) -> str:
        return self.study.study_name

    # -- recovery -------------------------------------------------------------------------

    def recover(self, recorded: dict[int, tuple[TrialState, float | None, dict[str, Any]]],
                measured: list[tuple[int, dict[str, Any]]] | None, default: int | None) -> int:
        """Settle every RUNNING trial, one WARNING line each; returns how many lost trials are queued again.

        The caller holds the lease and has dispatched nothing yet, so each RUNNING trial was left by
        a process that died (killed, host lost).  One killed after storing its record is finished as
        that record says (optuna-dashboard would show a FAIL beside an ``ok`` record otherwise) and
        not measured again.  One killed before is failed, never silently counted, and queued again
        unless a trial holds its params.
        ``recorded``: per trial number with a record, what Optuna is told of it (state, value, user
        attributes).  ``measured``: (number, params) of the records that need no retry; None while
        the study has no search space.  ``default``: the trial holding Inductor's default's record;
        None when the default is measured again.
        """
        settled, lost = self._settle_running(recorded)
        for number in settled:
            state, _, attrs = recorded[number]
            log.warning("trial %d of %s lost its process after its record was stored; finished %s (%s) as "
                        "recorded, not measured again", number, self.name, state.name, attrs.get("outcome"))
        retries = {} if measured is None else self._queue_retries(measured)
        queued = {number for number, holder in retries.items() if holder is None}
        for trial in lost:
            holder = retries.get(trial.number, -1)
            if holder is None:
                fate = "failed and queued again"
            elif holder in queued:
                fate = f"failed, not queued again: trial {holder}, lost as well, is queued again with its params"
            elif holder >= 0:
                fate = f"failed, not queued again: trial {holder} has a record of its params"
            elif trial.user_attrs.get("inductor_default"):
                fate = ("failed; Inductor's default is measured again in a new trial" if default is None else
                        f"failed, not measured again: trial {default} has Inductor's default's record")
            else:
                fate = "failed, not queued again: " + ("the study has no search space yet" if trial.params
                                                       else "it has no params")
            log.warning("trial %d of %s lost its process before its record was stored; %s", trial.number,
                        self.name, fate)
        for number in sorted(queued - {t.number for t in lost}):
            log.warning("trial %d of %s, lost in an earlier run and not measured since, queued again", number,
                        self.name)
        return len(queued)

    def _settle_running(self, recorded) -> tuple[list[int], list[optuna.trial.FrozenTrial]]:
        """Finish the RUNNING trials with a record as recorded, fail the rest as lost; returns the
        numbers finished and the trials failed."""
        finished, failed = [], []
        for trial in self.storage.get_all_trials(self.study_id, deepcopy=False, states=(TrialState.RUNNING,)):
            if trial.number not in recorded:
                self.storage.set_trial_user_attr(trial._trial_id, LOST_ATTR, True)
                self.storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
                failed.append(trial)
                continue
            state, value, user_attrs = recorded[trial.number]
            for key, val in {**user_attrs, SETTLED_ATTR: True}.items():
                self.storage.set_trial_user_attr(trial._trial_id, key, val)
            self.storage.set_trial_state_values(trial._trial_id, state, [value] if value is not None else None)
            if trial.params and state in (TrialState.COMPLETE, TrialState.PRUNED):  # as __init__ loads them
                self.shadow.add_trial(self.storage.get_trial(trial._trial_id))
            finished.append(trial.number)
        return finished, failed

    def _queue_retries(self, measured: Iterable[tuple[int, dict[str, Any]]]) -> dict[int, int | None]:
        """Queue again every lost trial whose params no trial measured (survives repeated kills).

        Returns, for every lost trial with params, None where it was queued again, else the number
        of the trial that holds its params: one that measured them, or a lost one queued again.
        """
        holder: dict[tuple, int] = {}
        for number, params in measured:
            holder.setdefault(_key(params), number)
        retries: dict[int, int | None] = {}
        for trial in self.storage.get_all_trials(self.study_id, deepcopy=False, states=(TrialState.FAIL,)):
            if not (trial.user_attrs.get(LOST_ATTR) and trial.params):
                continue
            key = _key(trial.params)
            if key in holder:
                retries[trial.number] = holder[key]
                continue
            self.shadow.enqueue_trial(trial.params, user_attrs={"retry_of": trial.number}, skip_if_exists=False)
            holder[key] = trial.number
            retries[trial.number] = None
        return retries

    def enqueue(self, params: dict[str, Any], user_attrs: dict[str, Any] | None = None) -> None:
        """Queue params for the next ask; ``user_attrs`` go with the trial to the RDB study."""
        self.shadow.enqueue_trial(params, user_attrs=user_attrs)

    def waiting(self) -> int:
        return len(self.shadow.get_trials(deepcopy=False, states=(TrialState.WAITING,)))

    # -- trials ---------------------------------------------------------------------------

    def ask(self) -> optuna.trial.Trial:
        return self.shadow.ask()

    def start(self, trial: optuna.trial.Trial | None, user_attrs: dict[str, Any] | None = None) -> Ledgered:
        """Write a dispatched trial as RUNNING (``trial`` None: Inductor's default, no params)."""
        attrs = dict(trial.user_attrs) if trial is not None else {}
        attrs.update(user_attrs or {})
        template = create_trial(
            state=TrialState.RUNNING, params=trial.params if trial else None,
            distributions=trial.distributions if trial else None, user_attrs=attrs,
        )
        trial_id = self.storage.create_new_trial(self.study_id, template_trial=template)
        self.storage.record_heartbeat(trial_id)
        return Ledgered(trial_id, self.storage.get_trial_number_from_id(trial_id))

    def finish(self, trial: optuna.trial.Trial | None, ledgered: Ledgered, state: TrialState,
               value: float | None, user_attrs: dict[str, Any]) -> None:
        for key, val in user_attrs.items():
            self.storage.set_trial_user_attr(ledgered.trial_id, key, val)
        self.storage.set_trial_state_values(ledgered.trial_id, state, [value] if value is not None else None)
        if trial is not None:
            self._tell_shadow(trial, state, value, user_attrs)

    def record(self, trial: optuna.trial.Trial, state: TrialState, value: float | None,
               user_attrs: dict[str, Any], store_record) -> Any:
        """A trial finished as soon as it is asked (illegal config, reused measurement).

        ``store_record(number)`` writes the project's record while the Optuna trial is still
        RUNNING, so a kill in between leaves a RUNNING trial that the next run finishes as its
        record says (``recover``), never a finished Optuna trial without its record.
        """
        template = create_trial(
            state=TrialState.RUNNING, params=trial.params, distributions=trial.distributions,
            user_attrs={**trial.user_attrs, **user_attrs},
        )
        trial_id = self.storage.create_new_trial(self.study_id, template_trial=template)
        result = store_record(self.storage.get_trial_number_from_id(trial_id))
        self.storage.set_trial_state_values(trial_id, state, [value] if value is not None else None)
        self._tell_shadow(trial, state, value, user_attrs)
        return result

    def _tell_shadow(self, trial, state: TrialState, value: float | None, user_attrs: dict[str, Any]) -> None:
        for key, val in user_attrs.items():
            trial.set_user_attr(key, val)
        self.shadow.tell(trial, value if state == TrialState.COMPLETE else None,
                         state=None if state == TrialState.COMPLETE else state)


def launch_text(config: TrialConfig, inductor_choice: str | None = None) -> str:
    """``config`` as the ``launch`` user attribute; Inductor's default with the configs it picked per
    kernel (``inductor_choice``: a measurement's JSON of them), once it has been measured."""
    text = config.describe()
    if config.inductor_default and inductor_choice:
        picked = [f"x{c['size_hints'].get('x')}.r{c['size_hints'].get('r0_')}: "
                  f"{SlotConfig.from_inductor_choice(c).describe()}" for c in json.loads(inductor_choice)]
        text += ": " + "; ".join(picked)
    return text


def _key(params: dict[str, Any]) -> tuple:
    return tuple(sorted(params.items()))
