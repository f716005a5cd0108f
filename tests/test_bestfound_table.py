"""experiments/bestfound_table.py reads recorded validations as `validate` itself summarized them."""

import subprocess
import sys


def test_the_table_agrees_with_what_validate_printed_for_the_same_records():
    # The H200 set-10 run printed "geomean 0.914, worst 0.914" for nn_layernorm_train_fwd 4x46331 and
    # "geomean 0.988" over its 16 problems (docs/runs/2026-11-24-h200-bestfound10-validate.log).
    out = subprocess.run([sys.executable, "experiments/bestfound_table.py", "db/bestfound10-validate.sqlite"],
                         capture_output=True, text=True, check=True).stdout
    assert "| nn_layernorm_train_fwd 4x46331 | default kept | 0.978 | 1.071 | 0.914 |" in out
    assert out.rstrip().endswith("16 problems, heuristics 75d3df6d: rules / best found geomean 0.988, worst 0.914; "
                                 "rules applied at 1")
    with open("docs/runs/2026-11-24-h200-bestfound10-validate.log") as log:
        assert "geomean 0.914, worst 0.914 over 1 shape(s)" in log.read()


def test_a_database_without_validations_is_one_line(tmp_path):
    from inductor_tune.store import Store

    Store(f"sqlite:///{tmp_path}/empty.sqlite")
    proc = subprocess.run([sys.executable, "experiments/bestfound_table.py", f"{tmp_path}/empty.sqlite"],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stderr.strip() == f"no validation records in {tmp_path}/empty.sqlite"
