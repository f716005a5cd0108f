"""Unsplit rules: what a file may say, where the hook keeps a split reduction in one kernel, how cells are
fitted from the probe's A/B, and what the patch writes (CPU; the real compile is tests/test_gpu_heuristics.py)."""

import dataclasses
import os
import subprocess
import sys
import types

import distill_fixtures as fx
import pytest

from inductor_tune import heuristics, patch, unsplit
from inductor_tune.heuristics import HeuristicsError
from inductor_tune.runtime import hook, registry, torch_rules
from inductor_tune.runtime.launch import SlotConfig
from inductor_tune.runtime.rules import UnsplitSpec
from inductor_tune.unsplit import ABPoint

H200_FILE = os.path.join(fx.ROOT, "heuristics", "h200.yaml")
SETTLE = os.path.join(fx.ROOT, "experiments", "candidates", "h200-settle.yaml")
S74 = os.path.join(fx.ROOT, "experiments", "candidates", "h200-s74.yaml")
S78 = os.path.join(fx.ROOT, "experiments", "candidates", "h200-s78.yaml")


@pytest.fixture(scope="module")
def base():
    return dataclasses.replace(heuristics.load(H200_FILE), unsplit=())


def test_a_file_without_unsplit_rules_keeps_its_digest_and_one_with_them_round_trips(tmp_path, base):
    assert heuristics.load(SETTLE).digest() == "0c06dfb3812f0277"  # shipped at stop 31, before unsplit rules
    with_rule = dataclasses.replace(base, unsplit=(UnsplitSpec((64, 124), (8717, 16192)),))
    back = heuristics.load(fx.write_heuristics(tmp_path, with_rule))
    assert back.unsplit == with_rule.unsplit and back.digest() == with_rule.digest() != base.digest()
    assert back.table().unsplit == (torch_rules.UnsplitRule((64, 124), (8717, 16192)),)


@pytest.mark.parametrize("entry, why", [
    ({"rows": [64, 264], "cols": [8717, 16192]}, "does not split"),  # 264 rows = 2 x 132 SMs: never split
    ({"rows": [64, 124], "cols": [4096, 16192]}, "does not split"),  # N 8192 or less: never split
    ({"rows": [64, 124], "cols": [16192, 8717]}, "low <= high"),
    ({"rows": [64, 124], "cols": [8717, 16192], "split": 2}, "mapping of rows, cols, evidence"),
    ({"rows": "64..124", "cols": [8717, 16192]}, "must be list"),
])
def test_a_bad_unsplit_entry_is_one_line(tmp_path, base, entry, why):
    path = fx.write_heuristics(tmp_path, base, lambda doc: doc.update(unsplit=[entry]))
    with pytest.raises(HeuristicsError, match=why):
        heuristics.load(path)


def test_overlapping_unsplit_rules_are_refused(tmp_path, base):
    entries = [{"rows": [64, 124], "cols": [8717, 16192]}, {"rows": [100, 200], "cols": [9000, 9100]}]
    with pytest.raises(HeuristicsError, match=r"overlaps unsplit\[0\]"):
        heuristics.load(fx.write_heuristics(tmp_path, base, lambda doc: doc.update(unsplit=entries)))


# -- the hook ----------------------------------------------------------------------------------------

@pytest.fixture
def installed(base, monkeypatch):
    table = dataclasses.replace(base, unsplit=(UnsplitSpec((64, 124), (8717, 16192)),)).table()
    registry.set_installed(table, "test")
    yield table
    registry.set_installed(None, None)


def _on_the_rules_gpu(monkeypatch):
    from torch._inductor.runtime import hints

    monkeypatch.setattr(hints.DeviceProperties, "create", staticmethod(lambda device: device))
    monkeypatch.setattr(torch_rules, "device_matches", lambda props, table=None: True)
    monkeypatch.setattr(torch_rules, "device_name_matches", lambda index, table=None: True)


CUDA = types.SimpleNamespace(type="cuda", index=0)


