"""Span probes of column-split kernels (``split_probes.ColumnSplitDraw``): a weight gradient (N outputs, each a sum
over the M rows) that Inductor splits into a kernel of N x s outputs and length ceil(M / s), and a combine.  A
probe of a rule fitted on such kernels is a problem (M, N) whose column split lands in the rule's span.  The sizes
below were compiled on an H200 (132 SMs): the slots of held-out records of sets 39 and 40."""

import dataclasses
import math
import random

import pytest
from test_focus import assert_record_probe_frames

from inductor_tune import evidence, split_probes
from inductor_tune.evidence import ShapePoint
from inductor_tune.runtime.launch import KernelSlot, SlotConfig
from inductor_tune.shapes import ALIGNMENT_CLASSES
from inductor_tune.space import slot_role

PERSISTENT = SlotConfig(persistent=True, XBLOCK=8, num_warps=4)
MASKED = "row_reads=2,row_writes=0,other_reads=0,other_writes=1,row_bytes=4,ops=index_expr:1+load:2+lt:1+masked:1+mul:1"
EVEN = "row_reads=2,row_writes=0,other_reads=0,other_writes=1,row_bytes=4,ops=load:2+mul:1"


def _point(problem, split, envelope=MASKED, kernel="nn_layernorm_bwd", key_suffix=""):
    """A focused study's point of a column split: rows, cols = its xnumel (N x s), rnumel (ceil(M / s))."""
    rows, cols = problem
    x, r = cols * split, -(-rows // split)
    slot = KernelSlot(f"bw.red.x{x}.r{r}{key_suffix}", True, x, r, False, False, "sum", envelope)
    return ShapePoint(kernel, x, r, "bf16", "outer", "sum", slot, {PERSISTENT: 1.1}, 0.01,
                      (f"{kernel}/{rows}x{cols}/bf16",), problem=problem)


# ---- Inductor's outer split factor ---------------------------------------------------------------------

@pytest.mark.parametrize("rows, cols, x, r", [
    (133, 206, 412, 67), (226, 373, 746, 113), (1405, 135, 1485, 128), (280, 2674, 8022, 94),
    (19078, 158, 23700, 128), (1500, 2697, 32364, 125), (2920, 5830, 110770, 154), (10400, 7002, 140040, 520),
])
def test_outer_split_matches_h200_compiles(rows, cols, x, r):
    s = split_probes.inductor_outer_split(rows, cols, sm_count=132)
    assert (cols * s, math.ceil(rows / s)) == (x, r)


def test_outer_split_none_at_few_rows_wide_n_or_small_problems():
    split = split_probes.inductor_outer_split
    assert split(32, 8000, 132) == 1 and split(32, 8000 * 2**10, 132) == 1  # a whole column of 32 rows or fewer
    assert split(5000, 8447, 132) > 1 and split(5000, 8448, 132) == 1  # 64 x SMs outputs: enough programs
    assert split(128, 500, 132) == 1 and split(129, 500, 132) == 2  # a small problem: 128 rows per part


def _torch_outer(monkeypatch):
    """The installed torch's own outer branch of InductorChoices.reduction_split_factor, on a made-up 132-SM
    device (no GPU); ``Reduction.num_splits`` calls it above 32 rows and below 64 x SMs outputs."""
    import types

    from torch._inductor import choices

    props = types.SimpleNamespace(multi_processor_count=132, warp_size_or_default=32,
                                  max_threads_per_multi_processor=2048, major=9)
    monkeypatch.setattr(choices, "DeviceProperties", types.SimpleNamespace(create=lambda device: props))
    return lambda rows, cols: choices.InductorChoices.reduction_split_factor(None, rows, cols, False)


def test_outer_split_agrees_with_torchs_own_heuristic(monkeypatch):
    torch_split, rng = _torch_outer(monkeypatch), random.Random(7)
    shapes = [(rng.randint(33, 10**6), rng.randint(1, 8447)) for _ in range(300)]
    shapes += [(round(math.exp(rng.uniform(math.log(33), math.log(10**6)))), rng.randint(128, 8447))
               for _ in range(200)]  # log-uniform rows: as many small and middle problems as large ones
    assert [split_probes.inductor_outer_split(m, n, 132) for m, n in shapes] == [torch_split(m, n) for m, n in shapes]


# ---- ColumnSplitDraw -------------------------------------------------------------------------------------------

SPAN_X, SPAN_R = (1024, 65536), (65, 128)
PARENTS = [_point((1405, 135), 11), _point((3867, 434), 31)]


def _draw(parents=PARENTS, count=10, seed=1, avoid=frozenset(), span=(SPAN_X, SPAN_R)):
    taken = {p.compiled for p in parents}
    draw = split_probes.part_draw(parents, *span, 132)
    return draw.problems(count, random.Random(seed), taken, avoid), taken


def test_column_parents_draw_column_splits():
    assert isinstance(split_probes.part_draw(PARENTS, SPAN_X, SPAN_R, 132), split_probes.ColumnSplitDraw)
    assert all(evidence.part_role(p) == "column_split" and not evidence.is_split_point(p) for p in PARENTS)


def test_column_split_draw_places_kernels_inside_the_span():
    got, taken = _draw()
    assert len(got) == 10
    for n, (point, split) in enumerate(got):
        rows, cols = point.problem
        assert split > 1 and split_probes.inductor_outer_split(rows, cols, 132) == split
        assert (point.rows, point.cols) == (cols * split, math.ceil(rows / split))
        assert SPAN_X[0] <= point.rows <= SPAN_X[1] and SPAN_R[0] <= point.cols <= SPAN_R[1]
        assert 128 <= cols < 64 * 132 and rows <= 10**6
        modulus, residue = ALIGNMENT_CLASSES[n % len(ALIGNMENT_CLASSES)]
        assert cols % modulus == residue  # the class is on N, along which the column kernel loads
        assert point.compiled in taken and point.probe and point.span
        assert slot_role(point.slot, rows, cols) == "column_split" and evidence.part_role(point) == "column_split"
        assert point.slot.key == f"bw.red.x{point.rows}.r{point.cols}"
    assert [p.label for p, _ in got] == [p.label for p, _ in _draw()[0]]  # same seed, same probes


def test_column_split_draw_keeps_masking_of_its_family():
    """A masked family's kernels have rows that the split does not divide; an even family's are divided."""
    masked, _ = _draw()
    assert masked and all(p.problem[0] % s for p, s in masked)
    even = [_point((1408, 135), 11, EVEN), _point((3875, 434), 31, EVEN)]
    got, _ = _draw(even)
    assert got and all(p.problem[0] % s == 0 for p, s in got)


def test_column_split_draw_avoids_held_out_problems_and_places_none_outside_inductors_split():
    first, _ = _draw(count=4)
    avoid = frozenset(p.compiled for p, _ in first)
    again, _ = _draw(count=4, avoid=avoid)
    assert again and not avoid & {p.compiled for p, _ in again}
    # Lengths of 129..160 never come out of a small problem's split (128 rows a part at most), and a middle
    # problem's split gives these outputs no such length: nothing is placed rather than a probe outside the span.
    none, _ = _draw(span=((256, 300), (129, 160)), count=3)
    assert none == []


def test_split_parents_of_a_column_group_are_its_family_column_splits():
    row_split = dataclasses.replace(PARENTS[0], problem=(PARENTS[0].rows // 11, PARENTS[0].cols * 11))
    assert split_probes.split_parents(PARENTS, PARENTS + [row_split]) == PARENTS
    assert split_probes.split_parents([PARENTS[0], row_split], PARENTS) == []


# ---- record_probe: which kernel a crossmeasure record timed ------------------------------------------------

def test_record_probe_finds_the_forced_column_split_kernel():
    (probe, split), = _draw(count=1)[0]
    rows, cols = probe.problem
    # The row kernel, or a column split of other sizes than Inductor's, is no column-split probe.
    wrong = (f"bw.red.x{rows}.r{cols}", f"bw.red.x{cols * split}.r{probe.cols + 1}")
    assert_record_probe_frames(PARENTS, "nn_layernorm_bwd", probe, wrong, "layernorm_bwd")


# ---- crossmeasure.span_probes: a rule fitted on column splits takes probes of its own kind ------------------------

def test_span_probes_of_a_column_split_rule_are_problems_whose_column_split_lies_in_its_span():
    from inductor_tune import crossmeasure, distill

    points = [dataclasses.replace(_point(problem, s), interleaved=frozenset({PERSISTENT}),
                                  proposed=frozenset({PERSISTENT}))
              for problem, s in [((1405, 135), 11), ((3867, 434), 31), ((2234, 176), 18), ((1500, 660), 12)]]
    rule, = [r for r in distill.fit_rules(points) if r.config is not None]
    assert rule.kind == "outer" and rule.config == PERSISTENT
    items = crossmeasure.span_probes(points, 3, seed=5, split_rows=2 * 132)
    assert len(items) == 3
    for item in items:
        probe, (rows, cols) = item.point, item.point.problem
        assert evidence.part_role(probe) == "column_split"
        assert (item.problem.shape.rows, item.problem.shape.cols) == (rows, cols)  # what crossmeasure compiles
        assert rule.rows[0] <= probe.rows <= rule.rows[1] and rule.cols[0] <= probe.cols <= rule.cols[1]
        assert split_probes.inductor_outer_split(rows, cols, 132) == probe.rows // cols
        assert item.configs[0] == PERSISTENT
    # Without the GPU's SM count (no split_rows) no split of any kind can be placed.
    assert crossmeasure.span_probes(points, 3, seed=5) == []
