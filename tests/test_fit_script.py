"""experiments/fits/fit.sh makes the shipped H200 file again from its fit list (CPU, about 90 s on two cores).

cd6c1b3d (shipped at stop 75) is the fit list experiments/fits/h200-s72.txt (fill 27 and span round 33) plus the
column rules of the three training A/Bs of experiments/unsplit/probe-outer.yaml, which fit.sh reads from LIST.outer.
c3c6844b (shipped at stops 76-78, experiments/candidates/h200-s76-nocolumn.yaml) is cd6c1b3d with those column rules
withdrawn (`unsplit_fit.py withdraw --outer`, stop 76); 7a705457 (shipped at stops 79-81) is c3c6844b with the
every-win column fit of tests/test_unsplit.py, e75e39bd (stops 82-83) is 7a705457 with the end-to-end
split-autotune entries of tests/test_mix_e2e.py in place of its earlier ones, and the shipped 86f2b08c (since stop 84)
is e75e39bd with three sweeping entries added. A refit is only comparable with them where the same script and
databases still give their digests."""

import os
import shutil
import subprocess
import sys

import distill_fixtures as fx

from inductor_tune.runtime.rulefile import load

FITS = os.path.join(fx.ROOT, "experiments", "fits")


def test_the_shipped_h200_base_is_its_fit_list_with_the_column_rules_withdrawn(tmp_path):
    for suffix in (".txt", ".unsplit", ".typed", ".outer"):
        shutil.copy(os.path.join(FITS, "h200-s72" + suffix), tmp_path / ("list" + suffix))
    out = tmp_path / "fit.yaml"
    proc = subprocess.run(["bash", os.path.join(FITS, "fit.sh"), str(tmp_path / "list.txt"), str(out)],
                          capture_output=True, text=True, cwd=fx.ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert load(str(out)).digest().startswith("cd6c1b3d")
    withdrawn = tmp_path / "withdrawn.yaml"
    proc = subprocess.run([sys.executable, os.path.join(fx.ROOT, "experiments", "unsplit_fit.py"), "withdraw",
                           str(out), "--outer", "--why", "test", "--out", str(withdrawn)],
                          capture_output=True, text=True, cwd=fx.ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    base = load(os.path.join(fx.ROOT, "experiments", "candidates", "h200-s76-nocolumn.yaml"))
    assert load(str(withdrawn)).digest() == base.digest()
    assert not any(u.outer for u in base.unsplit)
    # The shipped file adds only column rules to that base, and has its own split-autotune entries.
    shipped = load(os.path.join(fx.ROOT, "heuristics", "h200.yaml"))
    assert shipped.rules == base.rules and all(e.end_to_end for e in shipped.mix_autotune)
    assert [u for u in shipped.unsplit if not u.outer] == list(base.unsplit)