def test_the_hook_keeps_a_split_reduction_whole_only_inside_a_rule(installed, monkeypatch):
    _on_the_rules_gpu(monkeypatch)
    mark = len(registry.applied_rules())
    assert hook.apply_unsplit(CUDA, 12000, 100, True, 4) == 1
    assert registry.applied_rules()[mark:] == ["unsplit (Inductor: 4 parts) -> x=100 r=12000"]
    assert hook.apply_unsplit(CUDA, 12000, 100, False, 4) == 4  # an outer reduction
    assert hook.apply_unsplit(CUDA, 20000, 100, True, 4) == 4  # N beyond the measured span
    assert hook.apply_unsplit(CUDA, 12000, 40, True, 4) == 4  # rows below it
    assert hook.apply_unsplit(CUDA, 12000, 100, True, 1) == 1  # Inductor does not split: nothing to keep
    assert hook.apply_unsplit(types.SimpleNamespace(type="cpu", index=None), 12000, 100, True, 4) == 4
    assert len(registry.applied_rules()) == mark + 1


def test_the_hook_keeps_inductors_split_elsewhere(installed, monkeypatch):
    # Another GPU; a deterministic compile; a lookup that fails: Inductor's split, and the compile goes on.
    assert hook.apply_unsplit(CUDA, 12000, 100, True, 4) == 4
    _on_the_rules_gpu(monkeypatch)
    import torch._inductor.config as inductor_config

    with inductor_config.patch(deterministic=True):
        assert hook.apply_unsplit(CUDA, 12000, 100, True, 4) == 4

    def broken(*args, **kwargs):
        raise RuntimeError("lookup failed")

    monkeypatch.setattr(torch_rules, "unsplit_decision", broken)
    assert hook.apply_unsplit(CUDA, 12000, 100, True, 4) == 4


def test_without_rules_the_hook_is_inductors_split(monkeypatch):
    registry.set_installed(None, None)
    _on_the_rules_gpu(monkeypatch)
    assert hook.apply_unsplit(CUDA, 12000, 100, True, 4) == 4


# -- the fit ---------------------------------------------------------------------------------------

def _points(ratios, rows=(70, 90, 110), cols=(9000, 12000, 15000), band=0.03):
    return [ABPoint("rmsnorm_fwd", r, c, x, band) for x, r, c in zip(ratios, rows, cols)]


def test_a_cell_is_a_rule_only_with_a_win_beyond_noise_and_no_loss(base):
    fitted, lines = unsplit.fit(base, _points([1.2, 1.3, 1.1]), [], ["train.sqlite"])
    (spec,) = fitted.unsplit
    assert spec.rows == (70, 110) and spec.cols == (9000, 15000)  # the measured span, not the cell
    assert spec.evidence.gain_min == 1.1 and len(spec.evidence.measured) == 3
    assert spec.config is None and spec.launch_rules() == ()
    assert fitted.provenance["unsplit_evidence"] == ["train.sqlite"]
    assert any(line.startswith("rows 64..127 N 8193..16384: Inductor's config: one kernel") for line in lines)
    assert unsplit.cell_verdict(_points([1.2, 1.3, 0.95])).startswith("1 lost beyond noise")
    assert unsplit.cell_verdict(_points([1.2, 1.3, 0.98])) is None  # 0.98: inside the 3 % band
    assert "no win beyond" in unsplit.cell_verdict(_points([1.01, 1.0, 1.005]))  # a tie is no win
    assert "fewer than 3" in unsplit.cell_verdict(_points([1.2, 1.3]))


