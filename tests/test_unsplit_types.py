"""Unsplit rules keyed on the reduction type (stop 60): sizes alone cannot tell a softmax forward from a backward of
the same rows and N, and the one kernel won at the first and lost at the second. What a file may say, how the
hook reads the type Inductor decides for, how the fit keeps the other rules, what the patch writes (CPU; the GPU A/B
is db/unsplit-softmax-*.sqlite)."""

import dataclasses
import json
import os
import subprocess
import sys
import types

import distill_fixtures as fx
import pytest
import torch

from inductor_tune import cpu_codegen, heuristics, patch, unsplit
from inductor_tune.heuristics import HeuristicsError
from inductor_tune.runtime import hook, installation, registry, torch_rules
from inductor_tune.runtime.rules import UnsplitSpec
from inductor_tune.unsplit import ABPoint

H200_FILE = os.path.join(fx.ROOT, "heuristics", "h200.yaml")
SOFTMAX = ("online_softmax_reduce",)
CUDA = types.SimpleNamespace(type="cuda", index=0)


@pytest.fixture(scope="module")
def base():
    return dataclasses.replace(heuristics.load(H200_FILE), unsplit=(), multi_kernel=())


def test_a_typed_rule_round_trips_and_an_untyped_one_keeps_its_text(tmp_path, base):
    typed = dataclasses.replace(base, unsplit=(UnsplitSpec((2, 13), (8574, 11740), reduction_types=SOFTMAX),))
    back = heuristics.load(fx.write_heuristics(tmp_path, typed))
    assert back.unsplit == typed.unsplit and back.digest() == typed.digest()
    assert back.table().unsplit == (torch_rules.UnsplitRule((2, 13), (8574, 11740), SOFTMAX),)
    untyped = dataclasses.replace(base, unsplit=(UnsplitSpec((2, 13), (8574, 11740)),))
    assert "reduction_types" not in heuristics.to_yaml(untyped) and untyped.digest() != typed.digest()


@pytest.mark.parametrize("types_", [[], "online_softmax_reduce", ["online softmax"], [3], ["sum+max"]])
def test_a_bad_reduction_type_list_is_one_line(tmp_path, base, types_):
    entry = {"rows": [2, 13], "cols": [8574, 11740], "reduction_types": types_}
    with pytest.raises(HeuristicsError, match="reduction_types must be a non-empty list of reduction type names"):
        heuristics.load(fx.write_heuristics(tmp_path, base, lambda doc: doc.update(unsplit=[entry])))


# -- the hook ----------------------------------------------------------------------------------------

@pytest.fixture
def typed_installed(base, monkeypatch):
    from torch._inductor.runtime import hints

    monkeypatch.setattr(hints.DeviceProperties, "create", staticmethod(lambda device: device))
    monkeypatch.setattr(torch_rules, "device_matches", lambda props, table=None: True)
    monkeypatch.setattr(torch_rules, "device_name_matches", lambda index, table=None: True)
    heur = dataclasses.replace(base, unsplit=(UnsplitSpec((2, 13), (8574, 11740), reduction_types=SOFTMAX),
                                              UnsplitSpec((64, 124), (8717, 16192))))
    registry.set_installed(heur.table(), "test")
    yield
    registry.set_installed(None, None)


def _asked_by_inductor(reduction_type, decide):
    """``decide()`` called as ir.Reduction.num_splits calls reduction_split_factor: from a frame of that name in
    Inductor's sources that holds the reduction type."""
    source = "def num_splits(reduction_type, decide):\n    return decide()\n"
    namespace: dict = {}
    exec(compile(source, "/site-packages/torch/_inductor/ir.py", "exec"), namespace)  # noqa: S102 (a fixed text)
    return namespace["num_splits"](reduction_type, decide)


def test_a_typed_rule_keeps_only_its_reduction_type_whole(typed_installed):
    def decide(rows=5, cols=9000):
        return lambda: hook.apply_unsplit(CUDA, cols, rows, True, 4)

    assert _asked_by_inductor("online_softmax_reduce", decide()) == 1
    assert _asked_by_inductor("sum", decide()) == 4  # a backward's sum of the same sizes: Inductor's split
    assert _asked_by_inductor("online_softmax_reduce", decide(cols=12000)) == 4  # past the measured N
    assert decide()() == 4  # no frame tells the type (another torch): the typed rule does not apply
    assert _asked_by_inductor("sum", decide(rows=100, cols=12000)) == 1  # the untyped rule: sizes alone


def _kernels_of_a_row_sum(heur, monkeypatch):
    monkeypatch.setattr(installation, "_current_device_props",
                        lambda: types.SimpleNamespace(name="NVIDIA H200", major=9, minor=0, multi_processor_count=132))
    with installation.install(heur):
        (source,) = cpu_codegen.generate_sources(lambda x: (x.float() * 2).sum(-1), [((100, 20000), torch.bfloat16)])
    return source.count("@triton.jit")


def test_this_torchs_split_decision_tells_the_hook_its_reduction_type(hooked, base, monkeypatch):
    """On the torch CI runs (2.13, 2.14), through Inductor's own num_splits: a rule of the sum's type keeps the
    row sum whole, one of another type leaves Inductor's split (two kernels)."""
    def rule(types_):
        return dataclasses.replace(base, rules=(), unsplit=(UnsplitSpec((64, 124), (8717, 32768),
                                                                       reduction_types=types_),))

    assert _kernels_of_a_row_sum(rule(("sum",)), monkeypatch) == 1
    assert _kernels_of_a_row_sum(rule(("max",)), monkeypatch) == 2


