"""The generalization gate (`validate --random`): the draw, the worker's savings, the stored failures, the verdict."""

import contextlib
import json
import math
import sqlite3
import statistics
import subprocess
import sys
import types

import pytest
from fake_pools import ScriptedPool

from inductor_tune import gate, validate
from inductor_tune.kernels import CATALOG
from inductor_tune.store import Store
from inductor_tune.tasks import ValidateTask

GiB = 2**30
NO_BOUND = 2**62


def _shapes(problems):
    return [(p.shape.rows, p.shape.cols) for p in problems]


# -- the draw -----------------------------------------------------------------------------------

def test_the_draw_is_reproducible_for_a_seed_and_differs_for_another():
    first = gate.make_draw(300, 7, None, set(), 4 * GiB)
    again = gate.make_draw(300, 7, None, set(), 4 * GiB)
    other = gate.make_draw(300, 8, None, set(), 4 * GiB)
    assert first == again and first.to_json() == again.to_json()
    assert len(set(first.problems)) == 300
    assert len(set(first.problems) & set(other.problems)) < 5
    assert gate.Draw.from_json(first.to_json()) == first
    assert first.as_problems() == gate.draw_problems(300, 7, None, set(), 4 * GiB)
    assert first.kernels == tuple(CATALOG) and first.seed == 7 and first.n == 300
    # The whole catalog, uniformly before the size bound (300 / 19 kernels ≈ 16 each; backward kernels hold
    # more tensors, so the bound rejects more of their large draws).
    counts = {k: sum(p[0] == k for p in first.problems) for k in CATALOG}
    assert min(counts.values()) >= 3 and sum(counts.values()) == 300, counts


class _Dense:
    """Avoids three quarters of all shapes: odd rows, and every shape with fewer than 4096 columns."""

    def __init__(self):
        self.asked = 0

    def __contains__(self, shape):
        self.asked += 1
        rows, cols = shape
        return rows % 2 == 1 or cols < 4096


def test_the_draw_never_returns_an_avoided_shape_even_when_avoid_is_dense():
    free = gate.draw_problems(300, 0, None, set(), NO_BOUND)
    # Every shape the free draw took, avoided for every kernel: the same seed must find others.
    taken = set(_shapes(free))
    kept_out = gate.draw_problems(300, 0, ["rmsnorm_fwd"], taken, NO_BOUND)
    assert not taken & set(_shapes(kept_out))
    dense = _Dense()
    drawn = gate.draw_problems(200, 0, None, dense, NO_BOUND)
    assert len(drawn) == 200 and dense.asked > 400
    assert all(rows % 2 == 0 and cols >= 4096 for rows, cols in _shapes(drawn))


def test_the_draw_avoids_every_recorded_shape_and_says_when_it_cannot_draw_enough():
    stores = [Store(f"sqlite:///db/{name}.sqlite", create=False) for name in ("quack", "crossmeasure")]
    studied = gate.studied_shapes(stores)
    expected = set()
    for name, table in (("quack", "it_study"), ("crossmeasure", "it_crossmeasure")):
        con = sqlite3.connect(f"db/{name}.sqlite")
        expected |= set(con.execute(f"select rows, cols from {table}").fetchall())
        con.close()
    assert studied == expected and len(studied) > 40
    # The recorded shapes are powers of two and round sizes a log-uniform draw rarely hits, so add
    # the first shapes this seed draws: the gate must step over them too.
    free = gate.draw_problems(20, 3, None, set(), 4 * GiB)
    avoid = studied | set(_shapes(free[:10]))
    drawn = gate.draw_problems(300, 3, None, avoid, 4 * GiB)
    assert not avoid & set(_shapes(drawn))
    everything = type("Everything", (), {"__contains__": lambda self, shape: True})()
    with pytest.raises(ValueError, match="drew only 0 of 5 problems"):
        gate.draw_problems(5, 0, None, everything, 4 * GiB)


