"""The Optuna ask/tell loop: one study per (GPU fingerprint, kernel, shape, dtype), resumable.

Per study: probe the kernels Inductor generates (per graph-flag combination) and build the space;
measure Inductor's unmodified default as trial 0; in a fresh study, measure next the winners of
finished studies of other shapes (warm start, ``warmstart.py``); keep every worker busy with sampled
configs until the trial or time budget is spent; then re-measure the best few interleaved with the
default, re-time a winner against a fresh compile of the default, and store the verdict with its
spread.  Re-running the same command resumes: finished trials count toward the budget and the
stored space is reused.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import logging
import os
import socket
import time
from typing import Any

import optuna

from . import stats, warmstart
from .experiment import Experiment
from .mirror import LAUNCH_ATTR, Ledgered, MirroredStudy, launch_text
from .problem import Problem
from .records import Measurement, Outcome
from .space import (
    DEFAULT_FLAGS, INDUCTOR_DEFAULT, ConstraintViolation, GraphFlags, KernelSlot, SearchSpace, TrialConfig, params_of,
)
from .store import Store
from .tasks import ProbeTask, RemeasureTask, Task, TrialTask
from .workers import (
    WORKER_ACTIVATION_FACTOR, WORKER_FIXED_BYTES, TaskFailure, WorkerPool, run_tasks, workers_that_fit,
)

log = logging.getLogger(__name__)

MAX_CONSTRAINT_STREAK = 2000
# A replayed study whose verdict rests on fewer recorded measurements than this (or than its trial
# budget, if smaller) says so: with a sampler that strays from the recording most trials are configs
# it lacks, failed as NotRecorded, and the verdict compares only the few it has.
REPLAY_MIN_MEASUREMENTS = 10


def study_name(problem: Problem, fp_key: str) -> str:
    return f"{problem.kernel}/{problem.shape}/{problem.dtype}@{fp_key}"


def make_sampler(name: str, seed: int) -> optuna.samplers.BaseSampler:
    if name == "tpe":
        # Multivariate + group: slot parameters are conditional on persistent/looped and on the
        # graph flags; constant_liar keeps parallel workers from asking for the same point.
        return optuna.samplers.TPESampler(
            seed=seed, multivariate=True, group=True, constant_liar=True, n_startup_trials=10
        )
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "grid":
        # The Tuner enqueues every legal config in turn (Space.enumerate); the sampler only backs
        # up enqueued params.  BruteForceSampler cannot be used: it stops studies through
        # study.stop(), which ask/tell does not allow, and trips over the parameterless default.
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "cmaes":
        return optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
    if name == "gp":
        return optuna.samplers.GPSampler(seed=seed, warn_independent_sampling=False)
    raise ValueError(f"unknown sampler {name!r}")


def study_seed(seed: int, name: str) -> int:
    return (seed * 1_000_003 + int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)) % (2**31)


def _optuna_storage(url: str, exp: Experiment) -> optuna.storages.RDBStorage:
    kwargs = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {}
    for attempt in range(5):
        try:
            return optuna.storages.RDBStorage(
                url, engine_kwargs=kwargs, heartbeat_interval=exp.heartbeat_s, grace_period=exp.stale_after_s
            )
        except Exception as exc:
            # Several processes starting on a fresh database race to create Optuna's schema (seen on
            # PostgreSQL: duplicate type "studydirection"); the loser finds it created on retry.
            if attempt == 4:
                raise
            log.info("creating Optuna's tables collided with another process (%s); retrying", type(exc).__name__)
            time.sleep(1 + attempt)
    raise AssertionError("unreachable")


def _owner_is_dead(owner: str) -> bool:
    """A lease owner on this host whose process no longer exists (its lease need not go stale)."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, owned by another user
        return False
    return False


class StudyFailed(RuntimeError):
    pass


@dataclasses.dataclass
class _InFlight:
    trial: optuna.trial.Trial | None  # the sampler's trial (None: Inductor's default)
    ledgered: Ledgered
    config: TrialConfig


