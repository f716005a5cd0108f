"""Focused studies (``SearchSpace.focused``: one kernel of a multi-kernel problem varied, the others left to
Inductor) and span probes of split kernels (``split_probes``).  A focused point is a kernel at its own sizes
(xnumel x rnumel) inside a problem that a crossmeasure must compile instead; a split probe is a problem whose
predicted split kernel lands in a rule's span.  The slot sizes and splits below were seen on an H200 (132 SMs)."""

import dataclasses
import json
import math
import random

import optuna
import pytest

from inductor_tune import evidence, experiment, split_probes
from inductor_tune.evidence import ShapePoint
from inductor_tune.experiment import ExperimentError
from inductor_tune.runtime.launch import KernelSlot, SlotConfig
from inductor_tune.shapes import ALIGNMENT_CLASSES
from inductor_tune.space import DEFAULT_FLAGS, GraphFlags, SearchSpace, TrialConfig, params_of, slot_role


def _slot(key, x, r, backward=False, mix=False, envelope=""):
    return KernelSlot(key, backward, x, r, mix, False, "sum", envelope)


# softmax_fwd 24x41139 under Inductor's default flags: two split kernels, each with its combine.
SPLIT, COMBINE = _slot("fw.red.x144.r6857", 144, 6857), _slot("fw.red.x24.r6", 24, 6)
SPLIT2, COMBINE2 = _slot("fw.red.x144.r6857#2", 144, 6857), _slot("fw.red.x24.r6#2", 24, 6)
UNSPLIT = _slot("fw.red.x24.r41139", 24, 41139)
SOFTMAX = SearchSpace(((DEFAULT_FLAGS, (SPLIT, COMBINE, SPLIT2, COMBINE2)), (GraphFlags(False, True), (UNSPLIT,))))
LOOPED = SlotConfig(persistent=False, XBLOCK=1, num_warps=8, R0_BLOCK=2048, num_stages=2)

# Real envelopes of scaled_softmax_bwd 25x31682's split kernel (x100.r7921: 31682 is not a multiple of 4, so
# it masks a ragged last part) and of one whose parts divide N evenly.
MASKED = ("row_reads=2,row_writes=0,other_reads=2,other_writes=1,row_bytes=4,"
          "ops=exp:1+index_expr:1+load:4+lt:1+masked:1+mul:3+sub:1+to_dtype:2+truediv:1")
EVEN = "row_reads=2,row_writes=0,other_reads=2,other_writes=1,row_bytes=4,ops=exp:1+load:4+mul:3+sub:1+to_dtype:2"


def _point(x, r, problem, key=None, envelope=MASKED, kernel="scaled_softmax_bwd"):
    """A focused study's point of a split kernel: rows, cols = its xnumel, rnumel; problem = what was compiled."""
    slot = _slot(key or f"bw.red.x{x}.r{r}", x, r, backward=True, envelope=envelope)
    return ShapePoint(kernel, x, r, "bf16", "inner_looped", "sum", slot, {LOOPED: 1.1}, 0.01,
                      (f"{kernel}/{problem[0]}x{problem[1]}/bf16",), problem=problem)


# ---- slot_role ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("rows, cols, x, r, role", [
    (24, 41139, 144, 6857, "split"), (24, 41139, 24, 6, "combine"),  # softmax_fwd
    (76, 21196, 228, 7066, "split"), (76, 21196, 76, 3, "combine"), (76, 21196, 21196, 76, "column"),  # rmsnorm_bwd
    (16409, 173, 22317, 128, "column_split"), (16409, 173, 173, 129, "combine"),  # layernorm_bwd
    (16409, 173, 16409, 173, "row"),
])
def test_slot_role_from_kernel_sizes(rows, cols, x, r, role):
    assert slot_role(_slot("k", x, r), rows, cols) == role


def test_slot_role_mix_order_kernel_is_mix_whatever_its_sizes():
    assert slot_role(_slot("bw.mix.x32768.r4096", 32768, 4096, True, mix=True), 32768, 4096) == "mix"


# ---- SearchSpace.focused -----------------------------------------------------------------------------------

def test_focused_space_varies_only_its_kernel():
    """Only the second split kernel's params: no graph flag (other flags compile other kernels), no other slot."""
    space = SOFTMAX.focused("split#2", 24, 41139)
    assert space.focus == (SPLIT2.key,)
    assert space.distributions() and all(n.startswith(SPLIT2.key + ".") for n in space.distributions())
    config = TrialConfig(DEFAULT_FLAGS, ((SPLIT2.key, LOOPED),))
    got = space.suggest(optuna.trial.FixedTrial(params_of(config, space)))
    assert got == config and got.flags == DEFAULT_FLAGS
    assert space.contains(config)
    assert not space.contains(TrialConfig(DEFAULT_FLAGS, ((SPLIT.key, LOOPED),)))
    assert SOFTMAX.focused("split", 24, 41139).focus == (SPLIT.key,)  # no "#N": the first