def test_sizes_respect_the_bound_and_backward_kernels_count_more():
    bound = 64 * 2**20
    drawn = gate.draw_problems(500, 1, None, set(), bound)
    sizes = [gate.resident_bytes(p.kernel, p.shape.rows, p.shape.cols, p.dtype) for p in drawn]
    assert max(sizes) <= bound and max(sizes) > bound / 2  # the bound binds, and is not far too tight
    for p, size in zip(drawn, sizes):
        assert size == gate.resident_factor(p.kernel) * p.shape.rows * p.shape.cols * 2
    # A backward problem holds the incoming gradient and, per variant, its forward's output besides its own.
    for name in ("rmsnorm", "layernorm", "softmax"):
        assert gate.resident_factor(f"{name}_bwd") >= 2 * gate.resident_factor(f"{name}_fwd")
    assert gate.resident_factor("rmsnorm_fwd") >= 1 + 2 * 2  # x, and the default's and the rules' outputs
    assert gate.resident_factor("add_rmsnorm_fwd") > gate.resident_factor("rmsnorm_fwd")  # two inputs, two outputs
    fp32 = gate.draw_problems(200, 1, ["softmax_bwd"], set(), bound, dtype="fp32")
    assert all(gate.resident_bytes(p.kernel, p.shape.rows, p.shape.cols, "fp32") <= bound for p in fp32)
    assert {p.dtype for p in fp32} == {"fp32"}


def test_rows_and_columns_are_log_uniform_over_their_ranges():
    drawn = gate.draw_problems(4000, 2, None, set(), NO_BOUND)
    rows = [p.shape.rows for p in drawn]
    cols = [p.shape.cols for p in drawn]
    assert 1 <= min(rows) <= 2 and 5 * 10**5 <= max(rows) <= 10**6
    assert 128 <= min(cols) <= 140 and 240000 <= max(cols) <= 262144
    # Uniform in log space: each decade of rows holds about a sixth, the mean log sits mid-range.
    decades = [sum(10**d <= r < 10 ** (d + 1) for r in rows) / len(rows) for d in range(6)]
    assert all(0.13 < f < 0.21 for f in decades), decades
    assert statistics.mean(math.log2(c) for c in cols) == pytest.approx((7 + 18) / 2, abs=0.2)
    assert statistics.mean(math.log10(r) for r in rows) == pytest.approx(3, abs=0.15)


def test_non_powers_of_two_appear():
    drawn = gate.draw_problems(300, 0, None, set(), 4 * GiB)
    odd_cols = [p.shape.cols for p in drawn if p.shape.cols & (p.shape.cols - 1)]
    odd_rows = [p.shape.rows for p in drawn if p.shape.rows & (p.shape.rows - 1)]
    assert len(odd_cols) > 0.9 * len(drawn) and len(odd_rows) > 0.6 * len(drawn)


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(n=0), "at least one problem"), (dict(seed=-1), "non-negative"), (dict(max_bytes=0), "positive"),
    (dict(kernels=["groupnorm"]), "unknown kernel"), (dict(kernels=[]), "at least one kernel"),
    (dict(dtype="fp8"), "unknown dtype"),
])
def test_bad_draw_arguments_are_refused(kwargs, fragment):
    args = dict(n=3, seed=0, kernels=None, avoid=set(), max_bytes=GiB) | kwargs
    with pytest.raises(ValueError, match=fragment):
        gate.draw_problems(**args)


# -- summaries and the verdict ------------------------------------------------------------------

DEFAULT_CHOICE = [{"kernel": "k", "config": {"XBLOCK": 1, "num_warps": 8}}]
RULE_CHOICE = [{"kernel": "k", "config": {"XBLOCK": 1, "num_warps": 4}}]


def _result(heur_factor=None, rounds=5):
    """A worker's result: the default's rounds, and the heuristics' scaled by heur_factor (None: untouched)."""
    default = [1.0 + 0.001 * i for i in range(rounds if heur_factor else 2)]
    data = {"times": {validate.DEFAULT: default}, "errors": {}, "captures": {}, "notes": [], "studied": False,
            "default_choice": DEFAULT_CHOICE, "slots": [], "bytes": 4 * 10**9}
    if heur_factor is None:
        data.update(untouched=True, heuristic_choice=DEFAULT_CHOICE,
                    notes=[f"{validate.HEURISTICS}: Inductor's own launch configs; timed as the default"])
    else:
        data.update(untouched=False, heuristic_choice=RULE_CHOICE)
        data["times"][validate.HEURISTICS] = [t * heur_factor for t in default]
    return data


