"""When a study may call its best config a win: each condition of the rule alone, then the re-timing.

The rule (``stats.beats_default``) is checked on hand-made rounds, one condition failing at a time
while the others hold.  The re-timing runs the real Tuner on the scripted study pool of fake_pools.py,
whose second ``remeasure`` (the fresh compile of the default and the winner) is scripted here.
"""

import json
import shutil
import sqlite3

import pytest
from fake_pools import remeasured

from inductor_tune import stats, validate, warmstart
from inductor_tune.records import Outcome
from inductor_tune.search import Tuner
from inductor_tune.stats import summarize_verdict as summarize
from inductor_tune.show import study_rows
from inductor_tune.store import SCHEMA_VERSION, Store
from inductor_tune.tasks import RemeasureTask
from inductor_tune.workers import TaskFailure
from fake_pools import STUDY_GPU, StudyPool, study_experiment

DEFAULT = [1.0, 1.0, 1.0, 1.0, 1.0]


# -- the rule, one condition at a time ------------------------------------------------------------

def test_a_clear_gain_in_every_round_is_a_win():
    default, candidate = [1.0, 1.01, 0.99], [0.8, 0.81, 0.8]
    assert stats.beats_default(default, candidate)
    assert stats.classify(default, candidate) == stats.FASTER


def test_faster_in_every_round_but_within_the_noise_floor_is_not_a_win():
    # Spreads of zero: only the floor stands between a 1 % gain and a win.
    candidate = [0.99] * 5
    assert not stats.beats_default(DEFAULT, candidate)
    assert stats.ties_default(DEFAULT, candidate)
    # The same rounds win once the floor is below the gain: the floor decided it.
    assert stats.beats_default(DEFAULT, candidate, floor=0.005)


def test_one_slower_round_is_not_a_win():
    # Median gain 17.6 %, both spreads under 10 %, but round 5 the default was faster.
    default, candidate = [1.0, 1.0, 1.0, 1.0, 0.9], [0.85, 0.85, 0.85, 0.85, 0.91]
    comparison = stats.compare(default, candidate)
    assert comparison.speedup > 1 + comparison.band and comparison.wins == 4
    assert not stats.beats_default(default, candidate)
    assert stats.beats_default(default, [0.85, 0.85, 0.85, 0.85, 0.89])  # that round won: a win


def test_a_gain_inside_the_defaults_spread_is_not_a_win():
    # 11 % faster in every round, the candidate steady, but the default itself ranged over 15 %.
    default, candidate = [1.0, 1.1, 0.95], [0.9, 0.9, 0.9]
    assert stats.spread(default) == pytest.approx(0.15) and stats.spread(candidate) == 0
    assert all(d > c for d, c in zip(default, candidate))
    assert not stats.beats_default(default, candidate)
    assert stats.beats_default([1.0, 1.01, 0.99], candidate)  # a steady default: a win


def test_a_gain_inside_the_candidates_spread_is_not_a_win():
    default, candidate = [1.0, 1.0, 1.0], [0.8, 0.95, 0.9]
    assert stats.spread(candidate) > 1 / 0.9 - 1 > stats.NOISE_FLOOR
    assert not stats.beats_default(default, candidate)
    assert stats.beats_default(default, [0.88, 0.9, 0.9])


def test_untimed_rounds_show_nothing():
    assert not stats.beats_default(DEFAULT, [None] * 5)
    assert not stats.beats_default(DEFAULT, [0.5, 0.5, None, 0.5, 0.5])
    assert stats.classify([None] * 3, [0.5] * 3) == stats.WITHIN_NOISE


def test_classify_is_symmetric():
    assert stats.classify(DEFAULT, [1.2] * 5) == stats.SLOWER
    assert stats.classify([1.2] * 5, DEFAULT) == stats.FASTER
    assert stats.classify(DEFAULT, [1.01] * 5) == stats.WITHIN_NOISE


def test_spread_and_geomean():
    assert stats.spread([2.0, None, 1.0, 1.5]) == pytest.approx(1 / 1.5)
    assert stats.geomean([2.0, 8.0]) == pytest.approx(4.0)
    with pytest.raises(ValueError):
        stats.geomean([1.0, 0.0])
    with pytest.raises(ValueError):
        stats.spread([None])


def test_the_projects_noise_floors_are_the_one_in_stats():
    from inductor_tune import distill

    assert validate.NOISE_FLOOR == distill.FitParams().noise_floor == stats.NOISE_FLOOR


def test_summarize_calls_a_gain_within_the_floor_no_improvement():
    finalists = [type("R", (), {"trial_number": 7, "config_json": "{}"})()]
    within = summarize([[1.0] * 3, [0.99] * 3], finalists)
    assert within["speedup"] == pytest.approx(1 / 0.99) and within["speedup_low"] > 1
    assert not within["improved"]


# -- the winner re-timed in fresh rounds ----------------------------------------------------------

class RetimePool(StudyPool):
    """The scripted pool, its second re-measure answered by ``fresh(default_ms, winner_ms, rounds)``."""

    def __init__(self, fresh=None):
        super().__init__()
        self.fresh = fresh
        self.remeasures: list[RemeasureTask] = []

    def answer(self, task):
        if isinstance(task, RemeasureTask):
            self.remeasures.append(task)
            first = super().answer(task).times
            if len(self.remeasures) == 2 and self.fresh is not None:
                return self.fresh(first[0][0], first[1][0], task.rounds)
        return super().answer(task)


