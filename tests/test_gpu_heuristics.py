"""GPU tests of installed heuristics and `validate` (H100/H200): ``pytest -m gpu``; skipped without CUDA."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
import torch
from gpu_fixtures import reduction_kernels

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

# test_validate_two_shapes: on an H200 it validates this file; on any other GPU it checks the refusal.
HEURISTICS = "heuristics/h200.yaml"


def _launch_configs(kernel: str, shape: str, heur=None):
    """Compile ``kernel`` at ``shape`` (optionally under the heuristics) and return its launch configs."""
    from inductor_tune import evaluate, heuristics
    from inductor_tune.evaluate import CompiledCall, Problem, ProblemState
    from inductor_tune.kernels import Shape
    from inductor_tune.space import INDUCTOR_DEFAULT

    state = ProblemState(Problem(kernel, Shape.parse(shape), "bf16"))
    before = evaluate._autotuner_ids()
    if heur is None:
        _, plan = evaluate.compile_plan(state, INDUCTOR_DEFAULT)
        chosen = evaluate.inductor_choices_made(before)
        return [c["config"] for c in __import__("json").loads(chosen)], plan.slots, chosen
    with heuristics.install(heur) as handle:
        assert handle.active, handle.reason
        CompiledCall(state.problem, state.inputs, state.grad_output).compile()
    return [c["config"] for c in __import__("json").loads(evaluate.inductor_choices_made(before))], None, None


def test_install_changes_a_rule_shape_and_leaves_a_keep_default_shape_alone(shipped_heuristics):
    from inductor_tune import heuristics, torch_rules
    from inductor_tune.kernels import CATALOG

    path = shipped_heuristics
    heur = heuristics.load(path)
    # A config rule with a keep-default neighbour of the same family, and a forward catalog kernel in it.
    def kernel_for(rule):
        return next((k for k, s in CATALOG.items() if not s.backward and s.envelope in rule.envelopes
                     and torch_rules.kernel_signature(s.reductions.split("+"), False) == rule.reductions), None)

    def shape_in(rule):
        # Inside the rule's measured rows and N where it has them: a rule cut in N or rows leaves the rest of its
        # size bucket to its neighbours.
        low, high = rule.rows or rule.xnumel
        return min(max(low, 8192), high), rule.cols[1] if rule.cols else rule.rnumel[0]

    def kept_shape(rule):
        # Outside Inductor's split region (fewer than 2 x 132 rows and N past 8192), where the rule's kernel exists.
        rows = rule.rows or rule.xnumel
        cols = rule.cols[1] if rule.cols else rule.rnumel[0]
        return (rows[0] if cols <= 8192 else min(max(rows[0], 264), rows[1])), cols

    def owns(rule, rows, cols):
        envelope = next(iter(rule.envelopes), None)
        # A multi-kernel entry comes before a config or keep-default rule: there the kernel is built with several
        # configs (stop 60: softmax_fwd 3x4064's keep-default rule lies inside one of h200-s57-mk3's entries).
        entry = any(e.covers(rule.kind, rule.element_size, rule.reductions, envelope, rows, cols)
                    for e in heur.multi_kernel)
        return not entry and heur.lookup(rule.kind, rule.element_size, cols, rows, rule.reductions, envelope) == rule

    family = lambda r: (r.kind, r.reductions, r.envelopes)  # noqa: E731
    rule, kept = next((rule, kept) for rule in heur.rules if rule.kind == "inner_looped" and rule.config is not None
                      and kernel_for(rule) and owns(rule, *shape_in(rule))
                      for kept in heur.rules if family(kept) == family(rule) and kept.config is None
                      and owns(kept, *kept_shape(kept)))
    kernel, (rows, cols) = kernel_for(rule), shape_in(rule)
    shape = f"{rows}x{cols}"
    default = _launch_configs(kernel, shape)[0]
    mark = len(heuristics.applied_rules())
    installed = _launch_configs(kernel, shape, heur)[0]
    assert heuristics.applied_rules()[mark:], f"no rule applied at {kernel} {shape} ({rule.describe()})"
    assert installed != default, f"installing {path} changed nothing at {kernel} {shape} ({rule.describe()})"
    (cfg,) = installed
    # Launch configs as the autotuner holds them: XBLOCK appears only where it is a kernel argument.
    assert cfg["num_warps"] == rule.config.num_warps and cfg.get("XBLOCK", rule.config.XBLOCK) == rule.config.XBLOCK, (
        cfg, rule.describe())
    if not rule.config.persistent:
        assert cfg.get("R0_BLOCK") == rule.config.R0_BLOCK, (cfg, rule.describe())
    # A keep-default rule forces nothing (the final configs are no test: Inductor's own autotuning may pick
    # differently in two compiles of the same program).  Its shape lies inside its own rows and N: a row band
    # that keeps the default may share its N bucket with the config rule above.
    kept_rows, kept_cols = kept_shape(kept)
    kept_at = f"{kept_rows}x{kept_cols}"
    mark = len(heuristics.applied_rules())
    _launch_configs(kernel, kept_at, heur)
    assert heuristics.applied_rules()[mark:] == [], (kernel, kept_at, kept.describe())


def test_validate_two_shapes(tmp_path):
    storage = tmp_path / "validation.sqlite"
    proc = subprocess.run(
        [sys.executable, "-m", "inductor_tune", "validate", HEURISTICS, "--kernels", "rmsnorm_fwd", "--shapes",
         "16384x3072,32768x4096", "--rounds", "3", "--db", "db/quack.sqlite", "--storage", str(storage),
         "--no-progress"],
        capture_output=True, text=True, timeout=900,
    )
    from inductor_tune import heuristics

    heur = heuristics.load(HEURISTICS)
    if not heuristics.device_matches(heur, torch.cuda.get_device_properties(0)):
        # Another GPU model: one line, before any worker starts, and nothing stored.
        assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
            f"inductor-tune: error: {HEURISTICS} is for {heur.gpu.name}; GPU 0 is "
            f"{torch.cuda.get_device_properties(0).name}: validate a file on the GPU model it was distilled for"
        ], proc.stderr
        assert not storage.exists()
        return
    assert proc.returncode in (0, 1), proc.stderr  # 1: a regression, reported as such
    assert "16384x3072" in proc.stdout and "32768x4096" in proc.stdout, proc.stdout
    from inductor_tune.store import Store

    records = Store(f"sqlite:///{storage}", create=False).validations()
    assert sorted((r.rows, r.cols) for r in records) == [(16384, 3072), (32768, 4096)]
    assert all('"inductor_default"' in r.result_json for r in records)
    assert all('"peer_versions"' in r.result_json for r in records)  # which Quack and Liger were compared


def test_mix_order_rule_sets_the_split_and_the_launch_config():
    """The split size (chosen where the fusion is planned) and the kernel's config (chosen at codegen)
    key on the same reductions, so a mix-order rule applies as a whole."""
    from inductor_tune import heuristics
    from inductor_tune.distill import X_UNBOUNDED
    from inductor_tune.space import SlotConfig

    props = torch.cuda.get_device_properties(0)
    gpu = heuristics.GpuSpec(props.name, "test", f"{props.major}.{props.minor}", props.multi_processor_count, "", "")
    cfg = SlotConfig(persistent=True, XBLOCK=2, num_warps=8, RSPLIT_SIZE=32, NUM_STAGES=3)
    rule = heuristics.RuleSpec("mix_order", 2, (2048, 2048), (8192, X_UNBOUNDED), cfg, reductions="sum@backward")
    heur = heuristics.Heuristics(gpu, (rule,))
    configs = _launch_configs("rmsnorm_bwd", "8192x2048", heur)[0]
    forced = [c for c in configs if c.get("RSPLIT_SIZE")]
    assert forced and forced[0]["RSPLIT_SIZE"] == 32 and forced[0]["NUM_STAGES"] == 3, configs
    assert forced[0]["num_warps"] == 8 and forced[0].get("XBLOCK", 2) == 2, configs
    # The forward signature of the same reductions names other kernels: the rule must not apply.
    other = heuristics.Heuristics(gpu, (dataclasses.replace(rule, reductions="sum"),))
    assert not any(c.get("RSPLIT_SIZE") == 32 and c["num_warps"] == 8 for c in
                   _launch_configs("rmsnorm_bwd", "8192x2048", other)[0])



def test_a_split_autotune_entry_lets_inductor_time_splits_and_keeps_the_result_right(caplog):
    """A ``mix_autotune`` entry: Inductor times splits of the fused backward from its own up (what it timed is
    noted with the applied entry), a config rule covering the same kernel comes first, and a config rule whose
    config breaks Inductor's code generation (XBLOCK 1 in a mix-order kernel, seen on an H200) falls back."""
    import logging

    from inductor_tune import evaluate, heuristics, torch_rules
    from inductor_tune.evaluate import CompiledCall, Problem, ProblemState
    from inductor_tune.kernels import TOLERANCES, Shape
    from inductor_tune.space import SlotConfig

    props = torch.cuda.get_device_properties(0)
    gpu = heuristics.GpuSpec(props.name, "test", f"{props.major}.{props.minor}", props.multi_processor_count, "", "")
    entry = heuristics.MixAutotuneSpec((8192, 65536), (1024, 8192), 2, min_split=16, margin=0.05, up_only=True)
    state = ProblemState(Problem("rmsnorm_bwd", Shape(16384, 4096), "bf16"))

    def compiled(heur):
        mark = len(heuristics.applied_rules())
        with heuristics.install(heur) as handle:
            assert handle.active, handle.reason
            call = CompiledCall(state.problem, state.inputs, state.grad_output)
            call.compile()
            result = call.run_eager()
        assert evaluate.reference_error(state.problem, state.inputs, state.grad_output, result) <= TOLERANCES["bf16"]
        return heuristics.applied_rules()[mark:]

    (applied,) = compiled(heuristics.Heuristics(gpu, (), mix_autotune=(entry,)))
    assert "Inductor autotunes the split" in applied and " kept (ms by split: 16:" in applied, applied
    cfg = SlotConfig(persistent=True, XBLOCK=2, num_warps=8, RSPLIT_SIZE=64, NUM_STAGES=1)
    rule = heuristics.RuleSpec("mix_order", 2, (4096, 4096), (16384, 16384), cfg, reductions="sum@backward")
    configs = _launch_configs("rmsnorm_bwd", "16384x4096", heuristics.Heuristics(gpu, (rule,), mix_autotune=(entry,)))[0]
    assert [c["RSPLIT_SIZE"] for c in configs if c.get("RSPLIT_SIZE")] == [64], configs
    broken = dataclasses.replace(rule, config=dataclasses.replace(cfg, XBLOCK=1))
    torch_rules._UNFIT.clear()
    with caplog.at_level(logging.WARNING, logger="inductor_tune"):
        compiled(heuristics.Heuristics(gpu, (broken,)))
    warnings = [r.getMessage() for r in caplog.records if "does not fit kernel" in r.getMessage()]
    assert len(warnings) == 1 and "mix_order sum@backward" in warnings[0], warnings
    torch_rules._UNFIT.clear()


