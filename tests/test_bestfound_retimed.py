"""experiments/bestfound_retimed.py: a study's winner against the same winner re-timed by `validate`."""

import importlib.util
import subprocess
import sys

import pytest

spec = importlib.util.spec_from_file_location("bestfound_retimed", "experiments/bestfound_retimed.py")
retimed = importlib.util.module_from_spec(spec)
spec.loader.exec_module(retimed)

# H100 set 6 (stop 36, db/bestfound-h100-6*.sqlite): 7 single-kernel problems; the studies of 3 of them found
# nothing beyond the noise, which `validate` keeps as the default, and one found 1.019x.
PAIR = ("db/bestfound-h100-6.sqlite", "db/bestfound-h100-6-validate.sqlite")


def test_only_problems_whose_study_named_a_winner_are_compared():
    rows = retimed.compare([PAIR], "H100")
    problems = {problem: (study, again) for _, problem, study, again in rows}
    assert set(problems) == {"llama_rmsnorm_fwd 41092x7021", "llama_rmsnorm_train_fwd 3351x1217",
                             "nn_layernorm_bwd 23918x1246", "rmsnorm_fwd 7532x5396"}
    study, again = problems["nn_layernorm_bwd 23918x1246"]
    assert study == pytest.approx(1.6096, abs=1e-4) and again == pytest.approx(1.6004, abs=1e-4)


def test_pairs_files_skip_comments(tmp_path):
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("# study=validation\n\n" + "=".join(PAIR) + "\n")
    assert retimed.pairs_of(str(pairs)) == [PAIR]
    out = subprocess.run([sys.executable, "experiments/bestfound_retimed.py", str(pairs), "--gpu", "H100"],
                         capture_output=True, text=True, check=True).stdout
    assert out.startswith("4 re-timings of 4 problems: re-timed / study's own ratio, geomean 1.001")


def test_no_common_problem_is_one_line(tmp_path):
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("db/bestfound-h100-6.sqlite=db/bestfound-h100-4-validate.sqlite\n")
    proc = subprocess.run([sys.executable, "experiments/bestfound_retimed.py", str(pairs), "--gpu", "H100"],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stderr.strip() == "no problem is in both a study database and its validation"


def test_a_studys_best_is_its_best_interleaved_ratio():
    # H100 set 4 (stop 23): at add_rmsnorm_fwd 89x1362 a trial timed minutes from the default read 1.048x; the
    # finalists timed interleaved with it reached 1.035x.
    best = retimed.study_best("db/bestfound-h100-4.sqlite", "H100")
    (ratio,) = [v for (kernel, shape, _), v in best.items() if (kernel, shape) == ("add_rmsnorm_fwd", "89x1362")]
    assert ratio == pytest.approx(1.0352, abs=1e-4)