def test_with_no_loss_excused_a_cell_loses_at_any_problem_slower_than_the_split(base):
    # Stop 76: a column rule whose evidence read 0.996 inside its 3.75 % band lost 7-8 % at an unseen problem of its
    # span; `--max-loss` caps the band a loss may hide in (0: none).
    assert unsplit.cell_verdict(_points([1.2, 1.3, 0.98])) is None
    assert unsplit.cell_verdict(_points([1.2, 1.3, 0.98]), max_loss=0).startswith("1 lost beyond noise")
    assert unsplit.cell_verdict(_points([1.2, 1.3, 0.98]), max_loss=0.01).startswith("1 lost beyond noise")
    assert unsplit.cell_verdict(_points([1.2, 1.3, 0.995]), max_loss=0.01) is None
    fitted, lines = unsplit.fit(base, _points([1.2, 1.3, 0.98]), [], ["train.sqlite"], max_loss=0)
    assert fitted.unsplit == () and fitted.provenance["unsplit_max_loss"] == 0
    assert any("Inductor's split kept: 1 lost beyond noise" in line for line in lines)
    fitted, _ = unsplit.fit(base, _points([1.2, 1.3, 0.98]), [], ["train.sqlite"])
    assert len(fitted.unsplit) == 1 and "unsplit_max_loss" not in fitted.provenance


def test_with_every_win_a_tie_at_any_problem_keeps_the_split(base):
    # Stop 78: a cell earns only where each problem, in each timing of it, wins beyond the noise floor; a cell whose
    # geomean wins but one of whose problems ties (1.005 among 48) keeps Inductor's split.
    assert unsplit.cell_verdict(_points([1.2, 1.3, 1.005])) is None
    assert unsplit.cell_verdict(_points([1.2, 1.3, 1.005]), every_win=True).startswith(
        "1 of 3 did not win beyond the 1.5% noise floor (worst")
    assert unsplit.cell_verdict(_points([1.2, 1.3, 1.02]), every_win=True) is None
    assert unsplit.cell_verdict(_points([1.2, 1.3, 0.9]), every_win=True).startswith("1 lost beyond noise")
    fitted, lines = unsplit.fit(base, _points([1.2, 1.3, 1.005]), [], ["train.sqlite"], every_win=True)
    assert fitted.unsplit == () and fitted.provenance["unsplit_every_win"] is True
    assert any("Inductor's split kept: 1 of 3 did not win" in line for line in lines)
    fitted, _ = unsplit.fit(base, _points([1.2, 1.3, 1.02]), [], ["train.sqlite"], every_win=True)
    assert len(fitted.unsplit) == 1


def test_the_s78_candidate_is_the_every_win_column_fit_of_its_five_records(tmp_path):
    # experiments/candidates/h200-s78.yaml (set 68 PASS) comes from c3c6844b and the five column A/B records, the
    # fourth draw and the retime of draws 1-3 among them (docs/rules.md, "Stop 78").
    out = tmp_path / "s78.yaml"
    evidence = ",".join(f"db/unsplit-outer-{name}.sqlite" for name in ("train", "train2", "train3", "train4", "retime"))
    proc = subprocess.run([sys.executable, "experiments/unsplit_fit.py", "fit",
                           "experiments/candidates/h200-s76-nocolumn.yaml", "--outer", "--every-win",
                           "--evidence", evidence, "--out", str(out)], capture_output=True, text=True, cwd=fx.ROOT)
    assert proc.returncode == 0, proc.stderr
    assert heuristics.load(str(out)).digest() == heuristics.load(S78).digest() == "7a7054575db9500c"
    assert "rows 257..512 N 1025..2048: Inductor's config: Inductor's split kept: 1 of 48 did not win" in proc.stdout


def test_a_fit_refuses_records_of_another_gpu_model(tmp_path):
    # An H200's A/B says nothing of an H100's defaults; until stop 85 such a fit wrote a file.
    out = tmp_path / "h100.yaml"
    proc = subprocess.run([sys.executable, "experiments/unsplit_fit.py", "fit", "heuristics/h100.yaml", "--every-win",
                           "--evidence", "db/unsplit-train.sqlite", "--out", str(out)],
                          capture_output=True, text=True, cwd=fx.ROOT)
    assert proc.returncode != 0 and not out.exists()
    assert proc.stderr.strip().splitlines()[-1] == ("unsplit_fit: error: db/unsplit-train.sqlite holds validation "
                                                    "records of NVIDIA H200; the file is for NVIDIA H100 80GB HBM3")


