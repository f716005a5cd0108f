"""End-to-end split-autotune entries of the fused mix-order backwards (inductor_tune.mix_e2e): the span Inductor
fuses, the stratified training draw, the points a probe's A/B gives and the fit (CPU only)."""

import dataclasses
import glob
import json
import os
import subprocess
import sys

import distill_fixtures as fx
import pytest

from inductor_tune import heuristics, mix_e2e
from inductor_tune.unsplit import ABPoint

SHIPPED = os.path.join(fx.ROOT, "heuristics", "h200.yaml")
S78 = os.path.join(fx.ROOT, "experiments", "candidates", "h200-s78.yaml")  # 7a705457, shipped at stops 79-81
S79 = os.path.join(fx.ROOT, "experiments", "candidates", "h200-s79.yaml")
S82 = os.path.join(fx.ROOT, "experiments", "candidates", "h200-s82.yaml")  # e75e39bd, shipped at stops 82-83
S83 = os.path.join(fx.ROOT, "experiments", "candidates", "h200-s83.yaml")
SCRIPT = os.path.join(fx.ROOT, "experiments", "mix_e2e_fit.py")


@pytest.fixture(scope="module")
def shipped():
    # 7a705457, with the 5 split-autotune entries of the earlier form that the end-to-end fits replace.
    return heuristics.load(S78)


@pytest.mark.parametrize("rows, cols, fused", [
    (4096, 2048, True),     # the smallest fused rows, and rows = 2 N
    (4095, 2048, False),    # fewer rows than Inductor's floor
    (8192, 4097, False),    # rows below 2 N
    (40959, 128, False),    # 128 elements short of 5 Mi
    (40960, 128, True),
    (65536, 16385, False),  # N past what Inductor keeps persistent
])
def test_fused_follows_inductors_thresholds(rows, cols, fused):
    assert mix_e2e.fused(rows, cols) is fused


