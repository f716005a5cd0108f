"""experiments/model_launches.py: do two heuristic files launch the same configs at a recorded model's kernels?"""

import dataclasses
import json
import sqlite3
import sys
from pathlib import Path

from inductor_tune import heuristics

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
import model_launches  # noqa: E402

SHIPPED_S61 = "experiments/candidates/h200-s60-softmax-base.yaml"  # 047ab3bb
REFIT_S62 = "experiments/candidates/h200-s62.yaml"  # aa79734d
LLAMA_4096 = {(8192, 4096), (1, 8192)}  # the reduction kernels of db/models-h200-s61.sqlite's llama-4096


def test_stop_63_the_refit_launches_the_shipped_configs_at_both_large_llama_steps():
    # The H200 records of stop 62. At these steps' kernel sizes the two files differ only at a softmax-backward key
    # of rnumel 2048, which the Llama and GPT-2 steps (SDPA attention) never compile.
    lines = model_launches.compare(SHIPPED_S61, REFIT_S62, "db/models-h200-s61.sqlite",
                                   ["llama-2048", "llama-4096", "llama-8192"])
    assert lines[:3] == ["unsplit: equal", "mix_autotune: equal", "multi_kernel: equal"]
    by_model = {line.split(":")[0]: line for line in lines if line.startswith("llama")}
    assert by_model["llama-4096"].endswith("the same launch configs at every key")
    assert by_model["llama-8192"].endswith("the same launch configs at every key")
    assert by_model["llama-2048"].endswith("1 key(s) differ")
    (difference,) = [line for line in lines if line.startswith("  ")]
    assert "x=8192 r=2048" in difference and "sum@backward" in difference and "-> None" in difference


def _covers(rule, kernels):
    return any(rule.rnumel[0] <= r <= rule.rnumel[1] and rule.xnumel[0] <= x <= rule.xnumel[1] for x, r in kernels)


def _first_config_rule(heur, inside: bool):
    return next(index for index, rule in enumerate(heur.rules)
                if rule.config is not None and _covers(rule, {(8192, 4096)} if inside else LLAMA_4096) == inside)


def _with_warps(heur, index, warps):
    rules = list(heur.rules)
    rules[index] = dataclasses.replace(rules[index], config=dataclasses.replace(rules[index].config, num_warps=warps))
    return dataclasses.replace(heur, rules=tuple(rules))


def test_a_changed_config_counts_inside_the_kernels_buckets_and_not_outside():
    heur = heuristics.load(REFIT_S62)
    assert model_launches.launch_differences(heur, heur, LLAMA_4096) == []
    inside = _first_config_rule(heur, inside=True)
    changed = _with_warps(heur, inside, 32 if heur.rules[inside].config.num_warps != 32 else 16)
    differences = model_launches.launch_differences(heur, changed, LLAMA_4096)
    assert differences and all(line.startswith("x=8192 r=4096 ") for line in differences)
    outside = _first_config_rule(heur, inside=False)
    changed = _with_warps(heur, outside, 32 if heur.rules[outside].config.num_warps != 32 else 16)
    assert model_launches.launch_differences(heur, changed, LLAMA_4096) == []


def test_a_model_whose_sizes_are_not_powers_of_two_is_not_compared(tmp_path):
    database = tmp_path / "models.sqlite"
    record = {"tokens": 6000, "spec": {"hidden": 4096}, "choices": {"inductor_default": [
        {"size_hints": {"x": 8192, "r0_": 4096}}]}}
    with sqlite3.connect(database) as connection:
        connection.execute("create table it_validation (id integer primary key, kernel text, result_json text)")
        connection.execute("insert into it_validation (kernel, result_json) values (?, ?)",
                           ("model:odd", json.dumps(record)))
    lines = model_launches.compare(REFIT_S62, REFIT_S62, str(database), ["odd", "absent"])
    assert lines[3:5] == ["odd: old file's column unsplit rules holding at 6000 rows: none",
                          "odd: new file's column unsplit rules holding at 6000 rows: none"]
    assert lines[5].startswith("odd: not comparable (tokens x hidden 6000x4096")
    assert lines[6].startswith("absent: no record")


SHIPPED_S69 = "experiments/candidates/h200-s68.yaml"  # 5af72bc3: no column rule
COLUMN_S70 = "experiments/candidates/h200-s69.yaml"  # 646a9315: 16 column rules, rows 132..1590


def test_stop_70_no_column_rule_holds_at_the_2048_token_steps_and_the_lines_name_those_that_would():
    lines = model_launches.compare(SHIPPED_S69, COLUMN_S70, "db/models-h200-s69.sqlite",
                                   ["llama-2048-t2048", "gpt2-1024-t2048"])
    assert lines[0] == "unsplit: DIFFER"
    held = [line for line in lines if "column unsplit rules holding at" in line]
    assert len(held) == 4 and all(line.endswith("holding at 2048 rows: none") for line in held)
    assert sum(line.endswith("the same launch configs at every key") for line in lines) == 2
    # At 400 tokens four would hold; the one of rows 352..384 ends below.
    column = heuristics.load(COLUMN_S70)
    assert model_launches.column_rules_at(column, 400) == [
        "279..410 x 150..229", "346..470 x 592..953", "267..470 x 4379..5968", "266..462 x 8207..8444"]
    assert model_launches.column_rules_at(heuristics.load(SHIPPED_S69), 400) == []