def test_focused_space_enumerates_one_slot():
    configs = SOFTMAX.focused("split#2", 24, 41139).enumerate()
    assert configs and all(c.flags == DEFAULT_FLAGS and [k for k, _ in c.slots] == [SPLIT2.key] for c in configs)


def test_focus_survives_json_and_unfocused_json_is_unchanged():
    space = SOFTMAX.focused("split#2", 24, 41139)
    again = SearchSpace.from_json(space.to_json())
    assert again == space and again.focus == (SPLIT2.key,)
    assert isinstance(json.loads(SOFTMAX.to_json()), list)  # databases before sub-grids read it
    assert SearchSpace.from_json(SOFTMAX.to_json()) == SOFTMAX


def test_focused_refuses_a_kernel_the_problem_lacks():
    with pytest.raises(ValueError, match=r"no column kernel \(its kernels: split, combine, split, combine\)"):
        SOFTMAX.focused("column", 24, 41139)
    with pytest.raises(ValueError, match="no split#3 kernel"):
        SOFTMAX.focused("split#3", 24, 41139)
    with pytest.raises(ValueError, match="unknown kernel role 'bogus'"):
        SOFTMAX.focused("bogus", 24, 41139)


# ---- experiment files --------------------------------------------------------------------------------------

BASE = {"kernels": ["softmax_fwd"], "shapes": ["24x41139"], "dtypes": ["bf16"]}


def test_experiment_focus_parses_roles():
    assert experiment.from_mapping(BASE, "x").focus == ""
    assert experiment.from_mapping({**BASE, "focus": "split"}, "x").focus == "split"
    assert experiment.from_mapping({**BASE, "focus": "split#2"}, "x").focus == "split#2"
    for bad in ("foo", "split#0", "split#x", "split#"):
        with pytest.raises(ExperimentError, match="'focus' must be a kernel role"):
            experiment.from_mapping({**BASE, "focus": bad}, "x")


# ---- Inductor's split factor -------------------------------------------------------------------------------

@pytest.mark.parametrize("rows, cols, x, r", [
    (5, 234731, 145, 8095), (24, 41139, 144, 6857), (133, 30342, 532, 7586), (1, 115359, 15, 7691),
    (2, 29083, 8, 7271), (56, 190405, 560, 19041), (70, 149367, 560, 18671), (235, 251470, 705, 83824),
])
def test_inner_split_matches_h200_compiles(rows, cols, x, r):
    s = split_probes.inductor_inner_split(rows, cols, sm_count=132)
    assert (rows * s, math.ceil(cols / s)) == (x, r)


def test_inner_split_none_at_many_rows_short_rows_or_blackwell():
    split = split_probes.inductor_inner_split
    assert split(263, 100000, 132) > 1 and split(264, 100000, 132) == 1  # 2 x SMs rows
    assert split(10, 8194, 132) > 1 and split(10, 8192, 132) == 1
    assert split(10, 262144, 132) > 1 and split(10, 262144, 132, capability_major=10) == 1


def _torch_split(monkeypatch, major=9):
    """The installed torch's own InductorChoices.reduction_split_factor, on a made-up 132-SM device (no GPU)."""
    import types

    from torch._inductor import choices

    props = types.SimpleNamespace(multi_processor_count=132, warp_size_or_default=32,
                                  max_threads_per_multi_processor=2048, major=major)
    monkeypatch.setattr(choices, "DeviceProperties", types.SimpleNamespace(create=lambda device: props))
    return lambda rows, cols: choices.InductorChoices.reduction_split_factor(None, cols, rows, True)


@pytest.mark.parametrize("major", [9, 10])
def test_inner_split_agrees_with_torchs_own_heuristic(monkeypatch, major):
    torch_split, rng = _torch_split(monkeypatch, major), random.Random(major)
    shapes = [(rng.randint(1, 300), rng.randint(8194, 600000)) for _ in range(300)] + [(5, 8192), (263, 9000)]
    shapes += [(rng.randint(150, 263), rng.randint(600000, 2**20)) for _ in range(100)]  # > 512 per thread
    assert [split_probes.inductor_inner_split(r, c, 132, major) for r, c in shapes] == \
        [torch_split(r, c) for r, c in shapes]


def test_inner_split_at_8193(monkeypatch):
    assert split_probes.inductor_inner_split(10, 8193, 132) == _torch_split(monkeypatch)(10, 8193) == 2


# ---- SplitDraw: problems whose split kernel lies in a span -------------------------------------------------

SPAN_X, SPAN_R = (64, 512), (4097, 8192)
PARENTS = [_point(100, 7921, (25, 31682)), _point(232, 6154, (58, 24613))]


def _draw(parents=PARENTS, count=10, seed=1, avoid=frozenset()):
    taken = {p.compiled for p in parents}
    got = split_probes.SplitDraw(parents, SPAN_X, SPAN_R, 132).problems(count, random.Random(seed), taken, avoid)
    return got, taken


