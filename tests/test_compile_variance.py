"""experiments/compile_variance.py: two compiles of Inductor's default in `validate` records, checked against what
the set-52 gate printed for the same records (docs/runs/2026-11-28-h200-s59-d.log)."""

import subprocess
import sys


def _run(*paths):
    return subprocess.run([sys.executable, "experiments/compile_variance.py", *paths], capture_output=True, text=True,
                          check=True).stdout


def test_the_calibration_and_the_gate_read_as_their_runs_printed():
    out = _run("db/noise-calibration-5900.sqlite", "db/heldout52.sqlite")
    calibration, gate = out.split("db/heldout52.sqlite\n")
    assert "100 of 100" not in calibration and "own configs differ between the two compiles at 35 of 100" in calibration
    assert "default 10-30 us: 37 problems" in calibration and "range 0.889-1.062" in calibration
    # The gate printed "range 0.938-1.153 over 103 shape(s)" and no regression; one problem is slower beyond noise
    # than the second compile only.
    assert "at 0 of 103 (103 reused the first compile's autotuned kernels)" in gate
    lows = [line.split("range ")[1].split(",")[0] for line in gate.splitlines() if "range" in line]
    assert min(float(r.split("-")[0]) for r in lows) == 0.938 and max(float(r.split("-")[1]) for r in lows) == 1.153
    (slower,) = [line for line in gate.splitlines() if line.startswith("  ")]
    assert "scaled_softmax_bwd 425x1566" in slower and "first compile: False, than the second: True" in slower
    with open("docs/runs/2026-11-28-h200-s59-d.log") as log:
        text = log.read()
    assert "range 0.938-1.153 over 103 shape(s)" in text and "regressions beyond noise: 0" in text


def test_a_record_with_one_compile_of_the_default_is_left_out():
    sys.path.insert(0, "experiments")
    import json

    import compile_variance

    touched = {"times": {"inductor_default": [1.0] * 3, "heuristics": [1.1] * 3}, "rules_applied": ["a rule"]}
    assert compile_variance.pairs([("softmax_fwd", 8, 1024, json.dumps(touched))]) == []
    control = {"times": {"inductor_default": [1.0] * 3, "heuristics": [1.1] * 3}, "rules_applied": [],
               "default_choice": [{"config": {"XBLOCK": 1}}], "heuristic_choice": [{"config": {"XBLOCK": 2}}]}
    ((label, us, ratio, differ, verdicts),) = compile_variance.pairs([("softmax_fwd", 8, 1024, json.dumps(control))])
    assert (label, differ, verdicts) == ("softmax_fwd 8x1024", True, None) and abs(ratio - 1 / 1.1) < 1e-9