def test_an_entry_that_keeps_inductors_split_compiles_inductors_program():
    """An entry whose margin no other split clears: Inductor times splits while it compiles, keeps its own, and the
    fused backward it governs is the default's, kernel for kernel and config for config (``validate.same_program``;
    held-out set 55's one regression was such a problem, stop 62). Compiled as ``variants.measure_variants``
    compiles them.
    Its shape is its own: after the test above had compiled the same entry at 16384x4096, Inductor reused those
    kernels' modules and this compile built no new autotuners to read (stops 63 and 65). Only the mix-order
    kernels are compared: the forward's looped reduction is Inductor's to time at run time, and its two compiles
    picked R0_BLOCK 2048 and 4096 at 20480x4096 (stop 65)."""
    import json

    from inductor_tune import evaluate, heuristics, validate
    from inductor_tune.evaluate import CompiledCall, Problem, ProblemState
    from inductor_tune.kernels import Shape

    props = torch.cuda.get_device_properties(0)
    gpu = heuristics.GpuSpec(props.name, "test", f"{props.major}.{props.minor}", props.multi_processor_count, "", "")
    entry = heuristics.MixAutotuneSpec((8192, 65536), (1024, 8192), 2, min_split=1, margin=100.0, up_only=True)
    state = ProblemState(Problem("rmsnorm_bwd", Shape(20480, 4096), "bf16"))
    default_choice = json.loads(_launch_configs("rmsnorm_bwd", "20480x4096")[2])
    before, mark = evaluate._autotuner_ids(), len(heuristics.applied_rules())
    with heuristics.install(heuristics.Heuristics(gpu, (), mix_autotune=(entry,))) as handle:
        assert handle.active, handle.reason
        CompiledCall(state.problem, state.inputs, state.grad_output).compile()
    rules_choice = json.loads(evaluate.inductor_choices_made(before))
    (applied,) = heuristics.applied_rules()[mark:]
    timed = [c for c in rules_choice if c["kernel"] == validate.TIMED_WHILE_COMPILING]
    assert "Inductor autotunes the split" in applied and len(timed) >= 2, (applied, rules_choice)
    data = {"default_choice": mix_order_kernels(default_choice), "heuristic_choice": mix_order_kernels(rules_choice)}
    assert validate.same_program(data), (default_choice, rules_choice)


