"""experiments/bestfound_sample.py writes the best-found experiments of a spent held-out draw from a seed."""

import pathlib
import re
import subprocess
import sys


def _shapes(folder):
    out = {}
    for path in sorted(pathlib.Path(folder).glob("*.yaml")):
        out[path.name] = re.search(r"^shapes: \[(.*)\]$", path.read_text(), re.M).group(1)
    return out


def _sample(*args):
    return subprocess.run([sys.executable, "experiments/bestfound_sample.py", *args], capture_output=True, text=True)


def test_it_reproduces_the_set_10_sample_and_the_set_11_samples(tmp_path):
    # Set 10's files were written by hand at stop 22 from random.Random(10010).sample of the draw.
    assert _sample("experiments/heldout/set10-draw.json", "--seed", "10010", "--n", "16", "--tag", "t",
                   "--out", str(tmp_path / "s10")).returncode == 0
    assert _shapes(tmp_path / "s10") == _shapes("experiments/bestfound-set10")
    assert _sample("experiments/heldout/set11-draw.json", "--seed", "11012", "--n", "8", "--min-rows", "2048",
                   "--after", "11011:16", "--tag", "t", "--out", str(tmp_path / "s11")).returncode == 0
    assert _shapes(tmp_path / "s11") == _shapes("experiments/bestfound-set11-large")


def test_it_writes_into_no_folder_that_holds_files(tmp_path):
    (tmp_path / "keep.yaml").write_text("x")
    proc = _sample("experiments/heldout/set10-draw.json", "--seed", "1", "--n", "2", "--tag", "t",
                   "--out", str(tmp_path))
    assert proc.returncode != 0 and "is not empty" in proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["keep.yaml"]


def test_one_file_lists_the_same_problems_as_the_files_per_kernel(tmp_path):
    from inductor_tune import experiment

    args = ("experiments/heldout/set15-draw.json", "--seed", "15015", "--n", "8", "--tag", "t")
    assert _sample(*args, "--out", str(tmp_path / "per-kernel")).returncode == 0
    assert _sample(*args, "--one-file", "--out", str(tmp_path / "one")).returncode == 0
    assert [p.name for p in (tmp_path / "one").iterdir()] == ["problems.yaml"]
    one = experiment.load(str(tmp_path / "one" / "problems.yaml"))
    per_kernel = [experiment.load(str(p)) for p in sorted((tmp_path / "per-kernel").glob("*.yaml"))]
    def key(problem):
        return problem.kernel, str(problem.shape), problem.dtype

    assert sorted(map(key, one.problems())) == sorted(key(p) for exp in per_kernel for p in exp.problems())
    assert len(one.problems()) == 8 and one.name == "t"