def test_split_draw_places_split_kernels_inside_the_span():
    got, taken = _draw()
    assert len(got) == 10  # a wide span: every probe placed, so the n-th is the n-th alignment class
    for n, (point, split) in enumerate(got):
        rows, cols = point.problem
        assert split > 1 and split_probes.inductor_inner_split(rows, cols, 132) == split
        assert (point.rows, point.cols) == (rows * split, math.ceil(cols / split))
        assert SPAN_X[0] <= point.rows <= SPAN_X[1] and SPAN_R[0] <= point.cols <= SPAN_R[1] and cols <= 262144
        modulus, residue = ALIGNMENT_CLASSES[n % len(ALIGNMENT_CLASSES)]
        assert point.cols % modulus == residue
        assert point.compiled in taken and point.probe and point.span
        assert slot_role(point.slot, rows, cols) == "split"
    assert len({p.compiled for p, _ in got}) == 10
    assert [p.label for p, _ in got] == [p.label for p, _ in _draw()[0]]  # same seed, same probes


def test_split_draw_leaves_out_an_alignment_class_the_span_cannot_hold():
    """N = 5001..5008 holds no multiple of 16: the first probe (class 16k) is not placed rather than put outside."""
    draw = split_probes.SplitDraw(PARENTS, SPAN_X, (5001, 5008), 132)
    got = draw.problems(5, random.Random(3), set(), ())
    assert len(got) == 4 and all(5001 <= p.cols <= 5008 for p, _ in got)


def test_split_draw_avoids_held_out_problems():
    first, _ = _draw(count=4)
    avoid = frozenset(p.compiled for p, _ in first)
    again, _ = _draw(count=4, avoid=avoid)
    assert again and not avoid & {p.compiled for p, _ in again}


def test_split_draw_keeps_masking_and_nth_kernel_of_its_family():
    """A masked family's rule matches only kernels with a ragged last part, an even one's only without: a probe
    of the other kind would time a kernel the rule does not match.  The n-th split kernel keeps its "#n"."""
    masked, _ = _draw()
    assert all(p.problem[1] % s for p, s in masked)
    even = [_point(100, 7921, (25, 31684), "bw.red.x100.r7921#2", EVEN), _point(232, 6154, (58, 24616),
                                                                               "bw.red.x232.r6154#2", EVEN)]
    got, _ = _draw(even)
    assert got and all(p.problem[1] % s == 0 for p, s in got)
    assert all(p.slot.key == f"bw.red.x{p.rows}.r{p.cols}#2" for p, _ in got)


# ---- record_probe: which kernel a crossmeasure record timed ------------------------------------------------

def assert_record_probe_frames(parents, kernel, probe, wrong_keys, other_kernel):
    """``record_probe`` frames a record at ``probe``'s problem that forced its kernel (among other keys) as that
    probe, and none that forced only ``wrong_keys`` of the same problem or that timed ``other_kernel``."""
    rows, cols = probe.problem
    got = split_probes.record_probe(parents, kernel, "bf16", rows, cols, ["x", probe.slot.key])
    assert got is not None and got.slot.key == probe.slot.key and got.problem == (rows, cols)
    assert (got.rows, got.cols) == (probe.rows, probe.cols) and got.probe
    for key in wrong_keys:
        assert split_probes.record_probe(parents, kernel, "bf16", rows, cols, [key]) is None
    assert split_probes.record_probe(parents, other_kernel, "bf16", rows, cols, [probe.slot.key]) is None


def test_record_probe_finds_the_forced_split_kernel():
    (probe, split), = _draw(count=1)[0]
    rows, cols = probe.problem
    # A row kernel of the problem, or a split of other sizes than Inductor's, is no split probe.
    assert_record_probe_frames(PARENTS, "scaled_softmax_bwd", probe,
                               (f"bw.red.x{rows}.r{cols}", f"bw.red.x{rows * split}.r{probe.cols + 1}"), "softmax_bwd")


# ---- evidence of focused points ----------------------------------------------------------------------------

def test_focused_point_compiles_its_problem():
    point = _point(100, 7921, (25, 31682))
    assert point.compiled == (25, 31682)
    assert evidence.record_key(point) == ("scaled_softmax_bwd", 25, 31682, "bf16")
    assert "(bw.red.x100.r7921 of 25x31682)" in point.label
    whole = dataclasses.replace(point, problem=())
    assert whole.compiled == (100, 7921) and evidence.record_key(whole) == ("scaled_softmax_bwd", 100, 7921, "bf16")


def test_focused_point_does_not_run_over_the_problems_rows():
    """Its xnumel equals its own rows, but its grid runs over row parts: no row probe may be placed from it."""
    point = _point(100, 7921, (25, 31682))
    assert point.slot.xnumel == point.rows and point.slot.rnumel == point.cols
    assert not evidence.runs_over_rows(point)
    assert evidence.runs_over_rows(dataclasses.replace(point, problem=()))
