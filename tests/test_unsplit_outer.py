"""Unsplit rules of column reductions (stop 69): a norm backward's weight gradient, a sum over the rows that Inductor
splits into a partial-sum kernel and a combine below its mix-order threshold. The best founds of held-out set 60
kept it whole at few rows (prenorm_rmsnorm_bwd 151x3553: 363 GB/s unsplit, 237 split, 274 Inductor's default).
What a file may say, where the hook keeps a column reduction whole, through Inductor's own split decision, what
the patch writes, and how the probe and the fit treat such rules (CPU; the GPU A/B is for the next device call)."""

import dataclasses
import importlib.util
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
from inductor_tune.runtime.launch import SlotConfig
from inductor_tune.runtime.rules import UnsplitSpec
from inductor_tune.unsplit import ABPoint

H200_FILE = os.path.join(fx.ROOT, "heuristics", "h200.yaml")
CUDA = types.SimpleNamespace(type="cuda", index=0)
COLUMN = UnsplitSpec((100, 400), (1000, 4000), outer=True)
INNER = UnsplitSpec((64, 124), (8717, 16192))


@pytest.fixture(scope="module")
def base():
    return dataclasses.replace(heuristics.load(H200_FILE), unsplit=(), multi_kernel=())


def test_a_column_rule_round_trips_and_an_inner_one_keeps_its_text(tmp_path, base):
    heur = dataclasses.replace(base, unsplit=(INNER, COLUMN))
    back = heuristics.load(fx.write_heuristics(tmp_path, heur))
    assert back.unsplit == heur.unsplit and back.digest() == heur.digest()
    assert back.table().unsplit == (torch_rules.UnsplitRule((64, 124), (8717, 16192)),
                                    torch_rules.UnsplitRule((100, 400), (1000, 4000), outer=True))
    text = heuristics.to_yaml(heur)
    assert text.count("reduction: outer") == 1  # an inner rule's entry, and so its digest, are as before
    assert "unsplit column reductions of rows 100..400 x N 1000..4000" == COLUMN.describe()


@pytest.mark.parametrize("entry, why", [
    ({"rows": [32, 400], "cols": [1000, 4000], "reduction": "outer"}, "does not split"),  # 32 rows: never split
    ({"rows": [100, 400], "cols": [1000, 8448], "reduction": "outer"}, "does not split"),  # 64 x 132 outputs
    ({"rows": [100, 400], "cols": [1000, 4000], "reduction": "sideways"}, "'inner' or 'outer'"),
    ({"rows": [100, 400], "cols": [1000, 4000], "reduction": "outer", "element_size": 2,
      "config": {"persistent": True, "XBLOCK": 1, "num_warps": 8}}, "takes Inductor's config"),
    ({"rows": [100, 400], "cols": [1000, 4000]}, "does not split"),  # an inner rule of these sizes
])
def test_a_bad_column_entry_is_one_line(tmp_path, base, entry, why):
    path = fx.write_heuristics(tmp_path, base, lambda doc: doc.update(unsplit=[entry]))
    with pytest.raises(HeuristicsError, match=why):
        heuristics.load(path)


def test_rules_of_the_two_kinds_may_share_sizes_and_two_column_rules_may_not(tmp_path, base):
    inner = {"rows": [64, 124], "cols": [8200, 16192]}
    outer = {"rows": [64, 124], "cols": [100, 8400], "reduction": "outer"}  # the same sizes at N 8200..8400
    assert len(heuristics.load(fx.write_heuristics(tmp_path, base, lambda d: d.update(unsplit=[inner, outer])))
               .unsplit) == 2
    other = dict(outer, rows=[100, 200], cols=[500, 600])
    with pytest.raises(HeuristicsError, match=r"overlaps unsplit\[0\]"):
        heuristics.load(fx.write_heuristics(tmp_path, base, lambda d: d.update(unsplit=[outer, other])))


# -- the hook ----------------------------------------------------------------------------------------

@pytest.fixture
def on_the_rules_gpu(monkeypatch):
    from torch._inductor.runtime import hints

    monkeypatch.setattr(hints.DeviceProperties, "create", staticmethod(lambda device: device))
    monkeypatch.setattr(torch_rules, "device_matches", lambda props, table=None: True)
    monkeypatch.setattr(torch_rules, "device_name_matches", lambda index, table=None: True)
    yield
    registry.set_installed(None, None)


