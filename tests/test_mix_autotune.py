"""Split-autotune entries (``mix_autotune``): what a file may say, which kernels an entry covers, and how the
guarded autotuner moves (CPU, with Inductor's own ``CoordescTuner`` and a stand-in for its timing; the hook on the
CPU harness is tests/test_install.py, the real compile tests/test_gpu_heuristics.py)."""

import dataclasses
import math
import os

import distill_fixtures as fx
import pytest

from inductor_tune import heuristics, patch
from inductor_tune.heuristics import HeuristicsError, MixAutotuneSpec
from inductor_tune.runtime import mix_autotune

H200_FILE = os.path.join(fx.ROOT, "heuristics", "h200.yaml")
S36 = os.path.join(fx.ROOT, "experiments", "candidates", "h200-s36.yaml")
PROBES = os.path.join(fx.ROOT, "experiments", "mixtune")
ENTRY = MixAutotuneSpec((8192, 211467), (243, 16384), 2, min_split=16, margin=0.05, up_only=True)


@pytest.fixture(scope="module")
def shipped():
    return heuristics.load(H200_FILE)


@pytest.fixture(scope="module")
def base(shipped):
    return dataclasses.replace(shipped, rules=(), unsplit=(), provenance={}, holdout={})


def test_files_without_entries_keep_their_digests_and_entries_round_trip(tmp_path, base):
    # c02e7971, the file shipped at stop 36, written before entries existed
    assert heuristics.load(S36).digest() == "c02e7971f647108a"
    with_entry = dataclasses.replace(base, mix_autotune=(ENTRY,))
    back = heuristics.load(fx.write_heuristics(tmp_path, with_entry))
    assert back.mix_autotune == (ENTRY,) and back.digest() == with_entry.digest() != base.digest()
    # Each probe that ran is a different file: its records name the digest it ran with.
    digests = {heuristics.load(os.path.join(PROBES, name)).digest() for name in os.listdir(PROBES)
               if name.startswith("probe-")}
    assert len(digests) == len([n for n in os.listdir(PROBES) if n.startswith("probe-")]) == 6


@pytest.mark.parametrize("change, why", [
    ({"rows": [300, 200]}, "low <= high"),
    ({"element_size": 3}, "element_size 3"),
    ({"min_split": 24}, "power of two"),
    ({"min_split": True}, "power of two"),
    ({"margin": 1.5}, "fraction from 0 to 1"),
    ({"margin": "5%"}, "fraction from 0 to 1"),
    ({"up_only": "yes"}, "true or false"),
    ({"end_to_end": 1}, "true or false"),
    ({"sweep": "yes"}, "true or false"),
    ({"split": 64}, "mapping of rows, cols, element_size"),
    ({"kernels": [{"reductions": "sum;import os", "envelope": "x"}]}, "non-empty list of"),
])
def test_a_bad_entry_is_one_line(tmp_path, base, change, why):
    entry = {"rows": [8192, 211467], "cols": [243, 16384], "element_size": 2, **change}
    with pytest.raises(HeuristicsError, match=why) as info:
        heuristics.load(fx.write_heuristics(tmp_path, base, lambda doc: doc.update(mix_autotune=[entry])))
    assert "\n" not in str(info.value)


def test_overlapping_entries_for_the_same_kernels_are_refused(tmp_path, base):
    entries = [{"rows": [8192, 65536], "cols": [243, 4096], "element_size": 2},
               {"rows": [32768, 211467], "cols": [1024, 16384], "element_size": 2}]
    with pytest.raises(HeuristicsError, match=r"overlaps mix_autotune\[0\]"):
        heuristics.load(fx.write_heuristics(tmp_path, base, lambda doc: doc.update(mix_autotune=entries)))
    entries[1]["element_size"] = 4  # other kernels: allowed
    assert len(heuristics.load(fx.write_heuristics(tmp_path, base, lambda doc: doc.update(mix_autotune=entries))).mix_autotune) == 2


def test_an_entry_covers_the_measured_spans_and_kernels_alone():
    sig, env = "sum@backward", "row_reads=2,row_writes=1,other_reads=1,other_writes=1,row_bytes=4,ops=load:3"
    entry = dataclasses.replace(ENTRY, kernels=((sig, env),))
    table = mix_autotune.lookup_table((ENTRY, entry), "GPU", 90, 132)
    (any_kernel, named) = table.rules
    assert (any_kernel.reductions, any_kernel.envelopes, named.reductions, named.envelopes) == (None, (), sig, (env,))
    assert (named.rows, named.cols, named.rnumel, named.xnumel) == ((8192, 211467), (243, 16384), (256, 16384),
                                                                     (8192, 262144))
    # torch_rules' own lookup finds the entry by its index in RSPLIT_SIZE.
    from inductor_tune.runtime import torch_rules

    assert torch_rules.lookup("mix_order", 2, 256, 8192, table, "max", "other", 8192, 243).RSPLIT_SIZE == 1
    assert torch_rules.lookup("mix_order", 2, 256, 8192, table, "max", "other", 8191, 243) is None


