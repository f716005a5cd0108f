"""A backward compiles to one of two programs: a fused mix-order kernel at many rows, or a row kernel plus column
sums below Inductor's mix-order threshold.  Where studies know a kernel of each program, a crossmeasure record of a
probe belongs to the kernel it forced, never to the other program's nearest study: until stop 66, 151 probe records of
the H200's fit list were framed by the other program's kernel, where they timed nothing and stretched or blocked its
rules.  A focused study of the row kernel (``focus: row``) is framed as a single kernel's, so it can be probed."""

import dataclasses
import json
import types

from inductor_tune import evidence
from inductor_tune.evidence import ShapePoint
from inductor_tune.runtime.launch import KernelSlot, SlotConfig
from inductor_tune.space import INDUCTOR_DEFAULT, TrialConfig

ROW_CONFIG = SlotConfig(persistent=True, XBLOCK=2, num_warps=8)
MIX_CONFIG = SlotConfig(persistent=True, XBLOCK=2, num_warps=8, RSPLIT_SIZE=32, NUM_STAGES=2)


def _point(rows, cols, mix):
    key = f"bw.{'mix' if mix else 'red'}.x{rows}.r{cols}"
    slot = KernelSlot(key, True, rows, cols, mix, True, "sum", "row_reads=2")
    config = MIX_CONFIG if mix else ROW_CONFIG
    return ShapePoint("rmsnorm_bwd", rows, cols, "bf16", "mix_order" if mix else "inner_persistent", "sum@backward",
                      slot, {config: 1.2}, 0.01, (f"rmsnorm_bwd/{rows}x{cols}/bf16",))


MIX, ROW = _point(32768, 3000, mix=True), _point(1000, 3000, mix=False)


def _record(rows, cols, mix):
    """A row probe's crossmeasure record at rows x cols: Inductor's default, then the config forced on one kernel."""
    key = f"bw.{'mix' if mix else 'red'}.x{rows}.r{cols}"
    forced = TrialConfig(slots=((key, MIX_CONFIG if mix else ROW_CONFIG),))
    return types.SimpleNamespace(configs_json=json.dumps([INDUCTOR_DEFAULT.to_json(), forced.to_json()]),
                                 rounds_json=json.dumps([[1.0, 1.0, 1.0], [0.8, 0.8, 0.8]]),
                                 checks_json="{}", origin_json=json.dumps([[], ["rmsnorm_bwd/1000x3000/bf16"]]))


def test_probe_parent_takes_the_program_of_the_forced_kernel():
    # 12000 rows lie nearer the mix-order study in log rows; the row kernel's key still picks the row study.
    assert evidence.probe_parent([MIX, ROW], "rmsnorm_bwd", "bf16", 12000, 3000) == MIX
    assert evidence.probe_parent([MIX, ROW], "rmsnorm_bwd", "bf16", 12000, 3000, keys=("bw.red.x12000.r3000",)) == ROW
    assert evidence.probe_parent([MIX, ROW], "rmsnorm_bwd", "bf16", 1100, 3000, keys=("bw.mix.x1100.r3000",)) == MIX
    assert evidence.probe_parent([MIX], "rmsnorm_bwd", "bf16", 1100, 3000, keys=("bw.red.x1100.r3000",)) is None
    assert evidence.probe_parent([MIX, ROW], "rmsnorm_bwd", "bf16", 12000, 3000, mix_order=False) == ROW


def test_a_probe_record_speaks_for_the_kernel_it_timed():
    for rows, mix, parent in ((12000, False, ROW), (1100, True, MIX)):
        probe = evidence._probe([MIX, ROW], ("rmsnorm_bwd", rows, 3000, "bf16"), [_record(rows, 3000, mix)])
        assert probe is not None and probe.kind == parent.kind and probe.slot.mix_order == mix
        assert probe.probe and probe.speedups == {next(iter(parent.speedups)): 1.25}
    # Where no study knows the forced kernel's program, the record frames nothing.
    assert evidence._probe([MIX], ("rmsnorm_bwd", 1100, 3000, "bf16"), [_record(1100, 3000, False)]) is None


def test_a_focused_row_kernel_is_framed_as_a_single_kernel():
    """Its sizes are its problem's: a crossmeasure compiles that problem, and probes may start from it.  A focused
    split kernel stays a point at its own sizes inside its problem."""
    assert evidence.point_frame(ROW.slot, 1000, 3000, focused=True) == ((1000, 3000), ())
    assert evidence.point_frame(ROW.slot, 1000, 3000, focused=False) == ((1000, 3000), ())
    split = dataclasses.replace(ROW.slot, key="fw.red.x100.r7921", xnumel=100, rnumel=7921)
    assert evidence.point_frame(split, 25, 31682, focused=True) == ((100, 7921), (25, 31682))
    sizes, problem = evidence.point_frame(ROW.slot, 1000, 3000, focused=True)
    row = dataclasses.replace(ROW, rows=sizes[0], cols=sizes[1], problem=problem)
    assert row.compiled == (1000, 3000) and evidence.runs_over_rows(row)