def _entry_applied_at_a_layernorm_backward(entry) -> str:
    """Compile and run ``layernorm_bwd`` 12288x2048 bf16 with ``entry`` alone installed, check the result, and
    return the one applied-rule line the entry left."""
    from inductor_tune import evaluate, heuristics
    from inductor_tune.evaluate import CompiledCall, Problem, ProblemState
    from inductor_tune.kernels import TOLERANCES, Shape

    props = torch.cuda.get_device_properties(0)
    gpu = heuristics.GpuSpec(props.name, "test", f"{props.major}.{props.minor}", props.multi_processor_count, "", "")
    state = ProblemState(Problem("layernorm_bwd", Shape(12288, 2048), "bf16"))
    mark = len(heuristics.applied_rules())
    with heuristics.install(heuristics.Heuristics(gpu, (), mix_autotune=(entry,))) as handle:
        assert handle.active, handle.reason
        call = CompiledCall(state.problem, state.inputs, state.grad_output)
        call.compile()
        result = call.run_eager()
    assert evaluate.reference_error(state.problem, state.inputs, state.grad_output, result) <= TOLERANCES["bf16"]
    (applied,) = heuristics.applied_rules()[mark:]
    return applied


def test_an_end_to_end_entry_times_each_split_with_the_reduction_of_its_partial_sums(monkeypatch):
    """An ``end_to_end`` entry at a LayerNorm backward (two weight gradients, so two workspaces of partial sums):
    each split Inductor times carries the time of reducing ceil(rows / split) partial sums per gradient, the
    compile keeps a split that works and the result is right. Its shape is its own (see the test above)."""
    from inductor_tune import heuristics
    from inductor_tune.runtime import mix_autotune

    entry = heuristics.MixAutotuneSpec((8192, 65536), (1024, 8192), 2, margin=0.02, end_to_end=True)
    tails, original = [], mix_autotune.Tail.ms

    def noted(tail, split, cache):
        tails.append((tail, split))
        return original(tail, split, cache)

    monkeypatch.setattr(mix_autotune.Tail, "ms", noted)
    applied = _entry_applied_at_a_layernorm_backward(entry)
    assert "timed end to end" in applied and " kept (ms by split: " in applied, applied
    assert len({split for _, split in tails}) >= 2, tails
    tail = tails[0][0]
    assert (tail.rows, tail.rnumel, tail.partial_sums) == (12288, 2048, 2) and tail.device.startswith("cuda"), tail
    assert original(tail, 8, {}) > original(tail, 128, {}) > 0  # more partial sums take longer to reduce