def test_summarize_problem_on_an_untouched_result():
    row = validate.summarize_problem("rmsnorm_fwd", "1000x3000", "bf16", _result(None), 4000.0)
    heur, default = row.variant(validate.HEURISTICS), row.variant(validate.DEFAULT)
    assert heur is not None and not row.heuristics_applied and not row.regressed
    assert heur.ratio_to_default == heur.ratio_low == heur.ratio_high == 1.0
    assert (heur.median_ms, heur.gbps) == (default.median_ms, default.gbps) == (1.0005, pytest.approx(3998.0, 1e-3))
    # Even a default that drifted badly between its rounds cannot make an untouched problem regress.
    data = _result(None)
    data["times"][validate.DEFAULT] = [1.0, 2.0]
    assert not validate.summarize_problem("rmsnorm_fwd", "1000x3000", "bf16", data, 4000.0).regressed


def _rows(*factors):
    return [validate.summarize_problem("rmsnorm_fwd", f"{100 + i}x3000", "bf16", _result(f), 4000.0)
            for i, f in enumerate(factors)]


def test_the_gate_passes_without_failures_or_regressions():
    draw = gate.make_draw(4, 5, ["rmsnorm_fwd"], set(), GiB)
    summary = gate.summarize_gate(_rows(None, None, 1 / 1.1, 1 / 0.99), draw)  # 10 % faster; 1 % slower: noise
    assert summary.passed and not summary.failures and not summary.regressions
    assert (summary.drawn, summary.measured, summary.touched, summary.seed) == (4, 4, 2, 5)
    assert summary.geomean_touched == pytest.approx(math.sqrt(1.1 * 0.99))
    assert summary.geomean_all == pytest.approx((1.1 * 0.99) ** 0.25)
    assert summary.worst_ratio == pytest.approx(0.99) and summary.worst_problem == "rmsnorm_fwd 103x3000 bf16"
    text = summary.render()
    assert text.splitlines()[-1] == "PASS" and "seed 5" in text and "rules touched 2 of 4" in text
    only_untouched = gate.summarize_gate(_rows(None, None))
    assert only_untouched.passed and only_untouched.touched == 0 and "n/a" in only_untouched.render()


def test_one_regression_fails_the_gate():
    summary = gate.summarize_gate(_rows(None, 1 / 1.1, 1 / 0.9))  # the last: 10 % slower in every round
    assert not summary.passed and summary.regressions == ("rmsnorm_fwd 102x3000 bf16",)
    assert summary.render().splitlines()[-1] == "FAIL (1 regression(s))"


def test_one_compile_failure_fails_the_gate():
    failed = validate.ProblemFailure("layernorm_bwd", "77x5000", "bf16", "heuristics variant failed to compile: X")
    summary = gate.summarize_gate(_rows(None, 1 / 1.1) + [failed])
    assert not summary.passed and not summary.regressions and summary.measured == 2 and summary.drawn == 3
    assert summary.failures == (("layernorm_bwd 77x5000 bf16", failed.reason),)
    text = summary.render()
    assert "1 failed to compile or check" in text and text.splitlines()[-1] == "FAIL (1 failure(s))"
    assert "failed: layernorm_bwd 77x5000 bf16: heuristics variant failed to compile: X" in text


def test_a_rule_that_breaks_the_numerics_fails_the_gate():
    data = _result(1.0)
    del data["times"][validate.HEURISTICS]  # what measure_variants leaves of a wrong result
    data["notes"] = ["heuristics: wrong result (normwise error 0.5 > 0.016); not timed"]
    row = validate.summarize_problem("softmax_fwd", "300x3000", "bf16", data, 4000.0)
    summary = gate.summarize_gate([row])
    assert not summary.passed and summary.failures == (("softmax_fwd 300x3000 bf16", data["notes"][0]),)


# -- the worker: a problem the rules leave alone is timed once, as the default ------------------

class _FakeCall:
    def __init__(self, fail=False):
        self.fail, self.graph = fail, None

    def compile(self):
        if self.fail:
            raise ValueError("triton: out of registers")

    def run_eager(self):
        return None

    def capture(self):
        return ""

    def run(self):
        return None