def test_the_stratified_draw_fills_every_cell_with_fused_problems_and_none_held_out():
    held = {("rmsnorm_bwd", 16180, 341, "bf16")}
    problems = mix_e2e.stratified_problems(3, 11, mix_e2e.KERNELS, held)
    cells = mix_e2e.cells()
    assert len(problems) == 3 * len(cells) == len(set(problems))
    assert problems == mix_e2e.stratified_problems(3, 11, mix_e2e.KERNELS, held)  # seeded
    for i, (kernel, rows, cols, dtype) in enumerate(problems):
        (band, octave) = cells[i // 3]
        assert band[0] <= rows <= band[1] and octave[0] <= cols <= octave[1], (problems[i], cells[i // 3])
        assert mix_e2e.fused(rows, cols) and rows * cols <= mix_e2e.MAX_ELEMENTS and kernel in mix_e2e.KERNELS
    assert not held & set(problems)


def test_the_committed_training_draws_keep_out_every_held_out_problem():
    from inductor_tune.gate import Draw

    held = {tuple(p) for path in glob.glob(os.path.join(fx.ROOT, "experiments", "heldout", "*.json"))
            for p in json.load(open(path))["problems"]}
    for name in ("train-draw.json", "train2-draw.json"):
        with open(os.path.join(fx.ROOT, "experiments", "mix_e2e", name)) as f:
            draw = Draw.from_json(f.read())
        assert draw.n == 108 and not held & {tuple(p) for p in draw.problems}


def test_the_probe_holds_one_end_to_end_entry_per_element_size_and_nothing_else(shipped):
    probe = mix_e2e.probe(shipped)
    assert probe.rules == () and probe.unsplit == () and probe.multi_kernel == () and probe.gpu == shipped.gpu
    assert [(e.element_size, e.end_to_end, e.margin, e.rows, e.cols) for e in probe.mix_autotune] == [
        (2, True, mix_e2e.MARGIN, mix_e2e.ROWS, mix_e2e.COLS), (4, True, mix_e2e.MARGIN, mix_e2e.ROWS, mix_e2e.COLS)]


def test_points_leave_out_problems_where_the_autotuner_kept_inductors_program():
    from inductor_tune.validate import ValidationRow, Variant

    def row(shape, applied, same_program=False):
        variants = (Variant("inductor_default", 1.0, 1, 1, 1.0, 1.0, 1.0),
                    Variant("heuristics", 0.8, 1, 1, 1.25, 1.2, 1.3))
        return ValidationRow("rmsnorm_bwd", shape, "bf16", variants, 0.004, False, applied, (),
                             same_program=same_program)

    (p,) = mix_e2e.points_from_rows([row("30000x700", True), row("30000x701", True, same_program=True),
                                     row("30000x702", False), row("3000x700", True)])
    assert (p.rows, p.cols, p.ratio, p.band, p.element_size) == (30000, 700, 1.25, 0.015, 2)


def _points(cell_ratios):
    """Problems of the cell rows 16385..65536, N 513..1024 with these ratios."""
    return [ABPoint("rmsnorm_bwd", 20000 + 1000 * i, 600 + 10 * i, ratio, 0.015) for i, ratio in enumerate(cell_ratios)]


def test_a_cell_earns_an_entry_only_where_every_changed_problem_won(shipped):
    fitted, lines = mix_e2e.fit(shipped, _points([1.10, 1.20, 1.05]), ["train.sqlite"])
    (entry,) = fitted.mix_autotune
    assert entry.rows == (20000, 22000) and entry.cols == (600, 620) and entry.end_to_end
    assert entry.margin == mix_e2e.MARGIN and entry.evidence.gain_min == 1.05 and entry.kernels == ()
    assert fitted.rules == shipped.rules and fitted.unsplit == shipped.unsplit
    assert fitted.provenance["mix_e2e_evidence"] == ["train.sqlite"]
    assert any("rows 16385..65536 N 513..1024: entry: 3 problems" in line for line in lines)
    # A tie is no win, and the shipped file's earlier entries go either way.
    tied, lines = mix_e2e.fit(shipped, _points([1.10, 1.20, 1.005]), ["train.sqlite"])
    assert tied.mix_autotune == () and any("1 of 3 did not win" in line for line in lines)
    assert len(tied.provenance["mix_autotune_withdrawn"]) == len(shipped.mix_autotune) == 5
    assert mix_e2e.fit(shipped, _points([1.10, 1.20]), [])[0].mix_autotune == ()  # too few problems


def _run_fit(tmp_path, base, records, *flags):
    """The script's end-to-end fit of ``base`` and these mix-e2e records: (its process, the file's path)."""
    out = tmp_path / "fit.yaml"
    evidence = ",".join(f"db/mix-e2e-{name}.sqlite" for name in records)
    proc = subprocess.run([sys.executable, SCRIPT, "fit", base, *flags, "--evidence", evidence, "--out", str(out)],
                          capture_output=True, text=True, cwd=fx.ROOT)
    return proc, out


def _fit_from_s78(tmp_path, records):
    """The end-to-end fit of 7a705457 and these mix-e2e records, as the script writes it, and its output."""
    proc, out = _run_fit(tmp_path, S78, records)
    assert proc.returncode == 0, proc.stderr
    return heuristics.load(str(out)), proc.stdout


def _an_entry_reaches_the_fused_backwards_of(fitted, model: str) -> bool:
    from inductor_tune.models import CATALOG

    step = CATALOG[model]
    assert mix_e2e.fused(step.tokens, step.hidden)
    return any(e.rows[0] <= step.tokens <= e.rows[1] and e.cols[0] <= step.hidden <= e.cols[1]
               for e in fitted.mix_autotune)


def test_the_s79_candidate_is_the_fit_of_its_three_records(tmp_path):
    # experiments/candidates/h200-s79.yaml (held-out set 69 PASS) comes from the shipped 7a705457 and the probe's
    # two training draws and a fresh compile of the first (docs/rules.md, "Stop 79").
    fitted, stdout = _fit_from_s78(tmp_path, ("train", "train2", "retime"))
    assert fitted.digest() == heuristics.load(S79).digest() == "3517f3be96cba693"
    assert len(fitted.mix_autotune) == 5 and all(e.end_to_end for e in fitted.mix_autotune)
    # The model step its entries reach (inductor_tune.models): RMSNorm backwards of 32768 tokens x 5120.
    assert _an_entry_reaches_the_fused_backwards_of(fitted, "llama-5120-t32768")
    assert "2B rows 4096..16384 N 257..512: Inductor's split kept: 1 lost beyond noise" in stdout


def test_e75e39bd_is_the_fit_of_its_six_records(tmp_path):
    # e75e39bd (shipped at stops 82-83; held-out set 71 PASS, all 23 GPU tests) comes from 7a705457 and the
    # probe's four training draws and fresh compiles of draws 1 and 2 (the second 107 of 108 problems; docs/rules.md,
    # "Stop 82"). The third and fourth draws ran with the runtime keeping Inductor's split where it cannot be timed.
    fitted, stdout = _fit_from_s78(tmp_path, ("train", "train2", "retime", "train3", "retime2", "train4"))
    assert fitted.digest() == heuristics.load(S82).digest() == "e75e39bdb865c7f9"
    assert [(e.rows, e.cols) for e in fitted.mix_autotune] == [((16467, 62535), (262, 463)),
                                                                ((16843, 60458), (519, 1005))]
    assert fitted.rules == heuristics.load(S78).rules
    # The model step an entry reaches: GPT-2 small's fused LayerNorm backwards of 32768 tokens x 768.
    assert _an_entry_reaches_the_fused_backwards_of(fitted, "gpt2-768-t32768")
    # rows 4096..16384 N 257..512 lost at the third draw, and that loss keeps Inductor's split there.
    assert "2B rows 4096..16384 N 257..512: Inductor's split kept: 3 lost beyond noise" in stdout


SWEEP_RECORDS = ("sweep-train", "sweep-train2", "sweep-train3", "sweep-train4")


def test_the_shipped_file_is_e75e39bd_plus_the_sweeping_fit_of_its_four_records(tmp_path):
    # heuristics/h200.yaml (since stop 84; experiments/candidates/h200-s83.yaml, held-out set 72 PASS, all 25 GPU
    # tests and its gpt2-1280-t32768 step) keeps e75e39bd's two climbing entries and adds the sweeping probe's entries
    # of training draws 1-4 where they overlap none of them (docs/rules.md, "Stop 83", "Stop 84").
    proc, out = _run_fit(tmp_path, S82, SWEEP_RECORDS, "--sweep", "--keep")
    assert proc.returncode == 0, proc.stderr
    fitted, e75e39bd = heuristics.load(str(out)), heuristics.load(S82)
    assert fitted.digest() == heuristics.load(S83).digest() == heuristics.load(SHIPPED).digest() == "86f2b08c64dd75d0"
    assert fitted.mix_autotune[:2] == e75e39bd.mix_autotune
    assert [(e.rows, e.cols, e.sweep) for e in fitted.mix_autotune[2:]] == [
        ((16722, 59411), (1044, 1963), True), ((81595, 258589), (262, 501), True),
        ((68163, 146317), (2217, 4096), True)]
    assert fitted.provenance["mix_e2e_evidence_kept"] == e75e39bd.provenance["mix_e2e_evidence"]
    # The model step its sweeping entries reach: GPT-2 large's width at 32768 tokens (its LayerNorm backwards).
    assert _an_entry_reaches_the_fused_backwards_of(dataclasses.replace(fitted, mix_autotune=fitted.mix_autotune[2:]),
                                                    "gpt2-1280-t32768")
    # Without --keep the climbing entries are withdrawn.
    (tmp_path / "fit.yaml").unlink()
    proc, out = _run_fit(tmp_path, S82, SWEEP_RECORDS, "--sweep")
    assert proc.returncode == 0 and len(heuristics.load(str(out)).mix_autotune) == 3


def test_a_fit_refuses_records_of_the_other_probe(tmp_path):
    for records, flags, want in ((("train",), ("--sweep",), "not the sweeping probe"),
                                 (("sweep-train",), (), "not the climbing probe")):
        proc, out = _run_fit(tmp_path, S78, records, *flags)
        assert proc.returncode != 0 and want in proc.stderr and not out.exists()


def test_a_kept_entry_is_withdrawn_where_a_new_entry_overlaps_it(shipped):
    base = heuristics.load(S82)  # two entries: rows 16467..62535 x N 262..463 and 16843..60458 x 519..1005
    points = [ABPoint("rmsnorm_bwd", 20000 + i, 300 + i, 1.2, 0.015) for i in range(3)]
    fitted, lines = mix_e2e.fit(base, points, ["new.sqlite"], sweep=True, keep=True)
    assert [e.cols for e in fitted.mix_autotune] == [(519, 1005), (300, 302)]
    withdrawn = fitted.provenance["mix_autotune_withdrawn"]
    assert withdrawn[:-1] == base.provenance["mix_autotune_withdrawn"] and withdrawn[-1]["cols"] == [262, 463]
    assert fitted.mix_autotune[1].sweep and any(line.startswith("kept: ") for line in lines)


def test_the_script_refuses_an_existing_output_and_a_draw_without_a_seed(tmp_path):
    existing = tmp_path / "out.json"
    existing.write_text("kept")
    proc = subprocess.run([sys.executable, SCRIPT, "draw", "--seed", "1", "--out", str(existing)],
                          capture_output=True, text=True, cwd=fx.ROOT)
    assert proc.returncode != 0 and "exists" in proc.stderr and existing.read_text() == "kept"
    proc = subprocess.run([sys.executable, SCRIPT, "draw", "--out", str(tmp_path / "new.json")],
                          capture_output=True, text=True, cwd=fx.ROOT)
    assert proc.returncode != 0 and "needs --seed" in proc.stderr and not (tmp_path / "new.json").exists()


def test_entries_with_and_without_end_to_end_do_not_share_a_digest(shipped):
    entry = mix_e2e.probe(shipped).mix_autotune[0]
    plain = dataclasses.replace(shipped, mix_autotune=(dataclasses.replace(entry, end_to_end=False),))
    assert dataclasses.replace(shipped, mix_autotune=(entry,)).digest() != plain.digest()


def test_retime_keeps_the_draws_problems_a_sweeping_entry_reaches_and_no_held_out_one(tmp_path):
    base = heuristics.load(S82)
    sweeping = dataclasses.replace(base, mix_autotune=(
        dataclasses.replace(base.mix_autotune[0], rows=(16000, 20000), cols=(300, 400), sweep=True),
        dataclasses.replace(base.mix_autotune[1], rows=(16000, 20000), cols=(500, 600))))
    draw = [("rmsnorm_bwd", 17000, 350, "bf16"),  # inside the sweeping entry
            ("rmsnorm_bwd", 17000, 350, "bf16"),  # again: kept once
            ("rmsnorm_bwd", 17000, 350, "fp32"),  # inside its span, of another element size
            ("nn_rmsnorm_bwd", 18000, 360, "bf16"),  # held out
            ("rmsnorm_bwd", 17000, 550, "bf16"),  # inside the climbing entry only
            ("rmsnorm_bwd", 21000, 350, "bf16")]  # past the sweeping entry's rows
    held = {("nn_rmsnorm_bwd", 18000, 360, "bf16")}
    assert mix_e2e.reached_by_sweeps(sweeping, draw, held) == [("rmsnorm_bwd", 17000, 350, "bf16")]
    # The committed retime draw of the shipped file: every problem inside one of its three sweeping entries.
    from inductor_tune.gate import Draw

    shipped = heuristics.load(SHIPPED)
    retime = Draw.from_json(open(os.path.join(fx.ROOT, "experiments", "mix_e2e", "retime-s84-draw.json")).read())
    assert retime.n == len(retime.problems) == len(set(retime.problems)) > 0
    assert mix_e2e.reached_by_sweeps(shipped, retime.problems, set()) == [tuple(p) for p in retime.problems]
    # A file without a sweeping entry has nothing to retime, and the script says so without writing.
    out = tmp_path / "retime.json"
    proc = subprocess.run([sys.executable, SCRIPT, "retime", S82, "--draws",
                           os.path.join(fx.ROOT, "experiments", "mix_e2e", "train-draw.json"), "--out", str(out)],
                          capture_output=True, text=True, cwd=fx.ROOT)
    assert proc.returncode != 0 and "no problem of the draws" in proc.stderr and not out.exists()


H100_SWEEP_RECORDS = ("sweep-h100-train", "sweep-h100-train2", "sweep-h100-train3", "sweep-h100-train4")
H100_S85 = os.path.join(fx.ROOT, "experiments", "candidates", "h100-s85.yaml")
H100_S85B = os.path.join(fx.ROOT, "experiments", "candidates", "h100-s85b.yaml")
H100_S54 = os.path.join(fx.ROOT, "experiments", "candidates", "h100-s54.yaml")  # 4153ab03, shipped stops 55-85


def test_the_h100_candidate_is_the_sweeping_fit_of_its_four_h100_records(tmp_path):
    # experiments/candidates/h100-s85.yaml (ca115fea): 4153ab03 (heuristics/h100.yaml until stop 86) plus the entries
    # the H100's sweeping probe earned on training draws 1-4 (docs/rules.md, "Stop 85").
    assert heuristics.load(H100_S54).digest()[:8] == "4153ab03"
    proc, out = _run_fit(tmp_path, H100_S54, H100_SWEEP_RECORDS, "--sweep")
    assert proc.returncode == 0, proc.stderr
    fitted = heuristics.load(str(out))
    assert fitted.digest() == heuristics.load(H100_S85).digest() and fitted.digest()[:8] == "ca115fea"
    assert [(e.rows, e.cols, e.sweep) for e in fitted.mix_autotune] == [
        ((16843, 60458), (519, 1005), True), ((90878, 259322), (556, 944), True)]
    assert fitted.rules == heuristics.load(H100_S54).rules
    # Its fresh-compile draw is every training problem the two entries reach.
    from inductor_tune.gate import Draw

    draws = [Draw.from_json(open(os.path.join(fx.ROOT, "experiments", "mix_e2e", f"train{k}-draw.json")).read())
             for k in ("", "2", "3", "4")]
    retime = Draw.from_json(open(os.path.join(fx.ROOT, "experiments", "mix_e2e", "retime-h100-s85-draw.json")).read())
    assert [tuple(p) for p in retime.problems] == mix_e2e.reached_by_sweeps(
        fitted, [p for d in draws for p in d.problems], set())
    # GPT-2's 768 width at 32768 tokens is a model step inside its first entry.
    assert _an_entry_reaches_the_fused_backwards_of(fitted, "gpt2-768-t32768")
    # With the fresh compile of those problems as a fifth record, the entry of rows 65537.. loses its cell (a problem
    # there tied at 1.000): experiments/candidates/h100-s85b.yaml (108c2c1d), which passed H100 held-out set 12 and
    # shipped as heuristics/h100.yaml at stop 86; since stop 89 the shipped file is a refit that keeps this entry: stop
    # 87's until stop 92, stop 91's at stop 93, and since stop 94 stop 91's with 8 launch configs withdrawn.
    (tmp_path / "fit.yaml").unlink()
    proc, out = _run_fit(tmp_path, H100_S54,
                         H100_SWEEP_RECORDS + ("sweep-h100-retime",), "--sweep")
    assert proc.returncode == 0, proc.stderr
    refit = heuristics.load(str(out))
    assert refit.digest() == heuristics.load(H100_S85B).digest() and refit.digest()[:8] == "108c2c1d"
    assert [(e.rows, e.cols) for e in refit.mix_autotune] == [((16843, 60458), (519, 1005))]
    assert _an_entry_reaches_the_fused_backwards_of(refit, "gpt2-768-t32768")
    shipped = heuristics.load(os.path.join(fx.ROOT, "heuristics", "h100.yaml"))
    candidate = heuristics.load(os.path.join(fx.ROOT, "experiments", "candidates", "h100-s91-audited.yaml"))
    assert shipped.digest() == candidate.digest()
    assert shipped.mix_autotune == refit.mix_autotune and shipped.unsplit == refit.unsplit


def _cv():
    sys.path.insert(0, os.path.join(fx.ROOT, "experiments"))
    import mix_e2e_cv

    return mix_e2e_cv


def test_the_winners_rectangle_holds_no_problem_that_did_not_win():
    cv = _cv()

    def point(rows, cols, ratio):
        return ABPoint("rmsnorm_bwd", rows, cols, ratio, 0.015)

    tie = point(30000, 1500, 1.006)
    winners = [point(20000, 1100, 1.2), point(25000, 1200, 1.2), point(40000, 1300, 1.1), point(50000, 1900, 1.1),
               point(60000, 2000, 1.3), point(20000, 1800, 1.2), point(23000, 1700, 1.1)]
    # Below the tie's rows: 4 winners; above its rows, or its N either side: 3 each.
    assert cv.winners_rectangle(winners + [tie], 3) == (20000, 25000, 1100, 1800)
    assert cv.winners_rectangle(winners + [tie], 5) is None
    # Where every problem won: the cell's whole measured span.
    assert cv.winners_rectangle(winners, 3) == (20000, 60000, 1100, 2000)


def test_leave_one_out_scores_each_record_on_the_entries_of_the_others():
    cv = _cv()
    a, b = ABPoint("rmsnorm_bwd", 20000, 600, 1.2, 0.015), ABPoint("rmsnorm_bwd", 21000, 610, 0.9, 0.015)
    spans_of = {frozenset([b]): [], frozenset([a]): [(2, 20000, 21000, 600, 610)]}
    counts, reached = cv.leave_one_out([[a], [b]], lambda pts: spans_of[frozenset(pts)])
    assert counts == [0, 1] and reached == [b]
