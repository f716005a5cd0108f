"""experiments/slot_structure.py puts each validated problem in a class by the reduction kernels Inductor compiled."""

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))

import slot_structure  # noqa: E402


def _slot(x, r, mix=False):
    return {"xnumel": x, "rnumel": r, "mix_order": mix}


def test_each_class_from_the_slots_alone():
    assert slot_structure.structure([_slot(702, 134)], 702, 134) == "one kernel"
    assert slot_structure.structure([_slot(11682, 5425, mix=True)], 11682, 5425) == "fused mix-order"
    # The row kernel runs whole and the weight gradient reduces over the rows on its own.
    assert slot_structure.structure([_slot(451, 19), _slot(19, 451)], 19, 451) == "row kernel + column reductions"
    # Few rows at long N: partial sums over rows x 3 and a combine; no kernel reduces a whole row.
    assert slot_structure.structure([_slot(621, 44550), _slot(207, 3)], 207, 133649) == "split"
    assert slot_structure.structure([_slot(70, 4410), _slot(35, 2), _slot(8819, 35)], 35, 8819) == "split"


def test_held_out_set_38_by_class():
    # Stop 44, H200 (db/heldout38.sqlite, 74f1f09d; docs/runs/2026-11-27-h200-s44.log).
    pairs = slot_structure.problems(["db/heldout38.sqlite"])
    table = {cls: rest for cls, *rest in slot_structure.heldout_table(pairs)}
    assert sum(n for n, _, _ in table.values()) == 300
    assert {cls: n for cls, (n, _, _) in table.items()} == {
        "one kernel": 162, "fused mix-order": 9, "row kernel + column reductions": 43, "split": 86}
    assert {cls: touched for cls, (_, touched, _) in table.items()} == {
        "one kernel": 34, "fused mix-order": 3, "row kernel + column reductions": 6, "split": 4}
    classes = {(row.kernel, row.shape): cls for cls, row in pairs}
    assert classes[("add_rmsnorm_fwd", "123x16165")] == "split"
    assert classes[("layernorm_bwd", "226x289")] == "row kernel + column reductions"
    assert classes[("llama_rmsnorm_bwd", "342269x139")] == "fused mix-order"


def test_best_found_gap_shares_add_up():
    pairs = slot_structure.problems(["db/bestfound38-validate-74f1f09d.sqlite"])
    table = {cls: rest for cls, *rest in slot_structure.bestfound_table(pairs)}
    assert sum(n for n, _, _ in table.values()) == 12
    assert math.isclose(sum(share for _, _, share in table.values()), 1.0)
    # The two split samples (scaled_softmax_bwd 80x39182 at 0.820 of its best found) carry the largest share per
    # sample of the set's gap.
    n_split, geo_split, share_split = table["split"]
    assert n_split == 2 and geo_split < 0.9 and share_split > 0.4


def test_best_found_by_whether_a_rule_applied():
    # Stop 50, H200 (db/bestfound44-validate-eee2f777.sqlite): rules applied at one of the uniform 8,
    # nn_rmsnorm_train_fwd 119915x1909, at 0.808 of its best found (1.074 where the study found 1.329).
    pairs = slot_structure.problems(["db/bestfound44-validate-eee2f777.sqlite"])
    split = {cls: rest for cls, *rest in slot_structure.bestfound_table(pairs, by_applied=True)}
    whole = {cls: rest for cls, *rest in slot_structure.bestfound_table(pairs)}
    assert split["one kernel, rule applied"][0] == 1
    assert math.isclose(split["one kernel, rule applied"][1], 0.808, abs_tol=0.001)
    for cls, (n, _, share) in whole.items():
        applied, not_applied = split[f"{cls}, rule applied"], split[f"{cls}, no rule applied"]
        assert applied[0] + not_applied[0] == n
        assert math.isclose((applied[2] or 0) + (not_applied[2] or 0), share or 0, abs_tol=1e-9)
