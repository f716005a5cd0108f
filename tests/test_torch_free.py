"""Commands that only read databases and files never import torch; those that need it say so in one line.

Importing Inductor takes seconds, so `show`, `report`, `distill`, `patch`, `bench-search`,
`crossmeasure --plan-only`, `--help`, `--version` and every bad input must answer without it.  Each case
runs the command in a subprocess where a package named ``torch`` (and one named ``triton``) comes first
on the path: importing it notes the attempt in a file and raises ImportError, as a broken or absent
install would.  A read-only command must succeed with no attempt noted (so an ``except ImportError``
cannot hide an import that would cost seconds where torch is installed); a command that needs torch
must fail with one ``inductor-tune: error:`` line, exit status 2, and no traceback.
"""

import importlib.util
import os
import subprocess
import sys

import pytest

# The installed torch tree, found without importing it: `patch` diffs against its sources.
TORCH_ROOT = os.path.dirname(os.path.dirname(importlib.util.find_spec("torch").origin))

BLOCKER = """import os
with open(os.environ["NO_TORCH_LOG"], "a") as fh:
    fh.write(__name__ + "\\n")
raise ImportError(__name__ + " is blocked by tests/test_torch_free.py")
"""


@pytest.fixture(scope="module")
def blocked(tmp_path_factory):
    root = tmp_path_factory.mktemp("no-torch")
    for name in ("torch", "triton"):
        (root / name).mkdir()
        (root / name / "__init__.py").write_text(BLOCKER)
    return root


def run(blocked, tmp_path, *args):
    """(exit status, stdout, stderr, modules whose import was attempted) of `inductor-tune ARGS`."""
    return run_python(blocked, tmp_path, "-m", "inductor_tune", *args)


def run_python(blocked, tmp_path, *args):
    """As ``run``, of `python ARGS`."""
    log = tmp_path / "imports.log"
    env = dict(os.environ, NO_TORCH_LOG=str(log), INDUCTOR_TUNE_HEURISTICS="",
               PYTHONPATH=os.pathsep.join(p for p in (str(blocked), os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=300)
    attempts = log.read_text().split() if log.exists() else []
    log.unlink(missing_ok=True)
    return proc.returncode, proc.stdout, proc.stderr, attempts


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("inductor-tune: error: "), stderr
    return lines[0]


def test_read_only_commands_run_without_torch(blocked, tmp_path):
    out_dir = tmp_path / "out"
    cases = [
        (["--help"], "bench-search"),
        (["--version"], "inductor-tune 0.1.0"),
        (["show", "db/modules.sqlite", "--wide"], "llama_rmsnorm_fwd"),
        (["-q", "show", "db/quack.sqlite", "--markdown"], "| rmsnorm_fwd"),
        (["show", "db/modules.sqlite", "--csv"], "NVIDIA H200,nn_rmsnorm_fwd,8192x4096,bf16,"),
        (["show", "db/modules.sqlite", "--json"], '"kernel": "nn_rmsnorm_fwd"'),
        (["distill", "db/quack.sqlite", "--gpu", "H200", "--out", str(out_dir / "h200.yaml")], "wrote"),
        (["patch", "heuristics/h200.yaml", "--torch-root", TORCH_ROOT, "--out", str(out_dir / "h200.patch")],
         "wrote"),
        (["crossmeasure", "db/quack.sqlite", "--plan-only", "H200"], "(shape, config) pairs"),
        (["bench-search", "db/sweeps.sqlite", "--strategies", "random", "--seeds", "1", "--budget", "4",
          "--out", str(out_dir / "bench"), "--no-progress"], "fraction_of_optimum.png"),
        (["report", "db/quack.sqlite", "--out", str(out_dir / "report")], "index.html"),
        (["report", "db/heldout10.sqlite", "--heuristics", "experiments/candidates/h200-coverage-r7.yaml",
          "--out", str(out_dir / "gate")], "validated as experiments/candidates/h200-coverage-r7.yaml"),
    ]
    for args, fragment in cases:
        code, out, err, attempts = run(blocked, tmp_path, *args)
        assert (code, attempts) == (0, []), f"{args}: {err}"
        assert fragment in out, f"{args}: {out}"


def test_python_entry_points_run_without_torch(blocked, tmp_path):
    """What notebooks call (``inductor_tune.load_trials``) reads without torch too."""
    code, out, err, attempts = run_python(
        blocked, tmp_path, "-c", "import inductor_tune; print(len(inductor_tune.load_trials('db/modules.sqlite')))")
    assert (code, attempts) == (0, []), err
    assert out.strip() == "1565"


@pytest.mark.parametrize("args, fragment", [
    (["tune", "experiments/nope.yaml"], "does not exist"),
    (["tune", "experiments/smoke.yaml", "--shapes", "4096"], "not MxN"),
    (["sweep", "experiments/sweep_fwd.yaml", "--kernels", "groupnorm"], "unknown kernel(s) groupnorm"),
    (["validate", "heuristics/h200.yaml", "--shapes", "1024x1024", "--dtypes", "fp8"], "unknown dtype(s) fp8"),
    (["validate", "heuristics/h200.yaml", "--random", "3", "--kernels", "rmsnorm_fwd", "--max-gib", "0"],
     "--max-gib must be a positive"),
    (["validate", "heuristics/h200.yaml", "--models", "llama"], "unknown model(s) llama"),
    (["crossmeasure", "db/quack.sqlite", "--probes", "outer"], "unknown kind(s) outer"),
    (["distill", "db/quack.sqlite", "--gpu", "A100"], "A100"),
    (["show", "db/none.sqlite"], "no database at"),
    (["patch", "heuristics/none.yaml"], "none.yaml"),
    (["demo", "--trials", "1"], "--trials must be at least 2"),
    (["frobnicate"], "invalid choice"),
    (["-q", "-v", "show", "db/quack.sqlite"], "not allowed with"),
])
def test_bad_input_is_one_line_without_torch(blocked, tmp_path, args, fragment):
    code, _, err, attempts = run(blocked, tmp_path, *args)
    assert (code, attempts) == (2, []), err
    assert fragment in one_error_line(err)


@pytest.mark.parametrize("args", [
    ["gpus"],
    ["tune", "experiments/smoke.yaml", "--storage", "{tmp}/tune.sqlite"],
    ["sweep", "experiments/sweep_fwd.yaml", "--storage", "{tmp}/sweep.sqlite"],
    ["validate", "heuristics/h200.yaml", "--shapes", "1024x1024", "--storage", "{tmp}/validation.sqlite"],
    ["validate", "heuristics/h200.yaml", "--models", "llama-2048", "--storage", "{tmp}/validation.sqlite"],
    ["crossmeasure", "db/quack.sqlite", "--storage", "{tmp}/crossmeasure.sqlite"],
    ["demo", "--out", "{tmp}/demo"],
])
def test_commands_that_need_torch_say_so_in_one_line(blocked, tmp_path, args):
    code, _, err, attempts = run(blocked, tmp_path, *(a.format(tmp=tmp_path) for a in args))
    assert code == 2, err
    assert f"`{args[0]}` needs torch" in one_error_line(err) and "blocked by tests/test_torch_free.py" in err
    assert attempts[:1] == ["torch"]
