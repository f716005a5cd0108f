"""experiments/rule_diff.py: what a refit changes, by rule and by validated problem."""

import dataclasses
import os
import sys

from inductor_tune import heuristics

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "experiments"))
import gap_rules  # noqa: E402
import rule_diff  # noqa: E402

SHIPPED = os.path.join(ROOT, "experiments", "candidates", "h100-s91.yaml")  # d7915d43, shipped at stop 93
REFIT = os.path.join(ROOT, "experiments", "candidates", "h100-s92.yaml")  # 7fcb9a96
SET15 = os.path.join(ROOT, "db", "heldout-h100-15.sqlite")  # 7fcb9a96's one score (stop 94)


def test_a_file_against_itself_changes_nothing():
    heur = heuristics.load(SHIPPED)
    assert rule_diff.rule_changes(heur, heur)[1:] == []


def test_a_config_given_up_is_named_with_the_reason_its_evidence_gives():
    heur = heuristics.load(SHIPPED)
    index = next(i for i, rule in enumerate(heur.rules) if rule.config is not None)
    rule = heur.rules[index]
    held = dataclasses.replace(rule, config=None, evidence=dataclasses.replace(
        rule.evidence, note="fitted it, not shipped: no span round timed it"))
    changed = dataclasses.replace(heur, rules=heur.rules[:index] + (held,) + heur.rules[index + 1:])
    lines = rule_diff.rule_changes(heur, changed)
    assert "with a config: 82 -> 81" in lines[0] and len(lines) == 2
    assert lines[1].endswith("-> Inductor's default (fitted it, not shipped)")


def test_the_problems_a_file_forces_are_those_its_validation_found_touched():
    # The validated file is the refit: where the CPU says it forces a config, validate's compile under it differed
    # from Inductor's own choice (the two touched problems it does not force are the end-to-end split entry's).
    old, new = heuristics.load(SHIPPED), heuristics.load(REFIT)
    rows = gap_rules.rows_with_records(SET15)
    forced = {(row.kernel, row.shape) for row, rec in rows if rule_diff.forcing(new, rec)}
    touched = {(row.kernel, row.shape) for row, _ in rows if row.heuristics_applied}
    assert len(rows) == 300 and len(forced) == 20 and len(touched) == 22 and forced <= touched
    head, *only = rule_diff.problem_changes(old, new, SET15)
    assert head.endswith("300 problems; a config forced by both 15, only OLD 2, only NEW 5, neither 278")
    assert sum(line.startswith("  only NEW") and "default kept" not in line for line in only) == 5


def test_an_unreadable_file_is_one_error_line(capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("format: nope\n")
    assert rule_diff.main([SHIPPED, str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rule_diff.py: error:")
