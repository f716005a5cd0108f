"""experiments/audit_rules.py: a heuristic file checked again against evidence timed after its fit, and the configs
that lose there withdrawn (CPU, on the committed H100 databases)."""

import os
import shutil
import sys

import pytest

from inductor_tune import heuristics

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "experiments"))
import audit_rules  # noqa: E402
import fit_loo  # noqa: E402

D7915D43 = os.path.join(ROOT, "experiments", "candidates", "h100-s91.yaml")
AUDITED = os.path.join(ROOT, "experiments", "candidates", "h100-s91-audited.yaml")
WHY = ("audit of d7915d43 against experiments/fits/h100-s92.txt, whose fill 1 and span round 3 (stop 94) timed it at "
       "shapes its fit had not, docs/rules.md stop 94")


@pytest.fixture(scope="module")
def later_evidence():
    cwd = os.getcwd()
    os.chdir(ROOT)  # the fit lists name their databases from the repository root
    try:
        yield fit_loo.load("experiments/fits/h100-s92.txt", "H100", "H200")
    finally:
        os.chdir(cwd)


def test_a_file_passes_on_its_own_evidence_and_the_later_rounds_find_what_it_loses(later_evidence):
    heur = heuristics.load(D7915D43)
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        own = fit_loo.load("experiments/fits/h100-s91.txt", "H100", "H200")
    finally:
        os.chdir(cwd)
    failures, held, _ = audit_rules.audit(heur, own)
    assert failures == {} and held > 2000  # distill adopts no config that loses at a shape it read
    failures, _, _ = audit_rules.audit(heur, later_evidence)
    lost = sorted((ratio, p.label) for found in failures.values() for p, ratio in found)
    assert len(failures) == 8 and len(lost) == 18
    assert lost[0] == (pytest.approx(0.859, abs=5e-4), "prenorm_rmsnorm_bwd 37474x754 bf16 (probe)")


def test_the_withdrawn_file_keeps_every_other_rule_and_loses_nowhere(later_evidence, tmp_path):
    heur = heuristics.load(D7915D43)
    failures, _, _ = audit_rules.audit(heur, later_evidence)
    kept = audit_rules.withdraw(heur, failures, WHY)
    assert kept.digest() == heuristics.load(AUDITED).digest()  # the committed file is this withdrawal
    assert audit_rules.audit(kept, later_evidence)[0] == {}
    for i, (before, after) in enumerate(zip(heur.rules, kept.rules)):
        if i in failures:
            assert after.config is None and "withdrawn: slower than the default" in after.evidence.note
        else:
            assert after == before
    assert kept.mix_autotune == heur.mix_autotune and kept.provenance["withdrawn"][-1]["why"] == WHY


def test_withdraw_never_writes_over_the_file_it_audits(tmp_path, capsys):
    target = tmp_path / "h100.yaml"
    shutil.copy(D7915D43, target)
    before = target.read_bytes()
    args = [str(target), "experiments/fits/h100-s92.txt", "--gpu", "H100", "--candidates-from", "H200"]
    assert audit_rules.main([*args, "--withdraw", str(target), "--why", "x"]) == 2
    assert audit_rules.main([*args, "--withdraw", str(tmp_path / "out.yaml")]) == 2
    assert target.read_bytes() == before and not (tmp_path / "out.yaml").exists()
    missing = tmp_path / "list.txt"
    missing.write_text("# a fit list\n#\ndb/no-such.sqlite\n")
    assert audit_rules.main([str(target), str(missing), "--gpu", "H100"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["audit_rules.py: error: --withdraw would write over the file it audits",
                   "audit_rules.py: error: --withdraw needs --why",
                   "audit_rules.py: error: no database at db/no-such.sqlite"]