def test_withdraw_drops_only_the_unsplit_rules_of_one_kind_and_records_why():
    heur = heuristics.load(S74)  # 9 inner unsplit rules and 12 column rules
    kept = unsplit.withdraw(heur, outer=True, why="lost at held-out problems")
    assert len(kept.unsplit) == 9 and not any(u.outer for u in kept.unsplit)
    assert kept.rules == heur.rules and kept.mix_autotune == heur.mix_autotune
    (entry,) = kept.provenance["withdrawn"]
    assert entry["why"] == "lost at held-out problems" and len(entry["rules"]) == 12
    assert entry["rules"][0] == next(u for u in heur.unsplit if u.outer).describe()
    inner = unsplit.withdraw(kept, outer=False, why="again")
    assert inner.unsplit == () and [e["why"] for e in inner.provenance["withdrawn"]] == ["lost at held-out problems",
                                                                                            "again"]


def test_the_cells_tile_the_split_region(base):
    cells = unsplit.cells(base)
    (rows_lo, rows_hi), (cols_lo, cols_hi) = unsplit.region(base)
    assert (rows_lo, rows_hi) == (1, 263) and cols_lo == 8193
    assert sorted({c[0] for c in cells})[0][0] == 1 and max(c[0][1] for c in cells) == 263
    assert min(c[1][0] for c in cells) == cols_lo and max(c[1][1] for c in cells) == cols_hi
    assert len(cells) == len(unsplit.ROW_EDGES) * 5


def test_points_keep_only_touched_problems_of_the_region():
    from inductor_tune.validate import ValidationRow, Variant

    def row(shape, applied):
        variants = (Variant("inductor_default", 1.0, 1, 1, 1.0, 1.0, 1.0), Variant("heuristics", 0.8, 1, 1, 1.25, 1.2, 1.3))
        return ValidationRow("rmsnorm_fwd", shape, "bf16", variants, 0.004, False, applied, ())

    (p,) = unsplit.points_from_rows([row("100x12000", True), row("100x12000", False), row("100x4000", True)])
    assert (p.rows, p.cols, p.ratio, p.band) == (100, 12000, 1.25, 0.015)


# -- the patch -------------------------------------------------------------------------------------

def test_the_patch_writes_unsplit_rules_as_literals_and_hooks_the_split_factor(base):
    heur = dataclasses.replace(base, unsplit=(UnsplitSpec((64, 124), (8717, 16192)),))
    module = patch.rules_module(heur, "2.13.0")
    assert "        UnsplitRule(rows=(64, 124), cols=(8717, 16192))," in module
    namespace: dict = {}
    exec(compile(module, "distilled_reduction_rules.py", "exec"), namespace)  # noqa: S102 (our own template)
    assert namespace["TABLE"].unsplit == (namespace["UnsplitRule"]((64, 124), (8717, 16192)),)
    (hook_,) = [h for h in patch.HOOKS if "reduction_split_factor" in h.what and "inner" in h.what]
    assert all("unsplit_decision(device, reduction_numel_hint, numel_hint, inner_reduction)" in code
               for _, code in hook_.choices())
    bad = dataclasses.replace(heur, unsplit=(UnsplitSpec((64, 124), (8717, "16192) or (1")),))
    with pytest.raises(patch.PatchError, match="not whole numbers"):
        patch.rules_module(bad, "2.13.0")


def test_the_hooks_split_factor_is_inductors_without_rules_on_this_torch():
    # torch 2.13 declares reduction_split_factor static and 2.14 an instance method: both must work.
    import torch
    from torch._inductor.choices import InductorChoices

    registry.set_installed(None, None)
    device = torch.device("cpu")
    ours = hook.InductorTuneChoices().reduction_split_factor(device, 100000, 4, True)
    assert ours == InductorChoices().reduction_split_factor(device, 100000, 4, True)


# -- an unsplit rule with a config for the one kernel -------------------------------------------------

FWD = ("sum", "row_reads=1,row_writes=1,other_reads=1,other_writes=1,row_bytes=4,ops=load:1+mul:1+to_dtype:1")
PERSISTENT16 = SlotConfig(True, 1, 16)


def _configured(base, kernels=(FWD,)):
    spec = UnsplitSpec((64, 124), (8717, 16192), config=PERSISTENT16, element_size=2, kernels=kernels)
    return dataclasses.replace(base, unsplit=(spec,))


