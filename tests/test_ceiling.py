"""experiments/ceiling.py: what one rule per group of shapes could reach at each shape, leaving the shape out."""

import importlib.util
import subprocess
import sys
import types
from pathlib import Path

import pytest

from inductor_tune.runtime.launch import SlotConfig

# ceiling imports fit_loo from its own folder, as running it as a script does
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
spec = importlib.util.spec_from_file_location("ceiling", "experiments/ceiling.py")
ceiling = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ceiling)

WIDE = SlotConfig(persistent=True, XBLOCK=1, num_warps=16)
NARROW = SlotConfig(persistent=True, XBLOCK=4, num_warps=4)
LOOPED = SlotConfig(persistent=False, XBLOCK=1, num_warps=8, R0_BLOCK=1024)
SPLIT16 = SlotConfig(persistent=True, XBLOCK=2, num_warps=8, RSPLIT_SIZE=16, NUM_STAGES=1)


def shape(rows, cols, speedups, default="persistent XBLOCK=1 warps=8", interleaved=None, probe=False):
    return types.SimpleNamespace(
        kernel="rmsnorm_fwd", rows=rows, cols=cols, dtype="bfloat16", kind="inner_persistent", probe=probe,
        family=("inner_persistent", 2, "sum", "x"), r_pow2=4096, x_pow2=rows, inductor_default=default,
        speedups=speedups, interleaved=frozenset(speedups if interleaved is None else interleaved))


def test_only_interleaved_timings_count_and_the_default_is_a_floor():
    p = shape(64, 3000, {WIDE: 1.3, NARROW: 0.9}, interleaved=[NARROW])
    assert ceiling.interleaved_ratios(p) == {NARROW: 0.9}
    assert ceiling.best_found(p) == 1.0


def test_the_left_out_shape_gets_the_config_the_rest_prefers_not_its_own_best():
    p = shape(64, 3000, {WIDE: 1.1, NARROW: 1.5})
    rest = [shape(128, 3000, {WIDE: 1.4, NARROW: 1.0}), shape(256, 3000, {WIDE: 1.3, NARROW: 1.1})]
    assert ceiling.choose(p, rest, safe=False) == WIDE
    assert ceiling.loo_ratio(p, rest, safe=False) == pytest.approx(1.1 / 1.5)


def test_safe_choices_drop_a_config_slower_than_the_default_beyond_two_percent_anywhere_in_the_rest():
    p = shape(64, 3000, {WIDE: 1.2, NARROW: 1.1})
    rest = [shape(128, 3000, {WIDE: 1.6, NARROW: 1.1}), shape(256, 3000, {WIDE: 0.97, NARROW: 1.05})]
    assert ceiling.choose(p, rest, safe=False) == WIDE
    assert ceiling.choose(p, rest, safe=True) == NARROW
    rest[1] = shape(256, 3000, {WIDE: 0.985, NARROW: 1.05})  # within 2 %: still allowed
    assert ceiling.choose(p, rest, safe=True) == WIDE


def test_a_config_timed_at_fewer_than_half_the_rest_or_not_at_the_shape_is_no_candidate():
    p = shape(64, 3000, {WIDE: 1.2})
    rest = [shape(128, 3000, {NARROW: 1.5}), shape(256, 3000, {NARROW: 1.5}), shape(512, 3000, {WIDE: 1.3})]
    assert ceiling.candidates(p, rest) == []  # WIDE at 1 of 3; NARROW never timed at p
    assert ceiling.loo_ratio(p, rest, safe=False) == pytest.approx(1 / 1.2)  # the default


def test_the_default_wins_where_every_candidate_loses_on_the_rest():
    p = shape(64, 3000, {WIDE: 1.5})
    rest = [shape(128, 3000, {WIDE: 0.8}), shape(256, 3000, {WIDE: 0.9})]
    assert ceiling.choose(p, rest, safe=False) is None


def test_the_autotuner_takes_configs_of_the_kernel_inductor_generates():
    looped_default = shape(64, 3000, {WIDE: 1.2, LOOPED: 1.1}, default="looped R0_BLOCK=2048 XBLOCK=1 warps=16")
    assert ceiling.same_kernel(looped_default, LOOPED) and not ceiling.same_kernel(looped_default, WIDE)
    mix = shape(64, 3000, {SPLIT16: 1.1}, default="persistent XBLOCK=1 warps=8 split=16 NUM_STAGES=1")
    assert ceiling.same_kernel(mix, SPLIT16) and not ceiling.same_kernel(mix, WIDE)
    # A rule forcing the persistent kernel where Inductor generates a looped one leaves no default to fall back on.
    assert ceiling.fastest(shape(64, 3000, {WIDE: 0.9}, default="looped R0_BLOCK=2048"), [WIDE]) == 0.9
    assert ceiling.fastest(shape(64, 3000, {WIDE: 0.9}), [WIDE]) == 1.0


def test_autotuned_sets_keep_one_kind_of_kernel_and_add_what_the_first_config_misses():
    p = shape(64, 3000, {WIDE: 1.3, NARROW: 1.2, LOOPED: 1.5})
    rest = [shape(128, 3000, {WIDE: 1.5, NARROW: 1.0, LOOPED: 1.0}),
            shape(256, 3000, {WIDE: 1.0, NARROW: 1.4, LOOPED: 1.45})]
    one = ceiling.autotuned(p, rest, 1)
    assert len(one) == 1
    two = ceiling.autotuned(p, rest, 2)
    assert set(two) == {WIDE, NARROW}  # LOOPED would help at 256 rows, but it is another kernel
    assert ceiling.autotuned_ratio(p, rest, 2) == pytest.approx(1.3 / 1.5)


