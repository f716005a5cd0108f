"""`inductor-tune demo`: the whole pipeline on a CPU, replayed from the committed H200 sweeps."""

import subprocess
import sys

import fast_yaml

from inductor_tune.store import Store


def test_demo_runs_end_to_end_and_labels_everything_replayed(tmp_path):
    out = tmp_path / "demo"
    proc = subprocess.run([sys.executable, "-m", "inductor_tune", "demo", "--out", str(out), "--trials", "8"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "nothing measured here" in proc.stdout
    for name in ("demo.yaml", "demo.sqlite", "heuristics.yaml", "report/index.html", "demo.patch"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    studies = Store(f"sqlite:///{out / 'demo.sqlite'}", create=False).studies()
    assert len(studies) == 6 and all(s.replayed and s.name.endswith("/replay") for s in studies)
    heur = fast_yaml.safe_load((out / "heuristics.yaml").read_text())
    assert heur["provenance"]["parameters"]["allow_replayed"] is True
    assert heur["gpu"]["fingerprint"].endswith("/replay")
    assert "diff --git a/torch/_inductor/" in (out / "demo.patch").read_text()
    assert "<html" in (out / "report" / "index.html").read_text()[:2000].lower()