class Tuner:
    """Runs an experiment's studies on one GPU's worker pool."""

    def __init__(self, exp: Experiment, pool: WorkerPool, store: Store, progress=None):
        self.exp = exp
        self.pool = pool
        self.store = store
        self.progress = progress
        # Sweeps (every config of a sub-grid) get studies of their own, apart from sampled ones.
        self.fp_key = pool.fingerprint.key + ("/sweep" if exp.sweep else "")
        self.replayed = pool.fingerprint.replayed
        self.gpu_id = store.upsert_gpu(pool.fingerprint, pool.ceiling_gbps, key=self.fp_key)
        # A focused study (one kernel varied) is evidence of the same GPU, under a name of its own.
        self.study_key = self.fp_key + (f"/focus={exp.focus}" if exp.focus else "")
        self._storage = _optuna_storage(store.url, exp)
        self._task_ids = itertools.count()
        self._last_beat = 0.0
        self.owner = f"{socket.gethostname()}:{os.getpid()}"
        self._lease: str | None = None
        self.measured = 0
        self.measure_wall_s = 0.0
        self.parent_busy_s = 0.0  # time the search loop spent sampling and recording, not waiting

    # -- pool helpers ---------------------------------------------------------------------

    def _workers_for(self, problem: Problem) -> int:
        act = problem.shape.rows * problem.shape.cols * (2 if problem.dtype != "fp32" else 4)
        per_worker = WORKER_FIXED_BYTES + WORKER_ACTIVATION_FACTOR[problem.spec.backward] * act
        return workers_that_fit(self.pool.fingerprint.memory_bytes, per_worker,
                                min(self.pool.size, self.exp.workers or self.pool.size))

    def _run_blocking(self, tasks: list[Task], width: int, trials: list[Ledgered] = ()) -> dict[int, Any]:
        """Run tasks on up to ``width`` workers and wait for all of them (``trials`` keep beating)."""
        results: dict[int, Any] = {}
        beating = {i: _InFlight(None, t, INDUCTOR_DEFAULT) for i, t in enumerate(trials)}
        run_tasks(self.pool, tasks, lambda task, result: results.__setitem__(task.task_id, result), width,
                  tick=lambda: self._heartbeat(beating))
        return results

    # -- studies --------------------------------------------------------------------------

    def run(self) -> list[str]:
        """Run every study not finished yet; a study whose default compile fails is reported and skipped.

        Studies are leased one at a time, so several `tune` processes (one per GPU or host) on one
        storage share the study set: each takes studies nobody holds, and takes over those whose
        holder stopped renewing its lease.
        """
        names: list[str] = []
        self.failed: list[str] = []
        pending = self.exp.problems()
        while pending:
            progressed = False
            for problem in list(pending):
                name = study_name(problem, self.study_key)
                if self.store.finished(name, self.exp.trials):
                    pending.remove(problem)
                    names.append(name)
                    continue
                if not self.store.claim(name, self.owner, self.exp.stale_after_s, _owner_is_dead):
                    continue  # another process runs it
                self._lease = name
                try:
                    # The previous holder may have finished it between our check and our claim.
                    names.append(name if self.store.finished(name, self.exp.trials) else self.run_study(problem))
                except StudyFailed as exc:
                    log.error("%s", exc)
                    self.failed.append(str(exc))
                finally:
                    self.store.release(name, self.owner)
                    self._lease = None
                pending.remove(problem)
                progressed = True
            if pending and not progressed:
                time.sleep(self.exp.heartbeat_s)  # the rest are held by live processes: wait for them
        return names

    def run_study(self, problem: Problem) -> str:
        name = study_name(problem, self.study_key)
        seed = study_seed(self.exp.seed, name)
        sampler_name = "sweep" if self.exp.sweep else self.exp.sampler
        study = MirroredStudy(self._storage, name, make_sampler(self.exp.sampler, seed))
        study.study.set_user_attr("problem", {"kernel": problem.kernel, "shape": str(problem.shape), "dtype": problem.dtype})
        study.study.set_user_attr("seed", seed)
        study.study.set_user_attr("sampler", sampler_name)
        record = self.store.get_or_create_study(
            name, gpu_id=self.gpu_id, kernel=problem.kernel, rows=problem.shape.rows, cols=problem.shape.cols,
            dtype=problem.dtype, experiment=self.exp.name, sampler=sampler_name, seed=seed, replayed=self.replayed,
        )
        width = self._workers_for(problem)
        self.pool.release(keep=width)
        log.info("study %s: %d worker(s)", name, width)
        space = SearchSpace.from_json(record.space_json) if record.space_json else None
        retries = self._recover(study, record.id, space)
        if space is None:
            space = self._first_phase(study, record.id, problem, width)
            try:
                if self.exp.focus:
                    space = space.focused(self.exp.focus, problem.shape.rows, problem.shape.cols)
                space = space.with_grid(self.exp.grid)
            except ValueError as exc:
                raise StudyFailed(f"skipping {name}: {exc}") from None
            self.store.set_space(record.id, space.to_json())
        self._search(study, record.id, problem, space, width, retries)
        self._verdict(study, record.id, problem)
        if self.replayed:
            self._check_replay_coverage(name, record.id)
        return name

    def _recover(self, study: MirroredStudy, study_id: int, space: SearchSpace | None) -> int:
        """Settle the trials a dead process left RUNNING (``MirroredStudy.recover``), told as their
        stored records say; returns how many lost trials are queued again."""
        records = self.store.trials(study_id)
        told = {r.trial_number: self._told(Measurement(r.outcome, r.reason, time_ms=r.time_ms, gbps=r.gbps))
                for r in records}
        # Sampled trials exist only once the space is stored: before, no lost trial has params to retry.
        measured = None if space is None else [
            (r.trial_number, params_of(TrialConfig.from_json(r.config_json), space))
            for r in records if r.outcome != Outcome.CONSTRAINT and not r.inductor_default
        ]
        # As _first_phase decides: without this record, the default is measured again.
        default = next((r.trial_number for r in records if r.inductor_default and r.slots_json), None)
        return study.recover(told, measured, default)

    def _check_replay_coverage(self, name: str, study_id: int) -> None:
        """One WARNING line when a replayed verdict rests on few recorded measurements."""
        records = [r for r in self.store.trials(study_id) if r.outcome != Outcome.CONSTRAINT]
        ok = sum(r.outcome == Outcome.OK for r in records)
        if ok >= min(REPLAY_MIN_MEASUREMENTS, self.exp.trials) or self.store.verdict(study_id) is None:
            return
        missing = sum(r.reason.startswith("NotRecorded") for r in records)
        log.warning(
            "%s: the replayed verdict rests on %d recorded measurement(s), fewer than %d; %d of %d trials asked "
            "for configs the recording lacks (sampler %s; --sampler grid, the replay default, walks only what "
            "was recorded)", name, ok, min(REPLAY_MIN_MEASUREMENTS, self.exp.trials), missing, len(records),
            self.exp.sampler,
        )

    def _heartbeat(self, in_flight) -> None:
        now = time.monotonic()
        if now - self._last_beat >= self.exp.heartbeat_s / 2:
            self._last_beat = now
            if self._lease is not None:
                self.store.renew(self._lease, self.owner)
            for flight in in_flight.values():
                self._storage.record_heartbeat(flight.ledgered.trial_id)

    def _first_phase(self, study: MirroredStudy, study_id: int, problem: Problem, width: int) -> SearchSpace:
        """Measure Inductor's default (trial 0) while probing the other graph-flag combinations.

        The default compile reports the kernels of the default flags; each other combination is
        compiled once to see which kernels it generates.
        """
        others = [GraphFlags(s, m) for s in (True, False) for m in (True, False) if GraphFlags(s, m) != DEFAULT_FLAGS]
        tasks: list[Task] = [ProbeTask(next(self._task_ids), problem, f) for f in others]
        default_rec = next((r for r in self.store.trials(study_id) if r.inductor_default and r.slots_json), None)
        default_trial = None
        if default_rec is None:
            default_trial = study.start(None, {"inductor_default": True, LAUNCH_ATTR: launch_text(INDUCTOR_DEFAULT)})
            tasks.insert(0, TrialTask(next(self._task_ids), problem, INDUCTOR_DEFAULT, self.exp.timing))
        results = self._run_blocking(tasks, width, trials=[default_trial] if default_trial else [])
        if default_trial is not None:
            result = results[tasks[0].task_id]
            m = result if isinstance(result, Measurement) else Measurement(result.outcome, result.reason)
            default_rec = self._record(study, study_id, _InFlight(None, default_trial, INDUCTOR_DEFAULT), m, m.time_ms)
            if self.progress is not None:
                self.progress.update(1)
            tasks = tasks[1:]
        if not default_rec.slots_json:
            raise StudyFailed(f"skipping {study.name}: Inductor's default compile failed: {default_rec.reason}")
        structures = [(DEFAULT_FLAGS, tuple(KernelSlot(**s) for s in json.loads(default_rec.slots_json)))]
        for flags, task in zip(others, tasks):
            result = results[task.task_id]
            if isinstance(result, TaskFailure):
                log.warning("probe with %s failed (%s); that combination is not searched", flags, result.reason)
                continue
            structures.append((flags, tuple(result)))
        return SearchSpace(tuple(structures))

    def _search(self, study: MirroredStudy, study_id: int, problem: Problem, space: SearchSpace, width: int,
                retries: int) -> None:
        records = self.store.trials(study_id)
        measured = [r for r in records if r.outcome != Outcome.CONSTRAINT]
        seen: dict[str, Any] = {r.config_json: r for r in measured if r.outcome == Outcome.OK}
        tried = {r.config_json for r in measured}  # grid search does not repeat failed configs either
        default_rec = next((r for r in records if r.inductor_default and r.outcome == Outcome.OK), None)
        default_ms = default_rec.time_ms if default_rec else None
        budget = self.exp.trials - len(measured)
        # Only a fresh study: a resumed one (lost trials included) has already spent its first trials.
        fresh = not retries and all(r.inductor_default for r in records)
        if fresh and self.exp.warm_start and self.exp.sampler != "grid" and not self.exp.sweep:
            self._warm_start(study, problem, space, tried)
        deadline = time.monotonic() + self.exp.timeout_s if self.exp.timeout_s else None
        in_flight: dict[int, _InFlight] = {}
        grid = None
        if self.exp.sampler == "grid":
            grid = iter(self._grid_configs(problem, space))
        exhausted = False
        streak = n_measured = 0
        start, busy = time.monotonic(), 0.0

        def next_trial() -> Task | None:
            """Asked whenever a worker is free: the next trial to measure, None once the study is done.
            Illegal samples and revisited configs are recorded here, without a worker."""
            nonlocal budget, exhausted, streak, busy
            t_busy = time.monotonic()
            try:
                while budget > 0 and not exhausted and streak < MAX_CONSTRAINT_STREAK and not (
                        deadline is not None and time.monotonic() > deadline):
                    if grid is not None and not study.waiting():  # retries of lost trials go first
                        pending = next((c for c in grid if c.to_json() not in tried), None)
                        if pending is None:
                            exhausted = True
                            break
                        study.enqueue(params_of(pending, space))
                    trial = study.ask()
                    try:
                        config = space.suggest(trial)
                    except ConstraintViolation as violation:
                        streak += 1
                        self._record_now(study, study_id, trial, None, Measurement(Outcome.CONSTRAINT, str(violation)),
                                         default_ms)
                        continue
                    streak = 0
                    budget -= 1
                    key = config.to_json()
                    if key in seen:  # samplers revisit points; the measurement is reused, not repeated
                        self._record_now(study, study_id, trial, config, _reused(seen[key]), default_ms)
                        if self.progress is not None:
                            self.progress.update(1)
                        continue
                    tried.add(key)
                    return self._trial_task(problem, study, trial, config, in_flight)
                return None
            finally:
                busy += time.monotonic() - t_busy

        def record(task: Task, result) -> None:
            nonlocal n_measured, busy
            t_busy = time.monotonic()
            flight = in_flight.pop(task.task_id)
            m = result if isinstance(result, Measurement) else Measurement(result.outcome, result.reason)
            rec = self._record(study, study_id, flight, m, default_ms)
            if m.outcome == Outcome.OK:
                seen[flight.config.to_json()] = rec
            n_measured += 1
            if self.progress is not None:
                self.progress.update(1)
            busy += time.monotonic() - t_busy

        run_tasks(self.pool, next_trial, record, width, tick=lambda: self._heartbeat(in_flight))
        if streak >= MAX_CONSTRAINT_STREAK:
            log.warning("%s: stopped after %d illegal samples in a row", study.name, streak)
        wall = time.monotonic() - start
        log.info("%s: %d trials measured in %.1f s; sampling and recording took %.1f s of it", study.name,
                 n_measured, wall, busy)
        self.measured += n_measured
        self.measure_wall_s += wall
        self.parent_busy_s += busy

    def _warm_start(self, study: MirroredStudy, problem: Problem, space: SearchSpace, tried: set[str]) -> None:
        """Queue, as the first sampled trials, the best configs of finished studies of other shapes.

        Sources share this study's fingerprint key (so GPU model, software stack, and replayed or
        measured) and dtype; ``warmstart.pick`` ranks them and keeps legal configs of this space.
        Replayed on the sweeps this beat plain TPE on every measure (README "Search strategies").
        """
        recorded = self.pool.recorded_configs(problem)
        have = None if recorded is None else {c.to_json() for c in recorded}

        def accept(config: TrialConfig) -> bool:
            key = config.to_json()
            return key not in tried and (have is None or key in have)  # a replay refuses unrecorded configs

        sources = warmstart.finished_sources(self.store, self.gpu_id, problem.dtype, exclude=study.name)
        picked = warmstart.pick(problem.kernel, problem.shape.cols, space, sources, self.exp.warm_start, accept)
        for config, source in picked:
            study.enqueue(params_of(config, space), {warmstart.WARM_ATTR: source.name})
            log.info("%s: warm start from %s: %s", study.name, source.name, config.describe())

    def _grid_configs(self, problem: Problem, space: SearchSpace) -> list[TrialConfig]:
        """Every config to measure: the space's, or under replay those of them the recording has."""
        recorded = self.pool.recorded_configs(problem)
        if recorded and not space.grid:
            return recorded  # the full space can be too large to enumerate; the recording is not
        configs = space.enumerate()
        if recorded:
            keep = {c.to_json() for c in recorded}
            configs = [c for c in configs if c.to_json() in keep]
        return configs

    def _trial_task(self, problem: Problem, study: MirroredStudy, trial, config: TrialConfig, in_flight) -> TrialTask:
        """The task that measures ``trial``, its start written to the ledger as a worker takes it."""
        task = TrialTask(next(self._task_ids), problem, config, self.exp.timing)
        in_flight[task.task_id] = _InFlight(trial, study.start(trial, {LAUNCH_ATTR: launch_text(config)}), config)
        return task

    @staticmethod
    def _attrs(m: Measurement) -> dict[str, Any]:
        attrs: dict[str, Any] = {"outcome": m.outcome.value}
        if m.reason:
            attrs["reason"] = m.reason[:500]
        if m.gbps:
            attrs["gbps"] = round(m.gbps, 1)
        return attrs

    @classmethod
    def _told(cls, m: Measurement) -> tuple[optuna.trial.TrialState, float | None, dict[str, Any]]:
        """What Optuna is told of a measurement: its state, its value (COMPLETE only), its user attributes."""
        state = cls._state(m)
        return state, m.time_ms if state == optuna.trial.TrialState.COMPLETE else None, cls._attrs(m)

    @staticmethod
    def _state(m: Measurement) -> optuna.trial.TrialState:
        if m.outcome == Outcome.OK:
            return optuna.trial.TrialState.COMPLETE
        if m.outcome == Outcome.CONSTRAINT:
            return optuna.trial.TrialState.PRUNED
        return optuna.trial.TrialState.FAIL

    def _record(self, study: MirroredStudy, study_id: int, flight: _InFlight, m: Measurement, default_ms):
        """Store a dispatched trial's record, then finish it in both studies (a kill in between
        leaves it RUNNING: the next run finishes it from its record, see ``_recover``)."""
        state, value, attrs = self._told(m)
        if flight.config.inductor_default and m.inductor_choice:  # what "inductor default" turned out to be
            attrs[LAUNCH_ATTR] = launch_text(flight.config, m.inductor_choice)
        rec = self._store_record(study, study_id, flight.ledgered.number, flight.config, flight.trial, m, default_ms)
        study.finish(flight.trial, flight.ledgered, state, value, attrs)
        return rec

    def _record_now(self, study: MirroredStudy, study_id: int, trial, config: TrialConfig | None, m: Measurement, default_ms):
        """Record a trial that needs no worker: an illegal config or a reused measurement."""
        state, value, attrs = self._told(m)
        if config is not None:
            attrs[LAUNCH_ATTR] = launch_text(config)
        return study.record(
            trial, state, value, attrs,
            lambda number: self._store_record(study, study_id, number, config, trial, m, default_ms),
        )

    def _store_record(self, study: MirroredStudy, study_id: int, number: int, config: TrialConfig | None, trial,
                      m: Measurement, default_ms):
        if m.outcome != Outcome.CONSTRAINT:
            log.info("%s #%d %s %s %s", study.name.split("@")[0], number, m.outcome.value,
                     f"{m.time_ms * 1e3:.1f} us {m.gbps:.0f} GB/s" if m.time_ms else m.reason[:300],
                     config.describe() if config else "")
        config_json = config.to_json() if config else json.dumps({"params": trial.params})
        is_default = bool(config and config.inductor_default)
        return self.store.add_trial(study_id, number, config_json, is_default, m, default_ms)

    # -- verdict ----------------------------------------------------------------------------

    def _verdict(self, study: MirroredStudy, study_id: int, problem: Problem) -> None:
        records = self.store.trials(study_id)
        ok = [r for r in records if r.outcome == Outcome.OK]
        default = next((r for r in ok if r.inductor_default), None)
        existing = self.store.verdict(study_id)
        if default is None or (existing is not None and existing.trials_measured == len(ok)):
            return
        ranked, seen = [], set()
        for r in sorted((r for r in ok if not r.inductor_default), key=lambda r: r.time_ms):
            if r.config_json not in seen:
                seen.add(r.config_json)
                ranked.append(r)
        finalists = ranked[: self.exp.finalists]
        # Every finalist stays compiled and captured at once; other workers give their memory back.
        self.pool.release(keep=1)
        result = self._remeasure(problem, [TrialConfig.from_json(r.config_json) for r in finalists])
        if isinstance(result, TaskFailure):
            log.warning("re-measure of %s failed: %s", study.name, result.reason)
            return
        verdict, confirmation = stats.summarize_verdict(result.times, finalists), None
        if verdict["improved"]:
            # The winner was picked as the best of several noisy ratios; a second compile of it and of
            # the default, timed afresh, shows whether its gain survives compile-to-compile variance.
            fresh = self._remeasure(problem, [TrialConfig.from_json(verdict["best_config_json"])])
            if isinstance(fresh, TaskFailure):
                log.warning("confirming the winner of %s failed: %s", study.name, fresh.reason)
                return  # no verdict, as when the re-measure fails: the next run tries again
            confirmation = stats.confirm_winner(fresh.times, verdict["best_trial_number"], verdict["best_config_json"])
            verdict["improved"] = confirmation["confirmed"]
            log.info("%s: winner re-timed in fresh rounds: %s", study.name, confirmation["reason"])
        self.store.set_verdict(study_id, trials_measured=len(ok), confirmation=confirmation, **verdict)

    def _remeasure(self, problem: Problem, configs: list[TrialConfig]) -> Any:
        """``configs`` compiled afresh with Inductor's default first and timed interleaved, on one worker."""
        task = RemeasureTask(next(self._task_ids), problem, (INDUCTOR_DEFAULT, *configs), self.exp.rounds,
                             self.exp.timing)
        return self._run_blocking([task], 1)[task.task_id]


def _reused(rec) -> Measurement:
    return Measurement(
        Outcome.OK, f"same config as trial {rec.trial_number}: its measurement is reused, not repeated",
        time_ms=rec.time_ms, time_p20_ms=rec.time_p20_ms, time_p80_ms=rec.time_p80_ms, gbps=rec.gbps,
        ceiling_gbps=rec.ceiling_gbps, rel_error=rec.rel_error, source_hash=rec.source_hash, timing=rec.timing_json,
    )