@pytest.fixture
def worker(monkeypatch):
    """measure_variants with Inductor, the GPU and the peers replaced by fakes that record their use."""
    from inductor_tune import evaluate, heuristics, peers
    from inductor_tune.evaluate import Problem
    from inductor_tune.kernels import Shape
    from inductor_tune.runtime import registry

    used = types.SimpleNamespace(choices=[], peers=0, heuristics_fail=False, rules=[], apply=False, graph_note="")

    def compiled_call(*args):
        if used.apply:  # what heuristics.apply_rules logs when a rule reaches a kernel
            used.rules.append("inner_looped sum rnumel 4096..4096 (XBLOCK=1) -> x=1000 r=3000" + used.graph_note)
            registry.note_pick("size hints {'x': 1024, 'r0_': 4096}: Inductor's kernel 0 of 2 (Inductor's is 0)")
        return _FakeCall(fail=used.heuristics_fail)

    def peer_functions(kernel):
        used.peers += 1
        return {}, {"quack": "not installed"}

    monkeypatch.setattr(evaluate, "_autotuner_ids", lambda: set())
    monkeypatch.setattr(evaluate, "inductor_choices_made", lambda before: json.dumps(used.choices.pop(0)))
    monkeypatch.setattr(evaluate, "compile_plan", lambda state, config: (_FakeCall(), types.SimpleNamespace(slots=[])))
    monkeypatch.setattr(evaluate, "CompiledCall", compiled_call)
    monkeypatch.setattr(heuristics, "applied_rules", lambda: list(used.rules))
    monkeypatch.setattr(evaluate, "reference_error", lambda *args: 0.0)
    monkeypatch.setattr(evaluate, "time_call", lambda run, timing: (0.0, 1.0, 0.0))
    monkeypatch.setattr(heuristics, "load", lambda path: None)
    monkeypatch.setattr(heuristics, "install",
                        lambda heur: contextlib.nullcontext(types.SimpleNamespace(active=True, reason="")))
    monkeypatch.setattr(peers, "peer_functions", peer_functions)
    state = types.SimpleNamespace(problem=Problem("rmsnorm_fwd", Shape(1000, 3000), "bf16"), inputs={},
                                  grad_output=None, bytes=12 * 10**6)

    def measure(choices, **payload):
        used.choices[:] = [*choices, choices[0]]  # the default's, the heuristics compile's, the default's again
        used.apply = choices[1] != choices[0]  # a rule applied exactly where the configs differ here
        task = ValidateTask(0, state.problem, "h.yaml", 5, types.SimpleNamespace(cuda_graph=False), **payload)
        return validate.measure_variants(state, task, contextlib.nullcontext())

    used.measure = measure
    used.state = state
    return used


def test_an_untouched_problem_is_timed_only_as_the_default(worker):
    result = worker.measure([DEFAULT_CHOICE, DEFAULT_CHOICE], skip_untouched=True, peers=False)
    assert result["untouched"] is True
    assert list(result["times"]) == [validate.DEFAULT] and len(result["times"][validate.DEFAULT]) == 2
    assert worker.peers == 0
    row = validate.summarize_problem("rmsnorm_fwd", "1000x3000", "bf16", result, 4000.0)
    assert not row.heuristics_applied and row.variant(validate.HEURISTICS).ratio_to_default == 1.0


def test_a_touched_problem_is_timed_interleaved_in_every_round(worker):
    from inductor_tune.runtime import registry

    registry.note_pick("an earlier compile's pick")
    result = worker.measure([DEFAULT_CHOICE, RULE_CHOICE], skip_untouched=True, peers=False)
    assert result["untouched"] is False and worker.peers == 0
    # The multi-kernel picks of this problem's compile, and no earlier one, are kept with its record.
    assert result["multi_kernel_picks"] == ["size hints {'x': 1024, 'r0_': 4096}: Inductor's kernel 0 of 2 "
                                            "(Inductor's is 0)"]
    # Inductor's default is compiled a second time where the rules touched a problem, and timed in the same rounds.
    assert {k: len(v) for k, v in result["times"].items()} == {validate.DEFAULT: 5, validate.HEURISTICS: 5,
                                                               validate.DEFAULT_AGAIN: 5}
    assert result["default_again_choice"] == DEFAULT_CHOICE
    # Untouched is decided by whether a rule applied, not by the final configs: Inductor's own autotuning
    # can pick differently in two compiles of the same program.
    worker.rules.clear()
    used_apply = worker.measure([DEFAULT_CHOICE, RULE_CHOICE], skip_untouched=True, peers=False)
    assert used_apply["rules_applied"] and not used_apply["untouched"]
    # Without the gate's flags nothing changes: same configs are still timed twice, peers asked.
    result = worker.measure([DEFAULT_CHOICE, DEFAULT_CHOICE])
    assert result["untouched"] is False and worker.peers == 1
    assert {k: len(v) for k, v in result["times"].items()} == {validate.DEFAULT: 5, validate.HEURISTICS: 5,
                                                               validate.DEFAULT_AGAIN: 5}


