"""The application layer's GPU commands on a CPU: `validate` (shapes, the gate, --models) with a stand-in
GPU and worker pool, and the `tune --gpus` process's one-line errors.

The GPU tests (tests/test_gpu*.py) run these paths for real; here every line between the command line
and the workers runs too, with the measurements answered by fakes, so that a CPU-only CI catches a
broken request, result or printer.
"""

import dataclasses
import multiprocessing as mp
import types

import pytest
from fake_pools import H200, ScriptedPool

from inductor_tune import cli, models, validate
from inductor_tune.app import tune as app_tune, validate as app_validate
from inductor_tune.store import Store

DEFAULT_CHOICE = [{"kernel": "k", "config": {"XBLOCK": 1, "num_warps": 8}}]
RULE_CHOICE = [{"kernel": "k", "config": {"XBLOCK": 1, "num_warps": 4}}]


def _answer(speedup: float) -> dict:
    """A validate worker's result: five interleaved rounds, the heuristics ``speedup`` x faster."""
    default = [1.0 + 0.001 * i for i in range(5)]
    return {"times": {validate.DEFAULT: default, validate.HEURISTICS: [t / speedup for t in default]}, "errors": {},
            "captures": {}, "notes": [], "studied": False, "default_choice": DEFAULT_CHOICE,
            "heuristic_choice": RULE_CHOICE, "untouched": False, "slots": [], "bytes": 4 * 10**9}


class _Pool(ScriptedPool):
    """A WorkerPool on an H200 whose every validate task comes back ``speedup`` x faster under the rules."""

    speedup = 1.1

    def __init__(self, gpu, size, timeout_s, backend=None):
        super().__init__()

    def answer(self, task):
        return _answer(self.speedup)


# What torch.cuda.get_device_properties says of the one GPU (class attribute: a test may swap it).
_Pool.props = types.SimpleNamespace(total_memory=80 * 2**30, name="NVIDIA H200", major=9, minor=0,
                                    multi_processor_count=132)


@pytest.fixture
def gpu(monkeypatch):
    """A visible GPU with 80 GiB, for the app's torch checks; workers answered by ``_Pool``."""
    cuda = types.SimpleNamespace(is_available=lambda: True, device_count=lambda: 1,
                                 get_device_properties=lambda i: _Pool.props)
    monkeypatch.setattr(app_validate, "import_torch", lambda command: types.SimpleNamespace(cuda=cuda))
    monkeypatch.setattr("inductor_tune.workers.WorkerPool", _Pool)
    return _Pool