# -- the fit -----------------------------------------------------------------------------------------

def _softmax(rows, cols, ratio):
    return ABPoint("softmax_fwd", rows, cols, ratio, 0.03)


def test_the_typed_fit_adds_its_rules_and_keeps_the_others(base):
    untyped = UnsplitSpec((64, 124), (8717, 16192))
    old_typed = UnsplitSpec((20, 28), (20000, 30000), reduction_types=SOFTMAX)
    heur = dataclasses.replace(base, unsplit=(untyped, old_typed), provenance=dict(base.provenance,
                                                                                  unsplit_evidence=["old.sqlite"]))
    points = [_softmax(r, c, 1.5) for r, c in ((2, 9000), (7, 10000), (13, 11000), (70, 9000), (90, 12000),
                                                (110, 15000))]
    fitted, lines = unsplit.fit(heur, points, [], ["softmax.sqlite"], "online_softmax_reduce")
    assert fitted.unsplit[0] == untyped and old_typed not in fitted.unsplit
    (new,) = fitted.unsplit[1:]
    assert (new.rows, new.cols, new.reduction_types) == ((2, 13), (9000, 11000), SOFTMAX)
    assert any("overlaps unsplit inner reductions rows 64..124" in line for line in lines)
    assert fitted.provenance["unsplit_evidence"] == ["old.sqlite", "softmax.sqlite"]
    untyped_fit, _ = unsplit.fit(heur, points, [], ["softmax.sqlite"])  # without a type: every rule replaced
    assert all(not u.reduction_types for u in untyped_fit.unsplit) and untyped not in untyped_fit.unsplit


def test_the_patch_writes_the_types_and_refuses_text_that_is_no_type(base):
    heur = dataclasses.replace(base, unsplit=(UnsplitSpec((2, 13), (8574, 11740), reduction_types=SOFTMAX),))
    module = patch.rules_module(heur, "2.13.0")
    assert "UnsplitRule(rows=(2, 13), cols=(8574, 11740), reduction_types=('online_softmax_reduce',))," in module
    namespace: dict = {}
    exec(compile(module, "distilled_reduction_rules.py", "exec"), namespace)  # noqa: S102 (our own template)
    assert repr(namespace["TABLE"].unsplit) == repr(heur.table().unsplit)
    bad = dataclasses.replace(heur, unsplit=(UnsplitSpec((2, 13), (8574, 11740), reduction_types=("sum',)#",)),))
    with pytest.raises(patch.PatchError, match="not reduction type names"):
        patch.rules_module(bad, "2.13.0")


def test_a_stratified_draw_fills_every_cell_of_the_probe_and_no_held_out_problem(tmp_path):
    out = tmp_path / "strat.json"
    proc = subprocess.run([sys.executable, "experiments/unsplit_fit.py", "stratify",
                           "experiments/unsplit/probe-softmax-persistent16.yaml", "--draw",
                           "experiments/unsplit/train-softmax-draw.json", "--per-cell", "2", "--out", str(out)],
                          capture_output=True, text=True, cwd=fx.ROOT)
    assert proc.returncode == 0, proc.stderr
    draw = json.loads(out.read_text())
    probe = heuristics.load(os.path.join(fx.ROOT, "experiments", "unsplit", "probe-softmax-persistent16.yaml"))
    inside = [c for c in unsplit.cells(probe) if c[1][0] <= probe.unsplit[0].cols[1]]
    assert len(draw["problems"]) == 2 * len(inside) == draw["n"]
    for rows, cols in inside:
        assert sum(rows[0] <= p[1] <= rows[1] and cols[0] <= p[2] <= cols[1] for p in draw["problems"]) == 2
    held = {tuple(p) for f in os.listdir(os.path.join(fx.ROOT, "experiments", "heldout")) if f.endswith(".json")
            for p in json.load(open(os.path.join(fx.ROOT, "experiments", "heldout", f)))["problems"]}
    assert not held & {tuple(p) for p in draw["problems"]}


def test_a_stratified_draw_of_one_cell_keeps_to_it_and_refuses_a_cell_the_probe_lacks(tmp_path):
    out, probe = tmp_path / "cell.json", "experiments/unsplit/probe-h100.yaml"
    args = [sys.executable, "experiments/unsplit_fit.py", "stratify", probe, "--draw",
            "experiments/unsplit/train-draw.json", "--seed", "4244", "--per-cell", "16", "--out", str(out)]
    proc = subprocess.run(args + ["--cell", "64:127,8193:16384"], capture_output=True, text=True, cwd=fx.ROOT)
    assert proc.returncode == 0, proc.stderr
    draw = json.loads(out.read_text())
    assert (draw["seed"], draw["n"], draw["rows"], draw["cols"]) == (4244, 16, [64, 127], [8193, 16384])
    assert all(64 <= p[1] <= 127 and 8193 <= p[2] <= 16384 for p in draw["problems"])
    committed = json.load(open(os.path.join(fx.ROOT, "experiments", "unsplit", "h100-cell-train3-draw.json")))
    assert draw["problems"] == committed["problems"]  # the committed draw is this command's
    for cell in ("64:120,8193:16384", "64:127"):
        bad = subprocess.run(args[:-1] + [str(tmp_path / "bad.json"), "--cell", cell], capture_output=True, text=True,
                             cwd=fx.ROOT)
        assert bad.returncode != 0 and "unsplit_fit: error: --cell" in bad.stderr
        assert not (tmp_path / "bad.json").exists()
