"""`validate`'s summaries, from the raw rounds recorded on an H200 (db/validation.sqlite)."""

import json

import pytest

from inductor_tune import validate
from inductor_tune.store import Store


@pytest.fixture(scope="module")
def records():
    store = Store("sqlite:///db/validation.sqlite", create=False)
    return {(r.kernel, f"{r.rows}x{r.cols}"): json.loads(r.result_json) for r in store.validations()}


def test_recorded_summaries_are_recomputed_from_their_rounds(records):
    data = records[("softmax_fwd", "16384x2048")]
    row = validate.summarize_problem("softmax_fwd", "16384x2048", "bf16", data, 4247.4)
    heur = row.variant(validate.HEURISTICS)
    times = data["times"]
    assert heur.ratio_to_default == pytest.approx(
        sorted(times["inductor_default"])[2] / sorted(times["heuristics"])[2]
    )
    assert row.heuristics_applied and not row.regressed and heur.ratio_low > 2.0
    assert row.best_peer().name == "quack"


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


def test_render_reports_geomeans_and_peer_notes_once(records):
    rows = [validate.summarize_problem(k, s, "bf16", d, 4247.4) for (k, s), d in sorted(records.items())]
    text = validate.render(rows)
    assert "heuristics vs Inductor default: geomean" in text and "heuristics vs best peer" in text
    assert text.count("Quack 0.2.2's LayerNorm has no bias") == 1
    assert len(text.splitlines()) > len(rows)