def test_a_patch_says_it_leaves_the_entries_out(shipped):
    pytest.importorskip("torch")
    import torch

    with_entry = dataclasses.replace(shipped, mix_autotune=(ENTRY,))
    module = patch.rules_module(with_entry, torch.__version__)
    assert "Not in this patch: the file's 1 split-autotune entries (mix_autotune)" in module
    assert "Not in this patch" not in patch.rules_module(dataclasses.replace(shipped, mix_autotune=()), torch.__version__)


class _Timing:
    """Stands in for Inductor's timing of one split of the fused kernel (ms by split; a text raises)."""

    def __init__(self, times):
        self.times, self.asked = times, []

    def __call__(self, split):
        self.asked.append(split)
        value = self.times.get(split, 1.0)
        if isinstance(value, str):
            raise RuntimeError(value)
        return value


class _Tail:
    """Stands in for ``mix_autotune.Tail``: the partial sums' reduction, ms by split (timed once a split)."""

    def __init__(self, times):
        self.times, self.asked = times, []

    def ms(self, split, cache):
        if split not in cache:
            self.asked.append(split)
            cache[split] = self.times[split]
        return cache[split]


def _autotune(spec, times, start=32, tail=None):
    pytest.importorskip("torch")
    from torch._inductor.runtime.coordinate_descent_tuner import CoordescTuner

    timing, noted, original = _Timing(times), {}, CoordescTuner.__dict__["autotune_single_field"]
    with mix_autotune.split_autotuned(spec, "x=35678 r=929", noted, tail):
        kept = CoordescTuner.autotune_single_field(timing, start, 8)  # as simd.py calls it
    assert CoordescTuner.__dict__["autotune_single_field"] is original  # Inductor's own again after the block
    return kept, timing.asked, noted


def test_inductors_own_autotuner_moves_for_any_gain_and_the_floor_margin_and_direction_hold_it():
    # nn_layernorm_bwd 35678x929 on the H200 (stop 38): Inductor's split 32; 16 timed 0.1003 ms, 32 0.1133, 64 0.1117.
    times = {8: 0.1200, 16: 0.1003, 32: 0.1133, 64: 0.1117, 128: 0.1300}
    assert _autotune(MixAutotuneSpec((1, 2), (1, 2), 2), times)[0] == 16  # what Inductor does: down, a loss
    assert _autotune(MixAutotuneSpec((1, 2), (1, 2), 2, up_only=True), times)[0] == 64  # 1.4 % faster: moves
    kept, asked, noted = _autotune(ENTRY, times)
    assert kept == 32 and 16 not in asked and 8 not in asked  # up only, and 64 is not 5 % faster
    assert noted["kept"] == 32 and mix_autotune.describe_timings(noted).startswith("split 32 kept (ms by split: 32:")
    # 50231x2707: 64 and 128 are far faster; the autotuner climbs past the margin and stops where it stops gaining.
    assert _autotune(ENTRY, {32: 0.5434, 64: 0.4077, 128: 0.3401, 256: 0.36})[0] == 128


def test_a_split_that_fails_while_timed_is_never_kept_and_warns_once(caplog):
    import logging

    with caplog.at_level(logging.WARNING, logger="inductor_tune"):
        kept, _, noted = _autotune(ENTRY, {32: 0.5, 64: 0.3, 128: "out of resource: shared memory"})
    assert kept == 64 and noted[128].startswith("failed (RuntimeError: out of resource")
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "[128]" in warning and "x=35678 r=929" in warning and "split 64 kept" in warning
    # Every split failing leaves Inductor's own, which is what Inductor would compile.
    assert _autotune(ENTRY, {32: "boom", 64: "boom"})[0] == 32


def test_inductors_own_split_that_its_benchmark_cannot_time_is_kept():
    # nn_layernorm_bwd 70460x7521 on the H200: Inductor's benchmark gave its split 64 inf (over its spill threshold)
    # and the autotuner moved to 32, slower end to end (stop 80); the times below are made up in that pattern.
    end_to_end = dataclasses.replace(MixAutotuneSpec((1, 2), (1, 2), 2), end_to_end=True)
    times = {16: 2.1, 32: 2.0, 64: math.inf, 128: math.inf}
    kept, asked, noted = _autotune(end_to_end, times, start=64, tail=_Tail({16: 0.2, 32: 0.22, 64: 0.1}))
    assert kept == 64 and asked == [64] and noted["kept"] == 64
    # Timed, it is compared as before, and timed once though the autotuner asks for it again.
    kept, asked, _ = _autotune(end_to_end, {**times, 64: 2.5}, start=64, tail=_Tail({16: 0.2, 32: 0.22, 64: 0.1}))
    assert kept == 32 and asked.count(64) == 1
    # Where the entry's floor lifts the start above Inductor's split, a split of inf there is left as before.
    assert _autotune(ENTRY, {16: math.inf, 32: 0.5, 64: 0.3}, start=8)[0] == 64


