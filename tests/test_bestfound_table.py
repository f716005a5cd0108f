"""experiments/bestfound_table.py reads recorded validations as `validate` itself summarized them."""

import subprocess
import sys


def test_the_table_agrees_with_what_validate_printed_for_the_same_records():
    # The H200 set-10 run printed "geomean 0.914, worst 0.914" for nn_layernorm_train_fwd 4x46331 and
    # "geomean 0.988" over its 16 problems (docs/runs/2026-11-24-h200-bestfound10-validate.log).
    out = subprocess.run([sys.executable, "experiments/bestfound_table.py", "db/bestfound10-validate.sqlite"],
                         capture_output=True, text=True, check=True).stdout
    assert "| nn_layernorm_train_fwd 4x46331 | default kept | 0.978 | 1.071 | 0.914 | same |" in out
    assert ("16 problems, heuristics 75d3df6d: rules / best found geomean 0.988, worst 0.914; "
            "rules applied at 1") in out
    with open("docs/runs/2026-11-24-h200-bestfound10-validate.log") as log:
        assert "geomean 0.914, worst 0.914 over 1 shape(s)" in log.read()


def test_a_database_without_validations_is_one_line(tmp_path):
    from inductor_tune.store import Store

    Store(f"sqlite:///{tmp_path}/empty.sqlite")
    proc = subprocess.run([sys.executable, "experiments/bestfound_table.py", f"{tmp_path}/empty.sqlite"],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stderr.strip() == f"no validation records in {tmp_path}/empty.sqlite"


def test_inductors_own_picks_are_compared_where_no_rule_applied():
    # Stop 36, H200 (db/variance-s36.sqlite, third run): at nn_rmsnorm_train_fwd 64x87714 Inductor's two compiles
    # launched its second-stage persistent reduction with XBLOCK 32 and XBLOCK 8; the other two problems matched.
    out = subprocess.run([sys.executable, "experiments/bestfound_table.py", "db/variance-s36.sqlite"],
                         capture_output=True, text=True, check=True).stdout
    assert "| nn_rmsnorm_train_fwd 64x87714 | default kept | 1.009 | 1.000 | 1.009 | differ: per |" in out
    assert "| rmsnorm_fwd 1235x8900 | default kept | 0.991 | 1.095 | 0.905 | same |" in out
    assert out.rstrip().endswith("Inductor's own picks differed between its two compiles at 1 of the 3 problems "
                                 "no rule touched")
