"""No heuristic file, and no ``Heuristics`` built in code, puts code into a generated patch.

Texts of a heuristic file reach the generated torch module (docstring, comments, the rule table) and
the diff's header, which ``git apply`` reads as commentary up to the first "diff --git" line.  A file
holding a line break, a quote or a backslash in those texts is refused when it is read; a
``Heuristics`` built in code with such values is refused by the generator (``PatchError``).
"""

import ast
import dataclasses
import inspect
import os
import subprocess
import sys

import fast_yaml
import pytest

from inductor_tune import cli, heuristics, torch_rules
from inductor_tune import patch as patch_mod
from inductor_tune.heuristics import HeuristicsError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
H200 = os.path.join(ROOT, "heuristics", "h200.yaml")
INJECTED = "\nimport os\nos.system('touch /tmp/pwned')\n"


@pytest.fixture(scope="module")
def heur():
    return heuristics.load(H200)


def _doc():
    return fast_yaml.safe_load(open(H200))


def _signed_rule(doc) -> dict:
    return next(r for r in doc["rules"] if r.get("reductions") and r.get("action") == "config")


@pytest.mark.parametrize("where", ["reductions", "gpu name", "fingerprint", "torch"])
def test_a_file_with_code_in_its_texts_is_refused_at_load_in_one_line(tmp_path, capsys, where):
    doc = _doc()
    if where == "reductions":
        _signed_rule(doc)["reductions"] = "sum" + INJECTED
    else:
        doc["gpu"][{"gpu name": "name"}.get(where, where)] = "NVIDIA H200" + INJECTED
    path = tmp_path / "h.yaml"
    path.write_text(fast_yaml.safe_dump(doc))
    with pytest.raises(HeuristicsError):
        heuristics.load(str(path))
    out = tmp_path / "x.patch"
    assert cli.main(["patch", str(path), "--out", str(out)]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("inductor-tune: error: "), lines
    assert not out.exists()


def test_the_refusal_is_one_line_on_the_real_stderr_too(tmp_path):
    doc = _doc()
    doc["gpu"]["name"] = "NVIDIA H200" + INJECTED
    (tmp_path / "h.yaml").write_text(fast_yaml.safe_dump(doc))
    proc = subprocess.run([sys.executable, "-m", "inductor_tune", "patch", str(tmp_path / "h.yaml"), "--out",
                           str(tmp_path / "x.patch")], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("inductor-tune: error: ") and "Traceback" not in proc.stderr
    assert not (tmp_path / "x.patch").exists()


@pytest.mark.parametrize("field, value", [
    ("sm_count", -1), ("sm_count", 0), ("sm_count", True), ("compute_capability", "9"),
    ("compute_capability", "sm90"), ("name", ""), ("fingerprint", 'a"b'), ("triton", "3.6\\n"),
])
def test_gpu_fields_are_checked_on_load(tmp_path, field, value):
    doc = _doc()
    doc["gpu"][field] = value
    (tmp_path / "h.yaml").write_text(fast_yaml.safe_dump(doc))
    with pytest.raises(HeuristicsError, match="gpu"):
        heuristics.load(str(tmp_path / "h.yaml"))


def _template_shape():
    source = inspect.getsource(torch_rules)
    return [type(n).__name__ + ":" + getattr(n, "name", "") for n in ast.parse(source).body][1:], source


def _rule_with(heur, **changes):
    specs = [r for r in heur.rules if r.config is not None]
    return dataclasses.replace(heur, rules=(dataclasses.replace(specs[0], **changes), *specs[1:]))


INJECTIONS = {
    "gpu name": lambda h: dataclasses.replace(h, gpu=dataclasses.replace(h.gpu, name="H200" + INJECTED)),
    "gpu name closing the docstring": lambda h: dataclasses.replace(
        h, gpu=dataclasses.replace(h.gpu, name='H200"""\nimport os\n"""')),
    "fingerprint": lambda h: dataclasses.replace(h, gpu=dataclasses.replace(h.gpu, fingerprint="fp" + INJECTED)),
    "sm_count as code": lambda h: dataclasses.replace(
        h, gpu=dataclasses.replace(h.gpu, sm_count="132,\n    rules=())\nimport os\nX = dict(a=(1")),
    "compute capability": lambda h: dataclasses.replace(
        h, gpu=dataclasses.replace(h.gpu, compute_capability="9.0" + INJECTED)),
    "reductions": lambda h: _rule_with(h, reductions="sum" + INJECTED),
    "reductions closing the string": lambda h: _rule_with(h, reductions="sum')\nimport os\n('"),
    "envelopes": lambda h: _rule_with(h, envelopes=("x=1" + INJECTED,)),
    "inductor default in the evidence": lambda h: _rule_with(
        h, evidence=dataclasses.replace(h.rules[0].evidence, inductor_default=("x" + INJECTED,))),
}


@pytest.mark.parametrize("what", list(INJECTIONS))
def test_rules_module_sanitises_or_refuses_never_adds_statements(heur, what):
    bad = INJECTIONS[what](heur)
    try:
        module = patch_mod.rules_module(bad, "2.13.0")
    except patch_mod.PatchError:
        return
    names, _ = _template_shape()
    tree = ast.parse(module)
    assert [type(n).__name__ + ":" + getattr(n, "name", "") for n in tree.body][1:] == names
    assert _imports(tree) == _imports(ast.parse(inspect.getsource(torch_rules)))
    # Anything left of the injected text is inside a comment or a string constant, never code.
    assert not any(isinstance(n, ast.Attribute) and n.attr == "system" for n in ast.walk(tree))


def _imports(tree) -> list[str]:
    return sorted(a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names)


@pytest.mark.parametrize("what", ["gpu name", "fingerprint", "gpu name closing the docstring"])
def test_the_diff_header_never_starts_another_file(heur, what):
    bad = INJECTIONS[what](heur)
    bad = dataclasses.replace(bad, gpu=dataclasses.replace(
        bad.gpu, **{"name" if "name" in what else "fingerprint": "H200\ndiff --git a/evil.py b/evil.py"}))
    try:
        text, _ = patch_mod.generate(bad)
    except patch_mod.PatchError:
        return
    expected = 1 + len({hook.path for hook in patch_mod.HOOKS})
    assert sum(line.startswith("diff --git") for line in text.splitlines()) == expected
    assert "evil.py" not in text


def test_the_committed_files_still_load_and_generate(heur):
    names, _ = _template_shape()
    module = patch_mod.rules_module(heur, "2.13.0")
    assert [type(n).__name__ + ":" + getattr(n, "name", "") for n in ast.parse(module).body][1:] == names
    assert heuristics.load(os.path.join(ROOT, "heuristics", "h200-holdout.yaml")).gpu == heur.gpu
