"""Every sampler the CLI offers works on a fresh install (CMA-ES needs cmaes, GP needs scipy)."""

import optuna
import pytest

from inductor_tune.search import make_sampler
from inductor_tune.space import DEFAULT_FLAGS, ConstraintViolation, KernelSlot, SearchSpace

SPACE = SearchSpace(((DEFAULT_FLAGS, (KernelSlot("fw.red.x32768.r4096", False, 32768, 4096, False, False),)),))


@pytest.mark.parametrize("name", ["tpe", "random", "cmaes", "gp"])
def test_sampler_runs_a_few_trials(name):
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = optuna.create_study(sampler=make_sampler(name, 0))
    told = 0
    while told < 4:
        trial = study.ask()
        try:
            config = SPACE.suggest(trial)
        except ConstraintViolation:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            continue
        study.tell(trial, float(config.slots[0][1].num_warps))
        told += 1
    assert len(study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))) == 4
