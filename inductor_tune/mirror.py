"""An Optuna study kept in RDB storage whose sampler runs on an in-memory copy.

Sampling straight from RDB storage is the tuner's bottleneck: with several trials in flight,
TPE's constant liar re-reads every RUNNING trial from the database for each parameter it suggests
(Optuna's cache only holds finished trials), about 0.1-0.3 s per trial on a GPU host's CPU, i.e.
fewer trials per second than the GPU measures.  The process that holds a study's lease is its only
writer, so an in-memory copy is exact: the sampler asks and is told there, and every trial is
written to the RDB study as well (RUNNING when dispatched, with its heartbeat, then finished), so
other processes, ``show`` and optuna-dashboard see the same ledger and ``kill -9`` leaves RUNNING
trials to fail and retry.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Iterable

import optuna
from optuna.trial import TrialState, create_trial

log = logging.getLogger(__name__)

FINISHED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
LOST_ATTR = "lost_process"  # set on a RUNNING trial failed because its process died


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
        self.shadow = optuna.create_study(direction="minimize", sampler=sampler)
        for trial in storage.get_all_trials(self.study_id, deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)):
            if trial.params:  # Inductor's default has none: nothing for the sampler to learn from
                self.shadow.add_trial(trial)

    @property
    def name(self) -> str:
        return self.study.study_name

    # -- recovery -------------------------------------------------------------------------

    def fail_lost(self) -> list[int]:
        """Fail every RUNNING trial: the caller holds the lease and has dispatched nothing yet."""
        lost = []
        for trial in self.storage.get_all_trials(self.study_id, deepcopy=False, states=(TrialState.RUNNING,)):
            self.storage.set_trial_user_attr(trial._trial_id, LOST_ATTR, True)
            self.storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
            lost.append(trial.number)
        return lost

    def queue_retries(self, measured_params: Iterable[dict[str, Any]]) -> int:
        """Queue again every lost trial whose params no later trial measured (survives repeated kills)."""
        done = {_key(p) for p in measured_params}
        queued = 0
        for trial in self.storage.get_all_trials(self.study_id, deepcopy=False, states=(TrialState.FAIL,)):
            if trial.user_attrs.get(LOST_ATTR) and trial.params and _key(trial.params) not in done:
                self.shadow.enqueue_trial(trial.params, user_attrs={"retry_of": trial.number}, skip_if_exists=False)
                done.add(_key(trial.params))
                queued += 1
        return queued

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
        RUNNING, so a kill in between leaves a trial that the next run fails, never a finished
        Optuna trial without its record.
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


def _key(params: dict[str, Any]) -> tuple:
    return tuple(sorted(params.items()))