def test_a_sweeping_entry_times_every_power_of_two_split_and_keeps_the_result_right():
    """A ``sweep`` entry at the LayerNorm backward of the test above: every power-of-two split from Inductor's floor
    (8) to SWEEP_MAX is timed end to end in the real compile, the split kept is one of them, and the result is
    right."""
    import re

    from inductor_tune import heuristics
    from inductor_tune.runtime import mix_autotune

    entry = heuristics.MixAutotuneSpec((8192, 65536), (1024, 8192), 2, margin=0.02, end_to_end=True, sweep=True)
    applied = _entry_applied_at_a_layernorm_backward(entry)
    assert "every power-of-two split timed" in applied, applied
    kept = int(re.search(r"split (\d+) kept", applied).group(1))
    timed = {int(split) for split in re.findall(r"(\d+):", applied.split("ms by split: ")[1])}
    sweep = {1 << k for k in range(3, mix_autotune.SWEEP_MAX.bit_length())}
    assert sweep <= timed and kept in timed, applied


def mix_order_kernels(choice: list[dict]) -> list[dict]:
    return [c for c in choice if "RSPLIT_SIZE" in (c.get("config") or {})]


def test_a_rule_that_does_not_fit_falls_back_to_inductors_configs_and_warns(caplog):
    """A mix-order rule whose pipelined config needs far more shared memory than the GPU has (the kind of
    failure a Llama decoder's fused RMSNorm backward hit): forced directly, the compile fails; installed
    as a rule, the compile succeeds on Inductor's own configs, the result is right, and one WARNING names
    the rule and the kernel."""
    import logging

    from inductor_tune import evaluate, heuristics, torch_rules
    from inductor_tune.evaluate import CompiledCall, Problem, ProblemState
    from inductor_tune.kernels import CATALOG, TOLERANCES, Shape
    from inductor_tune.space import DEFAULT_FLAGS, INDUCTOR_DEFAULT, SlotConfig, TrialConfig

    props = torch.cuda.get_device_properties(0)
    gpu = heuristics.GpuSpec(props.name, "test", f"{props.major}.{props.minor}", props.multi_processor_count, "", "")
    oversized = SlotConfig(persistent=True, XBLOCK=16, num_warps=8, RSPLIT_SIZE=16, NUM_STAGES=3)
    state = ProblemState(Problem("rmsnorm_bwd", Shape(32768, 8192), "bf16"))
    _, plan = evaluate.compile_plan(state, INDUCTOR_DEFAULT)
    (mix,) = [s for s in plan.slots if s.mix_order]
    with pytest.raises(Exception):  # the config really does not fit: no fallback when forced by a trial
        call, forced = evaluate.compile_plan(state, TrialConfig(DEFAULT_FLAGS, ((mix.key, oversized),)))
        call.run_eager()
        torch.cuda.synchronize()
    rule = heuristics.RuleSpec("mix_order", 2, (8192, 8192), (32768, 32768), oversized, reductions="sum@backward",
                               envelopes=(CATALOG["rmsnorm_bwd"].envelope,))
    torch_rules._UNFIT.clear()
    with caplog.at_level(logging.WARNING, logger="inductor_tune"), heuristics.install(
            heuristics.Heuristics(gpu, (rule,))) as handle:
        assert handle.active, handle.reason
        call = CompiledCall(state.problem, state.inputs, state.grad_output)
        call.compile()
        result = call.run_eager()
    error = evaluate.reference_error(state.problem, state.inputs, state.grad_output, result)
    assert error <= TOLERANCES["bf16"], error
    warnings = [r.getMessage() for r in caplog.records if "does not fit kernel" in r.getMessage()]
    assert len(warnings) == 1 and "mix_order sum@backward" in warnings[0] and "triton_" in warnings[0], warnings