def test_a_config_of_the_one_kernel_round_trips_and_is_looked_up_first_for_the_listed_kernels_only(tmp_path, base):
    assert heuristics.load(os.path.join(fx.ROOT, "experiments", "candidates", "h200-unsplit.yaml")).digest() \
        == "a6563ebb0df9e382"  # shipped at stop 32, before configs: its digest holds
    heur = _configured(base)
    back = heuristics.load(fx.write_heuristics(tmp_path, heur))
    assert back.unsplit == heur.unsplit and back.digest() == heur.digest()
    table = back.table()
    first = table.rules[0]
    assert (first.persistent, first.XBLOCK, first.num_warps, first.reductions, first.envelopes) == \
        (True, 1, 16, "sum", (FWD[1],))
    assert len(table.rules) == 1 + len(base.table().rules)

    def lookup(signature=FWD[0], envelope=FWD[1], rows=100, cols=12000, element_size=2):
        return torch_rules.lookup("inner_looped", element_size, torch_rules.next_pow2(cols),
                                  torch_rules.next_pow2(rows), table, signature, envelope, rows, cols)

    assert lookup() is first
    assert lookup(signature="sum@backward") is None  # a backward kernel: not measured
    assert lookup(envelope=FWD[1].replace("other_writes=1", "other_writes=2")) is None  # another kernel
    assert lookup(rows=40) is None and lookup(cols=16500) is None and lookup(element_size=4) is None


@pytest.mark.parametrize("edit, why", [
    (lambda e: e.pop("element_size"), "needs its element_size"),
    (lambda e: (e.pop("config"), e.pop("element_size")), "kernels a config"),
    (lambda e: e.update(kernels=[{"reductions": "sum", "envelope": "x"}]), "kernels must be"),
    (lambda e: e.update(kernels=[]), "kernels must be"),
    (lambda e: e.update(cols=[70000, 100000]), "illegal config"),  # a persistent row of 128K elements
])
def test_a_bad_unsplit_config_is_one_line(tmp_path, base, edit, why):
    path = fx.write_heuristics(tmp_path, _configured(base), lambda doc: edit(doc["unsplit"][0]))
    with pytest.raises(HeuristicsError, match=why):
        heuristics.load(path)


def _cell_with_config(first_fwd, bwd):
    """One cell's A/B: Inductor's config at two forwards (the first at ``first_fwd``) and a backward, and the
    config's points at the two forwards (the backward never compiled with it)."""
    base_points = [ABPoint("rmsnorm_fwd", 70, 9000, first_fwd, 0.03), ABPoint("rmsnorm_fwd", 90, 12000, 1.20, 0.03),
                   ABPoint("rmsnorm_bwd", 110, 15000, bwd, 0.03)]
    timed = (ABPoint("rmsnorm_fwd", 70, 9000, 1.40, 0.03), ABPoint("rmsnorm_fwd", 90, 12000, 1.50, 0.03))
    return base_points, timed


def test_a_config_variant_scores_each_cell_as_the_file_would_run_it(base):
    # Inductor's config wins within noise everywhere; the config wins more at the forward and never compiled the
    # backward: the cell keeps the backward's own point and takes the config.
    base_points, timed = _cell_with_config(first_fwd=1.10, bwd=0.99)
    variant = unsplit.Variant(PERSISTENT16, timed, {"rmsnorm_fwd": (FWD,)})
    fitted, lines = unsplit.fit(base, base_points, [variant], ["a.sqlite"])
    (spec,) = fitted.unsplit
    assert spec.config == PERSISTENT16 and spec.kernels == (FWD,) and spec.element_size == 2
    assert spec.evidence.gain_min == 0.99 and len(spec.evidence.measured) == 3
    # A kernel the config may not take keeps Inductor's point: here that still earns, without a config.
    fitted, _ = unsplit.fit(base, base_points, [unsplit.Variant(PERSISTENT16, timed, {})], ["a.sqlite"])
    (spec,) = fitted.unsplit
    assert spec.config is None and spec.evidence.gain_geomean < 1.2


