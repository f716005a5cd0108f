"""What optuna-dashboard shows of a tuner's study: the objective's name and each trial's launch config.

The dashboard reads only Optuna's tables.  There a trial's params are the sampler's encoding (log2
exponents per kernel slot, none at all for Inductor's default), so the study names its objective
(``time_ms``) and every trial carries its launch config, readable, as the ``launch`` user attribute.
The params themselves must stay as the samplers stored them.
"""

import shutil
import sqlite3
import subprocess
import sys

import optuna

from inductor_tune.mirror import LAUNCH_ATTR, METRIC_NAMES
from inductor_tune.space import SearchSpace, TrialConfig, config_from_params
from inductor_tune.store import Store

EXPERIMENT = """
name: dash
kernels: [rmsnorm_fwd]
shapes: [32768x2048]
dtypes: [bf16]
trials: {trials}
sampler: grid
workers: 1
"""


def _tune(tmp_path, trials: int) -> None:
    (tmp_path / "dash.yaml").write_text(EXPERIMENT.format(trials=trials))
    proc = subprocess.run(
        [sys.executable, "-m", "inductor_tune", "-q", "tune", str(tmp_path / "dash.yaml"),
         "--replay", str(tmp_path / "recorded.sqlite"), "--storage", str(tmp_path / "run.sqlite")],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr


def _study(url: str) -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    (name,) = optuna.get_all_study_names(url)
    return optuna.load_study(study_name=name, storage=url)


def test_replayed_study_names_its_metric_and_every_trial_its_launch_config(tmp_path):
    shutil.copy("db/quack.sqlite", tmp_path / "recorded.sqlite")  # a replay only reads it; a copy all the same
    _tune(tmp_path, 6)
    url = f"sqlite:///{tmp_path}/run.sqlite"
    study = _study(url)
    assert study.metric_names == METRIC_NAMES == ["time_ms"]

    store = Store(url, create=False)
    (record,) = store.studies()
    space = SearchSpace.from_json(record.space_json)
    records = {r.trial_number: r for r in store.trials(record.id)}
    assert len(study.trials) == len(records) == 6
    for trial in study.trials:
        rec = records[trial.number]
        config = TrialConfig.from_json(rec.config_json)
        launch = trial.user_attrs[LAUNCH_ATTR]
        if rec.inductor_default:
            # Inductor's default forces nothing: its launch names what Inductor picked for its kernel.
            assert trial.params == {}
            assert launch.startswith("inductor default: x32768.r2048: ") and "XBLOCK=" in launch, launch
            continue
        assert launch == config.describe() and "XBLOCK=" in launch and "warps=" in launch
        # The params are still the sampler's encoding, and decode to the config the attribute names.
        assert set(trial.params) <= set(space.distributions())
        assert config_from_params(trial.params, space).to_json() == rec.config_json


def test_a_study_created_before_the_metric_name_gets_it_on_resume(tmp_path):
    shutil.copy("db/quack.sqlite", tmp_path / "recorded.sqlite")
    _tune(tmp_path, 4)
    con = sqlite3.connect(tmp_path / "run.sqlite")  # as a database written before the name was set
    con.execute("DELETE FROM study_system_attributes WHERE key = 'study:metric_names'")
    con.commit()
    con.close()
    url = f"sqlite:///{tmp_path}/run.sqlite"
    assert _study(url).metric_names is None
    _tune(tmp_path, 6)
    study = _study(url)
    assert study.metric_names == ["time_ms"]
    assert len(study.trials) == 6 and all(LAUNCH_ATTR in t.user_attrs for t in study.trials)