def _tune(tmp_path, pool, trials=8):
    exp = study_experiment(tmp_path, trials)
    store = Store(exp.storage_url)
    Tuner(exp, pool, store).run()
    study = store.studies()[0]
    return exp, store, study


def _within_floor(default_ms, winner_ms, rounds):
    return remeasured([[default_ms] * rounds, [default_ms / 1.01] * rounds])


def test_a_confirmed_winner_is_improved_and_both_measurements_are_stored(tmp_path):
    pool = RetimePool()
    exp, store, study = _tune(tmp_path, pool)
    verdict, confirmation = store.verdict(study.id), store.confirmation(study.id)
    assert verdict.improved and confirmation.confirmed
    first, fresh = pool.remeasures
    assert len(first.configs) == 1 + exp.finalists
    assert [c.to_json() for c in fresh.configs] == [first.configs[0].to_json(), verdict.best_config_json]
    assert fresh.rounds == exp.rounds
    assert confirmation.config_json == verdict.best_config_json
    assert confirmation.best_trial_number == verdict.best_trial_number
    # rounds_json keeps the first re-measure's rounds, one list per config, as evidence.py reads it.
    rounds = json.loads(verdict.rounds_json)
    assert len(rounds) == 1 + exp.finalists and all(len(r) == exp.rounds for r in rounds)
    assert verdict.speedup == pytest.approx(rounds[0][1] / rounds[1][1])
    fresh_rounds = json.loads(confirmation.rounds_json)
    assert len(fresh_rounds) == 2 and stats.beats_default(*fresh_rounds)
    assert confirmation.reason.startswith(stats.FASTER)


def test_a_winner_that_fails_the_fresh_rounds_is_not_improved(tmp_path):
    pool = RetimePool(fresh=_within_floor)
    exp, store, study = _tune(tmp_path, pool)
    verdict, confirmation = store.verdict(study.id), store.confirmation(study.id)
    assert len(pool.remeasures) == 2  # the first re-measure found a winner
    assert not verdict.improved and not confirmation.confirmed
    assert "within noise" in confirmation.reason and confirmation.speedup == pytest.approx(1.01)
    assert verdict.speedup > 1.5  # the first re-measure's, kept
    # Everything downstream reads the confirmed verdict.
    (row,) = study_rows(store)
    assert row.verdict == "no improvement (not confirmed in fresh rounds)" and row.best_gbps == row.default_gbps
    key = (study.kernel, f"{study.rows}x{study.cols}", study.dtype)
    assert validate.best_configs([exp.storage_url], STUDY_GPU.key)[key] is None
    ok = [t for t in store.trials(study.id) if t.outcome == Outcome.OK and not t.inductor_default]
    assert warmstart.study_best(store, study.id).to_json() == min(ok, key=lambda t: t.time_ms).config_json


def test_no_winner_no_retiming(tmp_path):
    class Slow(RetimePool):
        def answer(self, task):
            answer = super().answer(task)
            if not isinstance(task, RemeasureTask):
                return answer
            return remeasured([answer.times[0]] + [[t * 10 for t in r] for r in answer.times[1:]])

    pool = Slow()
    _, store, study = _tune(tmp_path, pool)
    assert len(pool.remeasures) == 1
    assert not store.verdict(study.id).improved and store.confirmation(study.id) is None


def test_a_failed_retiming_leaves_the_study_without_a_verdict(tmp_path):
    pool = RetimePool(fresh=lambda *_: TaskFailure(Outcome.CRASH, "worker died"))
    exp, store, study = _tune(tmp_path, pool)
    assert store.verdict(study.id) is None and not store.finished(study.name, exp.trials)
    Tuner(exp, RetimePool(), store).run()  # the next run tries again
    assert store.verdict(study.id).improved and store.confirmation(study.id).confirmed


def test_a_new_verdict_replaces_the_old_confirmation(tmp_path):
    _, store, study = _tune(tmp_path, RetimePool(fresh=_within_floor))
    assert store.confirmation(study.id) is not None
    verdict, old = store.verdict(study.id), store.confirmation(study.id)
    fields = {c: getattr(old, c) for c in ("best_trial_number", "config_json", "rounds_json", "reason")}
    store.set_verdict(study.id, trials_measured=verdict.trials_measured + 1, confirmation=dict(fields, confirmed=True))
    assert not old.confirmed and store.confirmation(study.id).confirmed
    store.set_verdict(study.id, trials_measured=verdict.trials_measured + 2, improved=False)
    assert store.confirmation(study.id) is None


def test_old_databases_are_read_as_they_are_and_upgraded_only_by_a_writer(tmp_path):
    path = tmp_path / "old.sqlite"
    shutil.copy("db/quack.sqlite", path)
    version = lambda: sqlite3.connect(path).execute("select version from it_schema").fetchone()[0]  # noqa: E731
    before, old_version = path.read_bytes(), version()
    assert old_version < 5
    reader = Store(f"sqlite:///{path}", create=False)
    study = reader.studies()[0]
    assert reader.confirmation(study.id) is None and reader.verdict(study.id) is not None
    assert [r for r in study_rows(reader) if r.verdict.startswith("improved")]
    assert path.read_bytes() == before
    writer = Store(f"sqlite:///{path}")
    assert version() == SCHEMA_VERSION == 6 and writer.confirmation(study.id) is None