def test_validate_on_shapes_stores_a_record_per_problem_and_prints_the_table(gpu, tmp_path, capsys):
    storage = tmp_path / "v.sqlite"
    code = cli.main(["validate", "heuristics/h200.yaml", "--shapes", "32768x4096,8192x2048", "--kernels",
                     "rmsnorm_fwd", "--db", "db/quack.sqlite", "--storage", str(storage), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0
    assert "rmsnorm_fwd" in out and out.rstrip().endswith(f"records stored in sqlite:///{storage}")
    assert len(Store(f"sqlite:///{storage}", create=False).validations()) == 2


def test_validate_exits_1_on_a_regression(gpu, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gpu, "speedup", 0.8)
    code = cli.main(["validate", "heuristics/h200.yaml", "--shapes", "32768x4096", "--kernels", "rmsnorm_fwd",
                     "--db", "db/quack.sqlite", "--storage", str(tmp_path / "v.sqlite"), "--no-progress"])
    assert code == 1
    assert "regress against Inductor's default beyond noise at: rmsnorm_fwd 32768x4096" in capsys.readouterr().err


def test_the_gate_announces_its_draw_then_passes(gpu, tmp_path, capsys):
    code = cli.main(["validate", "heuristics/h200.yaml", "--random", "3", "--seed", "7", "--kernels", "rmsnorm_fwd",
                     "--db", "db/quack.sqlite", "--storage", str(tmp_path / "v.sqlite"), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("gate draw: seed 7, 3 bf16 problems of 1 kernel(s), rows 1..1000000, N 128..262144, "
                          "at most 4 GiB resident each, none at the ")
    assert "db/quack.sqlite" in out.splitlines()[0] and "\nPASS\n" in out
    assert out.rstrip().endswith('(each with the draw, under "gate")')


def test_the_same_gate_command_again_reads_its_records_back_and_measures_nothing(gpu, tmp_path, monkeypatch, capsys):
    args = ["validate", "heuristics/h200.yaml", "--random", "3", "--seed", "7", "--kernels", "rmsnorm_fwd",
            "--db", "db/quack.sqlite", "--storage", str(tmp_path / "v.sqlite"), "--no-progress"]
    assert cli.main(args) == 0
    first = capsys.readouterr().out
    assert "resumed" not in first
    monkeypatch.setattr(_Pool, "answer", lambda self, task: pytest.fail(f"{task.problem} measured again"))
    assert cli.main(args) == 0
    again = capsys.readouterr().out
    assert "resumed: 3 of the 3 problems were read back" in again
    # The same verdict and table, from the records.
    assert again.replace(again[again.index("resumed"):again.index("records stored")], "") == first
    assert len(Store(f"sqlite:///{tmp_path / 'v.sqlite'}", create=False).validations()) == 3
    # Other rounds are another run.
    monkeypatch.setattr(_Pool, "answer", lambda self, task: _answer(1.1))
    assert cli.main([*args, "--rounds", "3"]) == 0 and "resumed" not in capsys.readouterr().out


def test_a_heuristic_file_for_another_gpu_is_one_line(gpu, tmp_path, monkeypatch, capsys):
    # An H100 SXM has an H200's capability and SM count: the name tells them apart, before any worker starts.
    monkeypatch.setattr(_Pool, "props", types.SimpleNamespace(**{**vars(_Pool.props), "name": "NVIDIA H100 80GB HBM3"}))
    monkeypatch.setattr(_Pool, "__init__", lambda *a, **k: pytest.fail("a worker pool was started"))
    for extra in (["--shapes", "32768x4096", "--kernels", "rmsnorm_fwd", "--db", "db/quack.sqlite"],
                  ["--models", "llama-2048"]):
        code = cli.main(["validate", "heuristics/h200.yaml", *extra, "--storage", str(tmp_path / "v.sqlite"),
                         "--no-progress"])
        assert code == 2
        assert capsys.readouterr().err.strip() == (
            "inductor-tune: error: heuristics/h200.yaml is for NVIDIA H200; GPU 0 is NVIDIA H100 80GB HBM3: "
            "validate a file on the GPU model it was distilled for")
    assert not (tmp_path / "v.sqlite").exists()


def test_validate_models_stores_and_prints_a_row_per_model(gpu, tmp_path, monkeypatch, capsys):
    measured = []

    def run_one(spec, heuristics_path, rounds, steps, gpu, timeout_s, lock_dir):
        measured.append(spec.name)
        times = {models.DEFAULT: [10.0, 10.1, 10.0], models.RULES: [9.0, 9.1, 9.0]}
        return (H200, 4000.0), {"model": spec.name, "spec": dataclasses.asdict(spec), "tokens": spec.tokens,
                                "implementation": "plain", "times": times}

    monkeypatch.setattr(models, "run_one", run_one)
    monkeypatch.setattr(models, "gpu_key", lambda gpu: H200.key)
    monkeypatch.setattr(app_validate, "import_torch", lambda command: types.SimpleNamespace(
        cuda=types.SimpleNamespace(is_available=lambda: True, device_count=lambda: 1,
                                   get_device_properties=lambda i: _Pool.props)))
    storage = tmp_path / "v.sqlite"
    code = cli.main(["validate", "heuristics/h200.yaml", "--models", "llama-2048,gpt2-1024", "--rounds", "3",
                     "--storage", str(storage), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "llama-2048" in out and "gpt2-1024" in out and "1.111" in out
    assert out.rstrip().endswith(f"records stored in sqlite:///{storage}")
    assert {r.kernel for r in Store(f"sqlite:///{storage}", create=False).validations()} == {
        "model:llama-2048", "model:gpt2-1024"}
    # The same command again (a device call's limit stopped it, say) measures only what it has no record of.
    assert cli.main(["validate", "heuristics/h200.yaml", "--models", "llama-2048,gpt2-2048", "--rounds", "3",
                     "--storage", str(storage), "--no-progress"]) == 0
    assert measured == ["llama-2048", "gpt2-1024", "gpt2-2048"]
    assert "llama-2048" in capsys.readouterr().out


def test_a_tune_gpus_process_sends_back_its_one_line_error(tmp_path):
    """What `tune --gpus` prints for a process that stopped on bad input, instead of its traceback."""
    receive, send = mp.Pipe(duplex=False)
    request = app_tune.TuneRequest(str(tmp_path / "none.yaml"), gpus=(1,))
    app_tune._gpu_process(request, 30, send)
    result = receive.recv()
    assert (result.gpu, result.status) == (1, 2) and "none.yaml" in result.error


def test_tune_results_amount_to_the_exit_status_of_the_worst_gpu(capsys):
    from inductor_tune.app.tune import TuneResult

    results = [TuneResult(0), TuneResult(1, failed=("study x: boom",)), TuneResult(2, error="bad\ninput")]
    assert cli.print_tune(results) == 2
    assert capsys.readouterr().err.splitlines() == ["inductor-tune: study x: boom", "inductor-tune: error: bad input"]
    assert cli.print_tune([TuneResult(0), TuneResult(1, exit_code=130)]) == 130


def _draw_file(tmp_path, capsys) -> str:
    path = str(tmp_path / "draw.json")
    assert cli.main(["validate", "heuristics/h200.yaml", "--random", "3", "--seed", "7", "--kernels", "rmsnorm_fwd",
                     "--db", "db/quack.sqlite", "--draw-out", path, "--no-progress"]) == 0
    capsys.readouterr()
    return path


def test_a_committed_draw_is_scored_exactly_as_written(gpu, tmp_path, capsys):
    # Drawing again needs the very same --db list; --draw FILE scores the committed problems whatever is named.
    import json

    path = _draw_file(tmp_path, capsys)
    storage = tmp_path / "v.sqlite"
    code = cli.main(["validate", "heuristics/h200.yaml", "--draw", path, "--db", "db/quack.sqlite,db/llm.sqlite",
                     "--storage", str(storage), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith(f"gate draw read from {path}: seed 7, 3 bf16 problems of 1 kernel(s)")
    assert "none at the " in out and "shapes of db/quack.sqlite, db/llm.sqlite" in out.splitlines()[0]
    assert "\nPASS\n" in out
    committed = {tuple(p) for p in json.load(open(path))["problems"]}
    stored = {(r.kernel, r.rows, r.cols, r.dtype) for r in Store(f"sqlite:///{storage}", create=False).validations()}
    assert stored == committed


def test_a_draw_no_longer_held_out_is_refused_before_any_measurement(gpu, tmp_path, capsys, monkeypatch):
    import json

    path = _draw_file(tmp_path, capsys)
    data = json.load(open(path))
    data["problems"][1] = ["rmsnorm_fwd", 32768, 4096, "bf16"]  # a shape db/quack.sqlite studied
    with open(path, "w") as f:
        json.dump(data, f)
    monkeypatch.setattr(_Pool, "__init__", lambda *a, **k: pytest.fail("a worker pool was started"))
    code = cli.main(["validate", "heuristics/h200.yaml", "--draw", path, "--db", "db/quack.sqlite",
                     "--storage", str(tmp_path / "v.sqlite"), "--no-progress"])
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        f"inductor-tune: error: --draw: 1 of the 3 problems of {path} lie at shapes the databases hold "
        "(first: rmsnorm_fwd 32768x4096); it is not held out from them")
    assert not (tmp_path / "v.sqlite").exists()


@pytest.mark.parametrize("extra, flag", [(["--kernels", "rmsnorm_fwd"], "--kernels"), (["--seed", "3"], "--seed"),
                                         (["--random", "3"], "--random")])
def test_a_committed_draw_takes_no_draw_arguments(gpu, tmp_path, capsys, extra, flag):
    path = _draw_file(tmp_path, capsys)
    code = cli.main(["validate", "heuristics/h200.yaml", "--draw", path, *extra, "--storage", str(tmp_path / "v.sqlite")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("inductor-tune: error: ") and flag in err, err
    assert not (tmp_path / "v.sqlite").exists()
