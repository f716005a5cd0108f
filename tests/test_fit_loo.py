"""experiments/fit_loo.py: distill's leave-one-shape-out refits on a seeded sample of the studied shapes."""

import importlib.util
import json
import subprocess
import sys

from inductor_tune.distill import holdout
from inductor_tune.fitparams import FitParams

spec = importlib.util.spec_from_file_location("fit_loo", "experiments/fit_loo.py")
fit_loo = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fit_loo)

DBS = ["db/modules.sqlite", "db/crossmeasure.sqlite"]  # 48 studied H200 shapes; refits apply a config at 17


def fit_list(tmp_path):
    path = tmp_path / "list.txt"
    path.write_text("# header\n#\n" + "\n".join(DBS) + "\n")
    return str(path)


def test_the_sample_is_seeded_and_takes_studied_shapes_only(tmp_path):
    points = fit_loo.load(fit_list(tmp_path), "H200", None)
    first = fit_loo.sample(points, 5, seed=7)
    assert first == fit_loo.sample(points, 5, seed=7) != fit_loo.sample(points, 5, seed=8)
    assert len(first) == 5 and not any(points[i].probe for i in first)
    assert len(fit_loo.sample(points, 10_000, seed=7)) == sum(not p.probe for p in points)


def test_every_shape_sampled_scores_as_distills_own_refits(tmp_path):
    points = fit_loo.load(fit_list(tmp_path), "H200", None)
    expected = holdout(points, FitParams(), "leave_one_shape_out")["summary"]["all"]
    out = subprocess.run([sys.executable, "experiments/fit_loo.py", fit_list(tmp_path), "--sample", "1000",
                          "--seed", "1", "--workers", "2"], capture_output=True, text=True, check=True).stdout
    head, body = out.split("\n", 1)
    assert head == f"leave-one-shape-out refits of {expected['shapes']} of {expected['shapes']} studied shapes (seed 1):"
    assert json.loads(body) == expected