def test_the_gate_on_five_random_problems_scores_what_its_committed_draw_scores(tmp_path, shipped_heuristics):
    """`validate --random 5` measures five unseen problems; `--draw-out` then `--draw` scores the same five, and that
    command again reads them back."""
    from inductor_tune.store import Store

    path = shipped_heuristics
    # Small problems keep the test short; db/quack.sqlite is the studied set the draw avoids.
    draw_args = ["--random", "5", "--seed", "11", "--rows", "16:2048", "--cols", "256:4096", "--db", "db/quack.sqlite"]

    def validate(*args):
        return subprocess.run([sys.executable, "-m", "inductor_tune", "validate", path, *args, "--no-progress"],
                              capture_output=True, text=True, timeout=1200)

    def problems(storage):
        return sorted((r.kernel, r.rows, r.cols) for r in Store(f"sqlite:///{storage}", create=False).validations())

    drawn = validate(*draw_args, "--rounds", "3", "--storage", str(tmp_path / "drawn.sqlite"))
    assert drawn.returncode in (0, 1), drawn.stderr  # 1: a regression or a failure, reported as such
    assert len(problems(tmp_path / "drawn.sqlite")) == 5

    wrote = validate(*draw_args, "--draw-out", str(tmp_path / "draw.json"))
    assert wrote.returncode == 0 and (tmp_path / "draw.json").exists(), wrote.stderr
    committed = validate("--draw", str(tmp_path / "draw.json"), "--db", "db/quack.sqlite", "--rounds", "3",
                         "--storage", str(tmp_path / "committed.sqlite"))
    assert committed.returncode in (0, 1), committed.stderr
    assert problems(tmp_path / "committed.sqlite") == problems(tmp_path / "drawn.sqlite")
    # The same command again reads its five records back and measures nothing (a stopped gate run resumes).
    again = validate("--draw", str(tmp_path / "draw.json"), "--db", "db/quack.sqlite", "--rounds", "3",
                     "--storage", str(tmp_path / "committed.sqlite"))
    assert again.returncode == committed.returncode and "resumed: 5 of the 5 problems" in again.stdout, again.stdout
    assert problems(tmp_path / "committed.sqlite") == problems(tmp_path / "drawn.sqlite")