def test_the_hook_keeps_a_column_reduction_whole_only_inside_a_column_rule(base, on_the_rules_gpu):
    registry.set_installed(dataclasses.replace(base, unsplit=(COLUMN, INNER)).table(), "test")
    # Inductor asks with the reduction's length (the rows) and its outputs (N).
    assert hook.apply_unsplit(CUDA, 151, 3553, False, 2) == 1
    assert hook.apply_unsplit(CUDA, 3553, 151, True, 2) == 2  # an inner reduction of these sizes
    assert hook.apply_unsplit(CUDA, 500, 3553, False, 4) == 4  # rows beyond the measured span
    assert hook.apply_unsplit(CUDA, 151, 5000, False, 2) == 2  # N beyond it
    assert hook.apply_unsplit(CUDA, 12000, 100, True, 4) == 1  # the inner rule still answers for its own
    assert hook.apply_unsplit(CUDA, 100, 12000, False, 4) == 4  # and not for a column reduction of its sizes
    registry.set_installed(dataclasses.replace(base, unsplit=(INNER,)).table(), "test")
    assert hook.apply_unsplit(CUDA, 151, 3553, False, 2) == 2


def _kernels_of_a_column_sum(heur, monkeypatch) -> int:
    monkeypatch.setattr(installation, "_current_device_props",
                        lambda: types.SimpleNamespace(name="NVIDIA H200", major=9, minor=0, multi_processor_count=132))
    with installation.install(heur):
        (source,) = cpu_codegen.generate_sources(lambda x: (x.float() * 2).sum(0), [((151, 3553), torch.bfloat16)])
    return source.count("@triton.jit")


def test_this_torchs_split_decision_keeps_a_column_sum_whole_under_a_column_rule(hooked, base, monkeypatch):
    """Through Inductor's own num_splits and reduction_split_factor on the torch CI runs (2.13, 2.14): a weight
    gradient's column sum of 151 rows and N 3553 is a partial-sum kernel and a combine, one kernel under a column
    rule, and two again under an inner rule of the same spans."""
    def with_rule(outer):
        return dataclasses.replace(base, rules=(), unsplit=(UnsplitSpec((100, 400), (1000, 4000), outer=outer),))

    assert _kernels_of_a_column_sum(dataclasses.replace(base, rules=(), unsplit=()), monkeypatch) == 2
    assert _kernels_of_a_column_sum(with_rule(True), monkeypatch) == 1
    assert _kernels_of_a_column_sum(with_rule(False), monkeypatch) == 2


# -- the patch -------------------------------------------------------------------------------------

def test_the_patch_writes_a_column_rule_and_hooks_the_outer_split(base):
    module = patch.rules_module(dataclasses.replace(base, unsplit=(INNER, COLUMN)), "2.13.0")
    assert "        UnsplitRule(rows=(100, 400), cols=(1000, 4000), outer=True)," in module
    assert "        UnsplitRule(rows=(64, 124), cols=(8717, 16192))," in module
    namespace: dict = {}
    exec(compile(module, "distilled_reduction_rules.py", "exec"), namespace)  # noqa: S102 (our own template)
    assert namespace["TABLE"].unsplit[1].outer is True
    hooks = [h for h in patch.HOOKS if "reduction_split_factor" in h.what]
    assert len(hooks) == 2 and any("outer" in h.what for h in hooks)
    assert all("unsplit_decision(device, reduction_numel_hint, numel_hint, inner_reduction)" in code
               for h in hooks for _, code in h.choices())
    bad = dataclasses.replace(base, unsplit=(dataclasses.replace(COLUMN, outer="True) or (1"),))
    with pytest.raises(patch.PatchError, match="unsplit kind"):
        patch.rules_module(bad, "2.13.0")


def test_the_patched_outer_split_follows_a_column_rule(base, tmp_path):
    """The patch applied to a pristine copy of this torch's choices.py: its reduction_split_factor keeps a column
    reduction inside the rule whole on the rules' GPU, and splits it as Inductor does elsewhere."""
    from patch_fixtures import CHOICES
    from patch_fixtures import pristine as _pristine
    from torch._inductor.choices import InductorChoices

    root = _pristine(tmp_path)
    text, _ = patch.generate(dataclasses.replace(base, unsplit=(COLUMN,)), root)
    (tmp_path / "outer.patch").write_text(text)
    subprocess.run(["git", "apply", str(tmp_path / "outer.patch")], cwd=root, check=True)
    names = {"torch._inductor.runtime.distilled_reduction_rules": patch.RULES_PATH,
             "torch._inductor._patched_choices_outer": CHOICES}
    loaded = {}
    try:
        for name, path in names.items():
            spec = importlib.util.spec_from_file_location(name, os.path.join(root, path))
            loaded[name] = sys.modules[name] = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(loaded[name])
        choices = loaded["torch._inductor._patched_choices_outer"].InductorChoices()
        device = torch.device("cuda", 0)
        with cpu_codegen.fake_cuda(9, 132):
            assert InductorChoices().reduction_split_factor(device, 151, 3553, False) == 2
            assert choices.reduction_split_factor(device, 151, 3553, False) == 1
            assert choices.reduction_split_factor(device, 500, 3553, False) == \
                InductorChoices().reduction_split_factor(device, 500, 3553, False) > 1
            assert choices.reduction_split_factor(device, 3553, 151, True) == \
                InductorChoices().reduction_split_factor(device, 3553, 151, True)
        with cpu_codegen.fake_cuda(9, 114):  # another GPU
            assert choices.reduction_split_factor(device, 151, 3553, False) == 2
    finally:
        for name in names:
            sys.modules.pop(name, None)