def test_a_backward_problem_is_touched_only_by_a_rule_on_its_backward_graph(worker):
    """A backward problem times its backward graph only; a rule that reached its forward graph (compiled under
    the rules, run outside the timed region) leaves it untouched, as at set 45's softmax_bwd 121x4886."""
    from inductor_tune.evaluate import Problem
    from inductor_tune.kernels import Shape
    from inductor_tune.runtime import registry

    worker.state.problem = Problem("rmsnorm_bwd", Shape(1000, 3000), "bf16")
    result = worker.measure([DEFAULT_CHOICE, RULE_CHOICE], skip_untouched=True, peers=False)
    assert result["rules_applied"] and result["timed_rules_applied"] == [] and result["untouched"] is True
    worker.graph_note = registry.BACKWARD_GRAPH_NOTE
    result = worker.measure([DEFAULT_CHOICE, RULE_CHOICE], skip_untouched=True, peers=False)
    assert result["timed_rules_applied"] and result["untouched"] is False
    assert set(result["times"]) == {validate.DEFAULT, validate.HEURISTICS, validate.DEFAULT_AGAIN}


def test_a_heuristics_compile_failure_names_the_variant(worker):
    worker.heuristics_fail = True
    with pytest.raises(RuntimeError, match="heuristics variant failed to compile: ValueError: triton: out of reg"):
        worker.measure([DEFAULT_CHOICE, RULE_CHOICE], skip_untouched=True, peers=False)


# -- the parent: failures are stored with the draw and counted, not raised ----------------------

class _FakePool(ScriptedPool):
    def __init__(self, answers):
        super().__init__()
        self.answers = answers

    def answer(self, task):
        return self.answers[task.task_id]


def test_a_gate_run_stores_failures_with_the_draw_and_the_gate_fails(tmp_path):
    from inductor_tune import figdata
    from inductor_tune.records import Outcome, TimingSpec
    from inductor_tune.workers import TaskFailure

    draw = gate.make_draw(4, 11, ["rmsnorm_fwd"], set(), GiB)
    crash = TaskFailure(Outcome.COMPILE_ERROR, "RuntimeError: heuristics variant failed to compile: boom")
    wrong_default = dict(_result(None), times={}, notes=["inductor_default: wrong result (normwise error 1); not timed"])
    pool = _FakePool([_result(None), crash, _result(1 / 1.2), wrong_default])
    store = Store(f"sqlite:///{tmp_path}/v.sqlite")
    gate_json = json.loads(draw.to_json())
    rows = validate.run_validation("heuristics/h200.yaml", draw.as_problems(), pool, store, [], 3, TimingSpec(),
                                   gate=gate_json)
    assert all(t.skip_untouched and t.peers is False and t.best_config is None for t in pool.tasks)
    assert isinstance(rows[1], validate.ProblemFailure) and "boom" in rows[1].reason
    assert isinstance(rows[3], validate.ProblemFailure) and "default was not timed" in rows[3].reason
    records = store.validations()
    # The first record keeps the whole draw, the others its arguments and digest (the database stays small).
    gates = [json.loads(r.result_json)["gate"] for r in records]
    assert len(records) == 4 and {**gate_json, "draw_sha256": gates[0]["draw_sha256"]} == gates[0]
    assert all(g == {k: v for k, v in gates[0].items() if k != "problems"} for g in gates[1:])
    failed = json.loads(records[1].result_json)
    assert failed["failed"] == crash.reason and failed["outcome"] == "compile_error" and "summary" not in failed
    summary = gate.summarize_gate(rows, draw)
    assert not summary.passed and len(summary.failures) == 2 and summary.touched == 1
    assert summary.geomean_touched == pytest.approx(1.2)
    # Reports read the timed problems only.
    assert len(figdata.validation_rows(store)) == 2
    assert {p.rows for p in figdata.validation_points(store)} == {draw.problems[0][1], draw.problems[2][1]}
    # Outside a gate run a failed problem still stops the run.
    with pytest.raises(RuntimeError, match="boom"):
        validate.run_validation("heuristics/h200.yaml", draw.as_problems()[:3], _FakePool([_result(None), crash,
                                _result(1.0)]), store, [], 3, TimingSpec())