def test_a_config_earns_nothing_where_inductors_config_loses(base):
    # The config wins at every listed kernel, but Inductor's config loses at the forward (0.80). The split is
    # decided from sizes alone, so a kernel the config does not list would run whole with Inductor's config:
    # no rule (held-out set 21 lost 0.793 at such a kernel).
    base_points, timed = _cell_with_config(first_fwd=0.80, bwd=1.00)
    variant = unsplit.Variant(PERSISTENT16, timed, {"rmsnorm_fwd": (FWD,)})
    fitted, lines = unsplit.fit(base, base_points, [variant], ["a.sqlite"])
    assert fitted.unsplit == ()
    assert any("Inductor's config: Inductor's split kept: 1 lost" in line for line in lines)
    assert any("for 1 kernel(s): Inductor's split kept: an unlisted kernel would run whole" in line for line in lines)


def test_only_forward_kernels_that_compiled_with_the_config_may_take_it():
    from inductor_tune.space import GraphFlags
    from inductor_tune.runtime.launch import KernelSlot

    def space(backward, split):
        slot = KernelSlot("k", backward, 100, 12000, False, False, "sum", FWD[1])
        return types.SimpleNamespace(structures=((GraphFlags(split_reductions=split), (slot,)),))

    spaces = [("rmsnorm_fwd", space(False, False)), ("rmsnorm_bwd", space(True, False)),
              ("nn_rmsnorm_fwd", space(False, True)), ("llama_rmsnorm_fwd", space(False, False))]
    assert unsplit.configurable_kernels(spaces, failed={"llama_rmsnorm_fwd"}) == {"rmsnorm_fwd": (FWD,)}


def test_the_patch_writes_the_one_kernels_config_before_the_launch_rules(base):
    module = patch.rules_module(_configured(base), "2.13.0")
    namespace: dict = {}
    exec(compile(module, "distilled_reduction_rules.py", "exec"), namespace)  # noqa: S102 (our own template)
    assert repr(namespace["TABLE"]) == repr(_configured(base).table())  # the same rules, the config first
    bad = _configured(base, kernels=(("sum", FWD[1] + "')\nimport os#"),))
    with pytest.raises(patch.PatchError, match="unsplit kernels"):
        patch.rules_module(bad, "2.13.0")


@pytest.mark.parametrize("argv, message", [
    (["withdraw", "heuristics/h200.yaml", "--outer"], "unsplit_fit: error: withdraw needs --why"),
    (["fit", "heuristics/h200.yaml", "--evidence", "db/unsplit-train.sqlite", "--max-loss", "1"],
     "unsplit_fit: error: --max-loss must lie in [0, 1)"),
])
def test_the_fit_script_refuses_bad_withdraw_and_max_loss_arguments_in_one_line(tmp_path, argv, message):
    out = tmp_path / "out.yaml"
    proc = subprocess.run([sys.executable, "experiments/unsplit_fit.py", *argv, "--out", str(out)],
                          capture_output=True, text=True, cwd=fx.ROOT)
    assert proc.returncode == 1 and not out.exists() and proc.stderr.strip() == message


def test_the_fit_script_reads_a_missing_variant_database_as_one_line(tmp_path):
    # fit.sh passes each line of a list's .unsplit file as a --variant (stop 55); a database the A/B has not written
    # yet stops the fit with one line and no file.
    out = tmp_path / "out.yaml"
    proc = subprocess.run([sys.executable, "experiments/unsplit_fit.py", "fit", "heuristics/h200.yaml",
                           "--evidence", "db/unsplit-train.sqlite", "--variant",
                           f"experiments/unsplit/probe-persistent32.yaml={tmp_path}/absent.sqlite",
                           "--kernels-from", "db/quack.sqlite", "--out", str(out)],
                          capture_output=True, text=True, cwd=fx.ROOT)
    assert proc.returncode == 1 and not out.exists()
    assert proc.stderr.strip() == f"unsplit_fit: error: no database at {tmp_path}/absent.sqlite"
