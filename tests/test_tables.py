"""``load_trials`` (every stored trial as a DataFrame) and `show --csv` / `show --json`, on the committed
db/modules.sqlite, which they only read (its digest is checked after each test)."""

import csv
import dataclasses
import hashlib
import io
import json
import sqlite3
import subprocess
import sys

import pandas as pd
import pytest

import inductor_tune
from inductor_tune.figdata import config_choices
from inductor_tune.show import study_rows
from inductor_tune.space import TrialConfig
from inductor_tune.store import Store
from inductor_tune.tables import LAUNCH_FIELDS, STUDY_COLUMNS, TRIAL_COLUMNS, load_trials, render_studies, study_records

DB = "db/modules.sqlite"  # module kernels measured on an H200 (docs/experiments.md)


@pytest.fixture(autouse=True)
def untouched():
    before = hashlib.sha256(open(DB, "rb").read()).hexdigest()
    yield
    assert hashlib.sha256(open(DB, "rb").read()).hexdigest() == before, f"{DB} was written to"


@pytest.fixture(scope="module")
def frame():
    return load_trials(DB)


def _stored():
    con = sqlite3.connect(f"file:{DB}?mode=ro", uri=True)
    try:
        return con.execute("SELECT s.name, t.trial_number, t.outcome, t.gbps, t.time_ms, t.speedup_vs_default "
                           "FROM it_trial t JOIN it_study s ON s.id = t.study_id").fetchall()
    finally:
        con.close()


def test_one_row_per_stored_trial_with_its_study_and_measurement(frame):
    assert tuple(frame.columns) == TRIAL_COLUMNS
    stored = _stored()
    assert len(frame) == len(stored) > 1000
    by_key = frame.set_index(["study", "trial"])
    for name, number, outcome, gbps, time_ms, speedup in stored:
        row = by_key.loc[(name, number)]
        assert row["outcome"] == outcome.lower()
        for column, value in (("gbps", gbps), ("time_ms", time_ms), ("speedup_vs_default", speedup)):
            assert (value is None and pd.isna(row[column])) or row[column] == value, (name, number, column)
    store = Store(f"sqlite:///{DB}", create=False)
    for study in store.studies():
        rows = frame[frame["study"] == study.name]
        assert set(zip(rows["kernel"], rows["rows"], rows["cols"], rows["dtype"], rows["gpu_fingerprint"])) == {
            (study.kernel, study.rows, study.cols, study.dtype, study.gpu.fingerprint)}
        assert rows["inductor_default"].sum() == 1
        assert rows.loc[rows["inductor_default"], "speedup_vs_default"].tolist() == [1.0]
        verdict = store.verdict(study.id)
        assert rows.loc[rows["verdict_best"], "trial"].tolist() == [verdict.best_trial_number]
    assert frame["gpu"].unique().tolist() == ["NVIDIA H200"]


def test_launch_columns_are_the_config_each_trial_ran(frame):
    store = Store(f"sqlite:///{DB}", create=False)
    records = {(s.name, t.trial_number): t for s in store.studies() for t in store.trials(s.id)}
    sampled = frame[(frame["outcome"] != "constraint") & ~frame["inductor_default"]]
    assert len(sampled) > 300
    for _, row in sampled.iterrows():
        config = TrialConfig.from_json(records[(row["study"], row["trial"])].config_json)
        assert row["config"] == config.describe()
        assert row["n_slots"] == len(config.slots) and row["slot"] in config.slot_map()
        cfg = config.slot_map()[row["slot"]]
        for field in LAUNCH_FIELDS:
            value = getattr(cfg, field)
            assert (value is None and pd.isna(row[field])) or row[field] == value, field
    # Inductor's default: the config Inductor picked for the main kernel, as the figures read it.
    defaults = frame[frame["inductor_default"]].set_index(["kernel", "rows", "cols"])
    picked = [c for c in config_choices(store) if c.source == "default"]
    assert len(picked) == len(defaults) == 48
    for c in picked:
        row = defaults.loc[(c.kernel, c.rows, c.cols)]
        assert (row["config"], row["slot"], row["persistent"], row["XBLOCK"], row["num_warps"]) == (
            "inductor default", c.slot, c.persistent, c.XBLOCK, c.num_warps)
    # An illegal sample never became a config: no launch fields, only the reason.
    illegal = frame[frame["outcome"] == "constraint"]
    assert len(illegal) > 100 and illegal["reason"].str.len().min() > 0
    assert illegal[["config", "slot", *LAUNCH_FIELDS]].isna().all().all()


def test_filters_and_the_package_level_function(frame):
    only = inductor_tune.load_trials(DB, kernel="nn_rmsnorm_fwd")
    assert set(only["kernel"]) == {"nn_rmsnorm_fwd"} and len(only) == (frame["kernel"] == "nn_rmsnorm_fwd").sum()
    assert len(load_trials(DB, gpu="A100")) == 0
    assert len(load_trials(Store(f"sqlite:///{DB}", create=False), gpu="H200")) == len(frame)


def run(*args):
    proc = subprocess.run([sys.executable, "-m", "inductor_tune", *args], capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def test_show_csv_and_json_print_the_show_table_unrounded():
    rows = study_rows(Store(f"sqlite:///{DB}", create=False), kernel="llama_rmsnorm_bwd")
    expected = study_records(rows)
    code, out, err = run("show", DB, "--kernel", "llama_rmsnorm_bwd", "--csv")
    assert code == 0, err
    parsed = list(csv.DictReader(io.StringIO(out)))
    assert list(parsed[0]) == list(STUDY_COLUMNS) and len(parsed) == len(expected) == len(rows) > 1
    code, out, err = run("show", DB, "--kernel", "llama_rmsnorm_bwd", "--json")
    assert code == 0, err
    assert json.loads(out) == expected
    # The same rows as the text table, in its order, and the numbers it rounds.
    code, out, err = run("show", DB, "--kernel", "llama_rmsnorm_bwd", "--wide")
    text = out.splitlines()[2:]
    assert code == 0 and len(text) == len(expected), err
    for line, record, cells in zip(text, expected, parsed):
        assert line.split()[2:4] == [record["kernel"], record["shape"]] == [cells["kernel"], cells["shape"]]
        assert f"{record['best_gbps']:.0f}" in line and float(cells["best_gbps"]) == record["best_gbps"]
        assert record["best_config"] in line


def test_missing_numbers_are_empty_csv_cells_and_json_nulls():
    row = study_rows(Store(f"sqlite:///{DB}", create=False))[0]
    gap = dataclasses.replace(row, best_gbps=None, speedup=float("nan"), speedup_low=None)
    (cells,) = csv.DictReader(io.StringIO(render_studies([gap], "csv")))
    assert (cells["best_gbps"], cells["speedup"], cells["speedup_low"], cells["best_pct"]) == ("", "", "", "")
    (record,) = json.loads(render_studies([gap], "json"))  # NaN is not JSON: null instead
    assert (record["best_gbps"], record["speedup"], record["best_pct"]) == (None, None, None)
    assert record["default_gbps"] == row.default_gbps


def test_show_formats_exclude_each_other_in_one_line():
    code, out, err = run("show", DB, "--csv", "--json")
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("inductor-tune: error: show: argument --json: not allowed")