def test_a_stopped_gate_run_keeps_each_record_as_it_came_and_the_same_command_measures_only_the_rest(tmp_path):
    # Stop 49 (H200): a device call's limit cut set 44's gate run after 234 s and nothing of it was stored.
    from inductor_tune.records import TimingSpec

    class _StoppedPool(_FakePool):
        def answer(self, task):
            if task.task_id == 2:
                raise KeyboardInterrupt  # the call's limit, part way through
            return super().answer(task)

    draw = gate.make_draw(4, 12, ["rmsnorm_fwd"], set(), GiB)
    gate_json, problems = json.loads(draw.to_json()), draw.as_problems()
    answers = [_result(None), _result(1 / 1.2), _result(None), _result(1 / 1.05)]
    store = Store(f"sqlite:///{tmp_path}/v.sqlite")
    first = _StoppedPool(answers)
    with pytest.raises(KeyboardInterrupt):
        validate.run_validation("heuristics/h200.yaml", problems, first, store, [], 3, TimingSpec(), gate=gate_json)
    assert len(store.validations()) == 2
    from inductor_tune import heuristics

    digest = heuristics.load("heuristics/h200.yaml").digest()
    done = validate.recorded_gate_rows(store, first, digest, gate_json, 3, TimingSpec())
    assert len(done) == 2
    # Another file, other rounds or another draw resume nothing.
    assert validate.recorded_gate_rows(store, first, "0" * 16, gate_json, 3, TimingSpec()) == {}
    assert validate.recorded_gate_rows(store, first, digest, gate_json, 5, TimingSpec()) == {}
    other = json.loads(gate.make_draw(4, 13, ["rmsnorm_fwd"], set(), GiB).to_json())
    assert validate.recorded_gate_rows(store, first, digest, other, 3, TimingSpec()) == {}

    again = _FakePool(answers)
    rows = validate.run_validation("heuristics/h200.yaml", problems, again, store, [], 3, TimingSpec(),
                                   gate=gate_json, done=done)
    assert sorted(t.task_id for t in again.tasks) == [2, 3]
    assert [r.shape for r in rows] == [str(p.shape) for p in problems]
    assert rows[1].heuristics_applied and rows[1].variant(validate.HEURISTICS).ratio_to_default == pytest.approx(1.2)
    records = store.validations()
    gates = [json.loads(r.result_json)["gate"] for r in records]
    assert len(records) == 4 and ["problems" in g for g in gates] == [True, False, False, False]
    summary = gate.summarize_gate(rows, draw)
    assert summary.measured == 4 and summary.touched == 2 and summary.passed


# -- the command line ---------------------------------------------------------------------------

def _cli(*args):
    proc = subprocess.run([sys.executable, "-m", "inductor_tune", "validate", "heuristics/h200.yaml", *args],
                          capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize("args, fragment", [
    (["--random", "0"], "--random must be at least 1"),
    (["--random", "ten"], "--random 'ten' is not an integer"),
    (["--random", "10", "--seed", "-1"], "--seed must be at least 0"),
    (["--random", "10", "--dtypes", "bf16,fp32"], "one dtype"),
])
def test_bad_gate_input_gives_one_line_and_exit_2(args, fragment):
    code, out, err = _cli(*args)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("inductor-tune: error: "), err
    assert fragment in lines[0] and not out


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the path up to the GPU")
def test_the_gate_draws_before_it_needs_the_gpu(tmp_path):
    code, out, err = _cli("--random", "300", "--seed", "4", "--storage", f"{tmp_path}/v.sqlite")
    assert code == 2 and "no CUDA GPU is visible" in err.splitlines()[-1]
    assert out.startswith(f"gate draw: seed 4, 300 bf16 problems of {len(CATALOG)} kernel(s)") and "db/crossmeasure.sqlite" in out
    assert not (tmp_path / "v.sqlite").exists()