def test_a_safe_autotuned_set_is_no_slower_than_the_default_beyond_two_percent_on_the_rest():
    looped = "looped R0_BLOCK=2048 XBLOCK=1 warps=16"
    p = shape(64, 3000, {WIDE: 1.3}, default=looped)
    rest = [shape(128, 3000, {WIDE: 1.6}, default=looped), shape(256, 3000, {WIDE: 0.9}, default=looped)]
    assert ceiling.autotuned(p, rest, 2) == [WIDE]
    assert ceiling.autotuned(p, rest, 2, safe=True) == []
    assert ceiling.autotuned_ratio(p, rest, 2, safe=True) == pytest.approx(1 / 1.3)


def test_multi_kernel_times_either_kind_beside_the_default_but_only_the_defaults_split():
    looped = "looped R0_BLOCK=2048 XBLOCK=1 warps=16"
    p = shape(64, 3000, {WIDE: 1.3, LOOPED: 0.7}, default=looped)
    assert ceiling.with_default(p, [WIDE]) == 1.3  # the persistent kernel is timed beside a looped default
    assert ceiling.with_default(p, [LOOPED]) == 1.0  # a slower config never beats the default it is timed beside
    assert ceiling.with_default(shape(64, 3000, {SPLIT16: 1.4}), [SPLIT16]) == 1.0  # another split: another kernel
    mix = shape(64, 3000, {SPLIT16: 1.4}, default="persistent XBLOCK=1 warps=8 split=16 NUM_STAGES=1")
    assert ceiling.with_default(mix, [SPLIT16]) == 1.4


def test_multi_kernel_sets_add_configs_only_while_they_gain_on_the_rest():
    p = shape(64, 3000, {WIDE: 1.3, NARROW: 1.2, LOOPED: 1.5})
    rest = [shape(128, 3000, {WIDE: 1.5, NARROW: 1.0, LOOPED: 0.5}),
            shape(256, 3000, {WIDE: 0.6, NARROW: 1.0, LOOPED: 1.45})]
    assert ceiling.multi_kernel(p, rest, 1) == [WIDE]
    # Unlike an autotuned set of one kind, the looped config joins: each gains where the other loses.
    assert ceiling.multi_kernel(p, rest, 3) == [WIDE, LOOPED]  # NARROW adds nothing beside the default
    assert ceiling.with_default(p, ceiling.multi_kernel(p, rest, 3)) / ceiling.best_found(p) == 1.0


def test_nearest_shapes_are_by_log_rows_and_log_n_and_never_probes_or_the_shape_itself():
    p = shape(100, 1000, {})
    near, far, probe = shape(200, 1000, {}), shape(100, 8000, {}), shape(101, 1000, {}, probe=True)
    assert ceiling.nearest(p, [p, far, probe, near], 1) == [near]


def test_the_summary_counts_shapes_left_slower_than_the_default():
    rows = [{"kind": "k", "best_found": 1.25, "default": 0.8, "rules": 0.8},
            {"kind": "k", "best_found": 1.0, "default": 1.0, "rules": 0.9},
            {"kind": "m", "best_found": 1.0, "default": 1.0, "rules": None}]
    out = ceiling.summary(rows)
    assert out[0].split() == ["all", "k", "m"] and out[1].split() == ["shapes", "3", "2", "1"]
    assert out[2].split() == ["default", "0.928/0", "0.894/0", "1.000/0"]
    assert out[3].split() == ["rules", "0.849/1", "(2)", "0.849/1", "nan/0", "(0)"]


def test_one_shape_per_line_from_a_fit_list(tmp_path):
    fit_list = tmp_path / "list.txt"
    fit_list.write_text("# two header lines\n#\ndb/crossmeasure-s48-fill18.sqlite\ndb/quack.sqlite\n")
    out = subprocess.run([sys.executable, "experiments/ceiling.py", str(fit_list), "--csv", str(tmp_path / "c.csv")],
                         capture_output=True, text=True, check=True).stdout
    header, totals, default = out.splitlines()[:3]
    assert header.split()[0] == "all" and totals.split()[0] == "shapes" and int(totals.split()[1]) > 0
    assert default.split()[0] == "default" and "group+rows autotuned 3, safe" in out
    assert "group+rows multi-kernel 3" in out and "candidates' best" in out
    assert (tmp_path / "c.csv").read_text().startswith("kernel,kind,shape,dtype,best_found,default,")


def test_a_sample_scores_the_shapes_fit_loo_refits(tmp_path):
    loo_spec = importlib.util.spec_from_file_location("fit_loo", "experiments/fit_loo.py")
    fit_loo = importlib.util.module_from_spec(loo_spec)
    loo_spec.loader.exec_module(fit_loo)
    fit_list = tmp_path / "list.txt"
    fit_list.write_text("#\n#\ndb/modules.sqlite\ndb/crossmeasure.sqlite\n")
    points = fit_loo.load(str(fit_list), "H200", None)
    assert ceiling.sampled(points, 7, seed=3) == set(fit_loo.sample(points, 7, seed=3))
    rows = ceiling.score_all(points, only=ceiling.sampled(points, 7, seed=3))
    assert 0 < len(rows) <= 7
    assert {r["shape"] for r in rows} <= {f"{points[i].rows}x{points[i].cols}" for i in ceiling.sampled(points, 7, 3)}