def test_an_end_to_end_entry_makes_each_split_pay_for_the_partial_sums_it_leaves():
    # The fused kernel alone is fastest at 8; the partial sums' reduction it leaves (rows / split of them) makes 32
    # the fastest end to end.
    fused = {8: 0.080, 16: 0.090, 32: 0.100, 64: 0.106, 128: 0.130}
    tail = {8: 0.060, 16: 0.030, 32: 0.015, 64: 0.0105, 128: 0.006}
    free = MixAutotuneSpec((1, 2), (1, 2), 2)
    assert _autotune(free, fused, tail=_Tail(tail))[0] == 8  # the tail is added only where the entry says so
    end_to_end = dataclasses.replace(free, end_to_end=True)
    kept, _, noted = _autotune(end_to_end, fused, tail=_Tail(tail))
    assert kept == 32 and noted[16] == pytest.approx(0.120) and noted[32] == pytest.approx(0.115)
    assert "timed end to end" in end_to_end.describe() and "timed end to end" not in free.describe()
    # With no tail to time (the hook could not read the kernel's sizes), the entry times the fused kernel alone.
    assert _autotune(end_to_end, fused)[0] == 8
    # A split whose fused kernel failed is never timed for its tail.
    probe = _Tail(tail)
    assert _autotune(end_to_end, {**fused, 16: "out of resource"}, tail=probe)[0] == 32 and 16 not in probe.asked


def test_an_end_to_end_entry_round_trips_and_changes_the_digest(tmp_path, base):
    end_to_end = dataclasses.replace(ENTRY, end_to_end=True)
    plain = dataclasses.replace(base, mix_autotune=(ENTRY,))
    back = heuristics.load(fx.write_heuristics(tmp_path, dataclasses.replace(base, mix_autotune=(end_to_end,))))
    assert back.mix_autotune == (end_to_end,) and back.digest() != plain.digest()


def test_a_sweeping_entry_times_every_split_past_one_that_is_slower_or_cannot_be_timed():
    # From Inductor's 32 the climb sees 16 slower and 64 spill (inf) and stops; 128 is the fastest.
    times = {8: 2.4, 16: 2.2, 32: 2.0, 64: math.inf, 128: 1.5, 256: 1.8, 512: 0.1}
    climbing = dataclasses.replace(MixAutotuneSpec((1, 2), (1, 2), 2), end_to_end=True, margin=0.02)
    assert _autotune(climbing, times)[0] == 32
    sweeping = dataclasses.replace(climbing, sweep=True)
    kept, asked, noted = _autotune(sweeping, times)
    # Each power of two from Inductor's floor (8) to SWEEP_MAX once, Inductor's own first; none past SWEEP_MAX.
    assert kept == 128 and asked == [32, 8, 16, 64, 128, 256] and noted["kept"] == 128
    assert "every power-of-two split timed" in sweeping.describe() and "every" not in climbing.describe()
    # Leaving Inductor's split still needs the margin, and the floor and direction still hold.
    assert _autotune(sweeping, {**times, 128: 1.99, 256: 2.5})[0] == 32
    assert _autotune(dataclasses.replace(sweeping, up_only=True), {**times, 128: 2.5, 8: 1.0})[1] == [32, 64, 128, 256]
    # A split that fails is never kept, and Inductor's own split that cannot be timed is kept, as when climbing.
    assert _autotune(sweeping, {**times, 128: "out of resource"})[0] == 256
    assert _autotune(sweeping, {**times, 32: math.inf})[:2] == (32, [32])


def test_a_sweeping_entry_round_trips_and_changes_the_digest(tmp_path, base):
    climbing = dataclasses.replace(ENTRY, end_to_end=True)
    sweeping = dataclasses.replace(climbing, sweep=True)
    back = heuristics.load(fx.write_heuristics(tmp_path, dataclasses.replace(base, mix_autotune=(sweeping,))))
    assert back.mix_autotune == (sweeping,)
    assert back.digest() != dataclasses.replace(base, mix_autotune=(climbing,)).digest()


def test_the_hook_reads_the_tail_from_the_fused_nodes_on_this_torch():
    # A LayerNorm backward's column side holds two reductions (weight and bias gradients) and a pointwise epilogue;
    # the sizes come as sympy integers, as MixOrderReduction.get_numel_rnumel gives them for static shapes.
    sympy = pytest.importorskip("sympy")
    from inductor_tune.runtime import hook

    class Node:
        def __init__(self, reduction):
            self.reduction = reduction

        def is_reduction(self):
            return self.reduction

    class Fused:
        def __init__(self, nodes):
            self.nodes = nodes

        def get_nodes(self):
            return self.nodes

        def get_device(self):
            return "cuda:0"

    column_side = Fused([Node(True), Node(True), Node(False)])
    tail = hook.partial_sums_tail(Fused([Node(True)]), column_side, sympy.Integer(12288), sympy.Integer(2048))
    assert tail == mix_autotune.Tail(12288, 2048, 2, "cuda:0")