# -- the probe and the fit ---------------------------------------------------------------------------

def test_the_column_probe_holds_its_one_rule_and_no_launch_rule(base):
    probe = unsplit.probe(dataclasses.replace(base, unsplit=(INNER,)), outer=True)
    (spec,) = probe.unsplit
    assert spec.outer and spec.rows == (33, unsplit.OUTER_ROWS_MAX) and spec.cols == (128, 64 * 132 - 1)
    assert probe.rules == () and probe.mix_autotune == () and probe.multi_kernel == ()
    with pytest.raises(ValueError, match="as Inductor picks"):
        unsplit.probe(base, SlotConfig(True, 1, 8), outer=True)
    cells = unsplit.cells(probe, outer=True)
    assert cells[0] == ((33, 64), (128, 256)) and cells[-1] == ((2049, 4095), (8193, 8447)) and len(cells) == 49


def test_the_column_fit_keeps_the_inner_rules_and_the_inner_fit_keeps_the_column_rules(base):
    points = [ABPoint("rmsnorm_bwd", r, c, x, 0.03) for r, c, x in ((140, 1100, 1.3), (180, 1500, 1.2),
                                                                   (250, 1900, 1.25), (300, 3000, 0.9))]
    fitted, lines = unsplit.fit(dataclasses.replace(base, unsplit=(INNER,)), points, [], ["outer.sqlite"],
                                outer=True)
    assert fitted.unsplit[0] == INNER
    (column,) = fitted.unsplit[1:]
    assert column.outer and column.rows == (140, 250) and column.cols == (1100, 1900)
    assert any(line.startswith("rows 257..512 N 2049..4096: Inductor's config: Inductor's split kept: 1 problem")
               for line in lines)
    refit, _ = unsplit.fit(fitted, [], [], ["inner.sqlite"])
    assert refit.unsplit == (column,)


def test_column_points_are_the_touched_problems_below_the_mix_order_rows():
    from inductor_tune.validate import ValidationRow, Variant

    def row(shape, applied):
        variants = (Variant("inductor_default", 1.0, 1, 1, 1.0, 1.0, 1.0),
                    Variant("heuristics", 0.8, 1, 1, 1.25, 1.2, 1.3))
        return ValidationRow("rmsnorm_bwd", shape, "bf16", variants, 0.004, False, applied, ())

    rows = [row("151x3553", True), row("151x3553", False), row("5000x3553", True), row("20x3553", True)]
    (p,) = unsplit.points_from_rows(rows, outer=True)
    assert (p.rows, p.cols, p.ratio) == (151, 3553, 1.25)
    assert unsplit.points_from_rows(rows) == []  # N 3553: no inner reduction Inductor splits


def test_prune_drops_a_column_rule_whose_cell_lost_and_keeps_the_rest_unchanged(base):
    lost_cell = UnsplitSpec((150, 230), (140, 230), outer=True)  # cell rows 129..256 x N 128..256
    kept_cell = UnsplitSpec((140, 250), (540, 1000), outer=True)  # cell rows 129..256 x N 513..1024
    heur = dataclasses.replace(base, unsplit=(INNER, lost_cell, kept_cell))
    points = [ABPoint("llama_rmsnorm_bwd", 240, 215, 0.956, 0.03),  # outside the rule's span, inside its cell
              ABPoint("rmsnorm_bwd", 200, 700, 0.99, 0.03),  # within its noise band: no loss
              ABPoint("rmsnorm_bwd", 3000, 700, 0.5, 0.03)]  # another cell, which no rule holds
    pruned, lines = unsplit.prune(heur, points, ["outer3.sqlite"], outer=True)
    assert pruned.unsplit == (INNER, kept_cell)
    assert lines[0].endswith("dropped: 1 of 1 problem(s) of its cell lost beyond noise (worst llama_rmsnorm_bwd "
                             "240x215 0.956)") and "kept: 1 problem(s)" in lines[1]
    assert pruned.provenance["unsplit_evidence"][-1] == "outer3.sqlite"
    # A prune of inner rules leaves the column rules as they are.
    assert unsplit.prune(heur, points, [], outer=False)[0].unsplit == heur.unsplit
