"""`validate`'s summaries, from the raw rounds recorded on an H200 (db/validation.sqlite)."""

import dataclasses
import json

import pytest

from inductor_tune import stats, validate
from inductor_tune.store import Store


@pytest.fixture(scope="module")
def records():
    return {(r.kernel, f"{r.rows}x{r.cols}"): json.loads(r.result_json) for r in _kernel_records()}


@pytest.fixture(scope="module")
def stored():
    return _kernel_records()


def _kernel_records():
    """Kernel validations (model records, `validate --models`, have their own summary: tests/test_models.py)."""
    records = Store("sqlite:///db/validation.sqlite", create=False).validations()
    return [r for r in records if not r.kernel.startswith("model:")]


def _ceiling(summary) -> float:
    # The copy-bandwidth ceiling of the run is not stored per record (the GPU row keeps the latest run's);
    # every variant's GB/s and % of ceiling were computed with it.
    default = summary["variants"][0]
    return default["gbps"] * 100 / default["pct_of_ceiling"]


def test_recorded_summaries_are_recomputed_from_their_rounds(stored):
    assert len(stored) > 100
    for record in stored:
        data = json.loads(record.result_json)
        summary = data["summary"]
        row = validate.summarize_problem(record.kernel, f"{record.rows}x{record.cols}", record.dtype, data,
                                         _ceiling(summary))
        got = json.loads(json.dumps(dataclasses.asdict(row)))
        if "studied" not in summary:  # recorded before validate knew which shapes a study covered
            assert "studied" not in data and got.pop("studied") is False
        if "same_program" not in summary:  # recorded before stop 62; none of these kept Inductor's program
            assert got.pop("same_program") is False
        assert got == summary, record.id
        assert record.regressed == row.regressed
    # One by hand: the ratio is the medians' ratio over interleaved rounds (odd count: the middle one).
    (record,) = [r for r in stored if (r.kernel, r.rows, r.cols, r.heuristics_digest)
                 == ("softmax_fwd", 16384, 2048, "745059cb3bffd90c")]
    data = json.loads(record.result_json)
    row = validate.summarize_problem("softmax_fwd", "16384x2048", "bf16", data, 4247.4)
    times = data["times"]
    assert len(times["inductor_default"]) == 5
    assert row.variant(validate.HEURISTICS).ratio_to_default == pytest.approx(
        sorted(times["inductor_default"])[2] / sorted(times["heuristics"])[2]
    )
    assert row.heuristics_applied and not row.regressed and row.variant(validate.HEURISTICS).ratio_low > 2.0
    assert row.best_peer().name == "quack"


def test_best_found_is_inductors_default_where_the_study_found_nothing_better(stored):
    """A studied shape without a best-found variant: the study's verdict kept Inductor's default."""
    rows = {}
    for record in stored:
        data = json.loads(record.result_json)
        if data.get("studied") is not None:
            rows[record.id] = validate.summarize_problem(record.kernel, f"{record.rows}x{record.cols}", record.dtype,
                                                         data, _ceiling(data["summary"]))
    kept = [r for r in rows.values() if r.studied and not r.variant(validate.BEST)]
    found = [r for r in rows.values() if r.variant(validate.BEST)]
    unstudied = [r for r in rows.values() if not r.studied]
    assert kept and found
    for r in kept:
        assert r.best_found() is r.variant(validate.DEFAULT)
    for r in found:
        assert r.best_found() is r.variant(validate.BEST) and r.studied
    for r in unstudied:
        assert r.best_found() is None
    text = validate.render(kept + found)
    assert text.count("1 (default)") == len(kept)
    (line,) = [l for l in text.splitlines() if l.startswith("heuristics vs per-shape best found")]
    assert f"over {len(kept) + len(found)} shape(s)" in line
    ratios = [r.best_found().median_ms / r.variant(validate.HEURISTICS).median_ms for r in kept + found]
    assert f"geomean {stats.geomean(ratios):.3f}, worst {min(ratios):.3f}" in line


def test_a_changed_kernel_slower_in_every_round_regresses_and_an_unchanged_one_never_does(records):
    data = json.loads(json.dumps(records[("softmax_fwd", "16384x2048")]))
    data["times"]["heuristics"] = [t * 1.05 for t in data["times"]["inductor_default"]]
    assert validate.summarize_problem("softmax_fwd", "16384x2048", "bf16", data, 4247.4).regressed
    data["heuristic_choice"] = data["default_choice"]  # the rules left Inductor's own configs
    row = validate.summarize_problem("softmax_fwd", "16384x2048", "bf16", data, 4247.4)
    assert not row.regressed and not row.heuristics_applied
    data = json.loads(json.dumps(records[("softmax_fwd", "16384x2048")]))
    data["times"]["heuristics"] = [t * 1.01 for t in data["times"]["inductor_default"]]  # inside the floor
    assert not validate.summarize_problem("softmax_fwd", "16384x2048", "bf16", data, 4247.4).regressed


def test_a_regression_must_be_slower_than_each_compile_of_the_default(records):
    """Two compiles of Inductor's default can settle on other configs (stop 59: 0.889-1.107 on the H200); rules
    inside that spread are not slower than the default beyond noise, and the second compile is no peer."""
    data = json.loads(json.dumps(records[("softmax_fwd", "16384x2048")]))
    default = data["times"]["inductor_default"]
    data["times"]["heuristics"] = [t * 1.05 for t in default]
    data["times"][validate.DEFAULT_AGAIN] = [t * 1.06 for t in default]  # the second compile drew a slower config
    row = validate.summarize_problem("softmax_fwd", "16384x2048", "bf16", data, 4247.4)
    assert not row.regressed and row.variant(validate.DEFAULT_AGAIN).ratio_to_default == pytest.approx(1 / 1.06)
    assert row.best_peer().name not in validate.OWN_VARIANTS
    data["times"][validate.DEFAULT_AGAIN] = [t * 1.01 for t in default]  # both compiles faster beyond the band
    assert validate.summarize_problem("softmax_fwd", "16384x2048", "bf16", data, 4247.4).regressed
    data["times"][validate.DEFAULT_AGAIN] = [t * (1.06 if i == 0 else 1.0) for i, t in enumerate(default)]
    # The second compile slower in its first round only: the rules are not slower than it in every round.
    assert not validate.summarize_problem("softmax_fwd", "16384x2048", "bf16", data, 4247.4).regressed
    text = validate.render([validate.summarize_problem("softmax_fwd", "16384x2048", "bf16", data, 4247.4)])
    assert "Inductor's default compiled twice" in text and "over 1 shape(s)" in text


def test_render_reports_geomeans_and_peer_notes_once(records):
    rows = [validate.summarize_problem(k, s, "bf16", d, 4247.4) for (k, s), d in sorted(records.items())]
    text = validate.render(rows)
    assert "heuristics vs Inductor default: geomean" in text and "heuristics vs best peer" in text
    assert text.count("Quack 0.2.2's LayerNorm has no bias") == 1
    assert len(text.splitlines()) > len(rows)