def test_an_unsplit_rule_keeps_a_split_reduction_in_one_kernel_and_nothing_else(tmp_path):
    """Inductor splits RMSNorm's forward at 100x16000 (two reduction kernels); the rule makes it one, with the
    same numbers, and leaves a reduction outside its spans split."""
    import inductor_tune
    from inductor_tune import heuristics, unsplit
    from inductor_tune.runtime.rules import UnsplitSpec

    heur = heuristics.load(HEURISTICS)
    name = torch.cuda.get_device_name()
    if name != heur.gpu.name:
        pytest.skip(f"{HEURISTICS} is for {heur.gpu.name}, this is {name}")
    rule = dataclasses.replace(heur, rules=(), unsplit=(UnsplitSpec((64, 127), (8193, 16384)),))
    assert unsplit.region(rule)[0][1] == 2 * heur.gpu.sm_count - 1
    x = torch.randn(100, 16000, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(16000, device="cuda", dtype=torch.bfloat16)

    def norm(x, w):
        return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps=1e-6)

    torch._dynamo.reset()
    split = reduction_kernels(torch.compile(norm), x, w)
    with inductor_tune.install(rule) as handle:
        assert handle.active, handle.reason
        torch._dynamo.reset()
        mark = len(heuristics.applied_rules())
        kept = torch.compile(norm)
        assert reduction_kernels(kept, x, w) == 1 < split
        assert [line for line in heuristics.applied_rules()[mark:] if line.startswith("unsplit")]
        torch.testing.assert_close(kept(x, w), norm(x, w), atol=2e-2, rtol=2e-2)
        torch._dynamo.reset()
        outside = torch.randn(20, 16000, device="cuda", dtype=torch.bfloat16)  # 20 rows: outside the rule
        assert reduction_kernels(torch.compile(norm), outside, w) == split
    torch._dynamo.reset()


def test_an_unsplit_config_launches_the_listed_forward_and_leaves_the_backward_to_inductor():
    """With the shipped file's unsplit config rules: RMSNorm's forward at 100x16000 is one kernel launched with the
    rule's config (its envelope is listed), its backward (not listed: the persistent XBLOCK=1 config does not
    compile there on torch 2.11) compiles and runs with Inductor's configs, and the numbers match eager."""
    import inductor_tune
    from inductor_tune import heuristics
    from torch._inductor.utils import run_and_get_code

    heur = heuristics.load(HEURISTICS)
    name = torch.cuda.get_device_name()
    if name != heur.gpu.name:
        pytest.skip(f"{HEURISTICS} is for {heur.gpu.name}, this is {name}")
    spec = next((u for u in heur.unsplit if u.config is not None and u.rows[0] <= 100 <= u.rows[1]
                 and u.cols[0] <= 16000 <= u.cols[1]), None)
    if spec is None:
        pytest.skip(f"{HEURISTICS} has no unsplit config rule at 100x16000")
    x = torch.randn(100, 16000, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(16000, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn(100, 16000, device="cuda", dtype=torch.bfloat16)

    def norm(x, w):
        return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps=1e-6)

    def step(fn):
        x.grad = w.grad = None
        out = fn(x, w)
        out.backward(dy)
        return out.detach(), x.grad.detach(), w.grad.detach()

    expected = step(norm)
    forced = f"config={spec.config.fixed_config()!r}"
    with inductor_tune.install(HEURISTICS) as handle:
        assert handle.active, handle.reason
        torch._dynamo.reset()
        mark = len(heuristics.applied_rules())
        # Inference: the forward kernel of rmsnorm_fwd's envelope, which the rule lists.
        with torch.no_grad():
            out, codes = run_and_get_code(torch.compile(norm), x, w)
        assert any(forced in code for code in codes), "the forward's one kernel did not get the rule's config"
        torch.testing.assert_close(out, expected[0], atol=5e-2, rtol=5e-2)
        # Training: the forward saves rstd (another envelope) and the backward is not listed either; both
        # compile with Inductor's configs, whatever the split.
        torch._dynamo.reset()
        got = step(torch.compile(norm))
        applied = heuristics.applied_rules()[mark:]
    torch._dynamo.reset()
    assert [line for line in applied if line.startswith("unsplit")]
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, atol=5e-2, rtol=5e-2)
