"""`inductor-tune patch` against torch's sources: the diff applies to a pristine copy of the installed torch
and shows each hook and rule; versions it does not know, sources whose anchors moved, files without config
rules and already patched trees are refused in one line; no hook rebinds a name of its host function."""

import ast
import os
import re
import shutil
import subprocess
import sys

import distill_fixtures as fx
import pytest
import torch
from patch_fixtures import CODEGEN, HOOKED, INSTALLED, NEW_FILES, SIMD, h200_with_rules
from patch_fixtures import pristine as _pristine

from inductor_tune import cli
from inductor_tune import patch as patch_mod
from inductor_tune.heuristics import RuleSpec


@pytest.fixture(scope="module")
def heur():
    return h200_with_rules()


def test_patch_applies_cleanly_to_a_pristine_copy_of_the_installed_torch(heur, tmp_path):
    text, version = patch_mod.generate(heur)  # against the installed torch itself
    assert version == torch.__version__
    root = _pristine(tmp_path / "torch-copy")
    path = tmp_path / "h.patch"
    path.write_text(text)
    git = subprocess.run(["git", "apply", "--check", str(path)], cwd=root, capture_output=True, text=True)
    assert git.returncode == 0, git.stderr
    if shutil.which("patch"):
        gnu = subprocess.run(["patch", "-p1", "--dry-run", "-i", str(path)], cwd=root, capture_output=True, text=True)
        assert gnu.returncode == 0, gnu.stdout + gnu.stderr
    assert text.count("diff --git") == len(NEW_FILES) + len(HOOKED) and text.count("new file mode") == len(NEW_FILES)
    assert sorted(re.findall(r"^diff --git a/(\S+) ", text, re.M)) == sorted([*NEW_FILES, *HOOKED])


def test_each_hook_is_readable_in_its_hunk_and_the_table_shows_the_rules(heur):
    text, _ = patch_mod.generate(heur)
    for name in ("persistent_decision", "looped_config", "persistent_config", "mix_order_config", "mix_order_split_size",
                 "reduction_signature"):
        assert re.search(rf"^\+.*\b{name}\(", text, re.M), name
    assert re.search(r'^\+.*\["reduction_signature"\] = ', text, re.M)  # the meta entry the codegen hook writes
    for spec, rule in zip([r for r in heur.rules if r.config], heur.table().rules):
        assert f"Rule(kind={rule.kind!r}, element_size=2, rnumel={rule.rnumel!r}" in text
        fused = f" ({spec.reductions})" if spec.reductions else ""
        assert f"# {spec.kind}{fused}, rnumel {spec.rnumel[0]}..{spec.rnumel[1]}:" in text
        if spec.reductions:  # the table line itself names the signature the rule keys on
            line = rf"^\+ +Rule\(kind={rule.kind!r}, .*reductions={re.escape(repr(spec.reductions))}\),$"
            assert re.search(line, text, re.M), spec.describe()
    assert "capability=90" in text and "sm_count=132" in text


def test_unsupported_torch_version_is_refused_in_one_line(heur, tmp_path):
    root = _pristine(tmp_path)
    version_py = os.path.join(root, "torch", "version.py")
    text = open(version_py).read()
    for refused in ("2.12.0", "2.15.0", "2.10.2"):
        open(version_py, "w").write(re.sub(r"__version__ = '[^']+'", f"__version__ = '{refused}'", text))
        with pytest.raises(patch_mod.PatchError, match=rf"^torch {refused} is not supported: .*2\.11, 2\.13 and 2\.14$"):
            patch_mod.generate(heur, root)


_META_213 = 'out["RSPLIT_SIZE"] = self.rsplit_size'
_META_211 = 'inductor_meta["RSPLIT_SIZE"] = self.rsplit_size'


@pytest.mark.parametrize("path, old, new", [
    (SIMD, "return config.triton.mix_order_reduction_split_size", "return None"),
    (CODEGEN, _META_213, 'out["RSPLIT"] = self.rsplit_size'),  # neither torch version's meta anchor
])
def test_source_that_lost_an_anchor_is_refused_naming_the_file(heur, tmp_path, path, old, new):
    root = _pristine(tmp_path)
    text = open(os.path.join(root, path)).read()
    assert text.count(old) == 1
    open(os.path.join(root, path), "w").write(text.replace(old, new))
    with pytest.raises(patch_mod.PatchError) as err:
        patch_mod.generate(heur, root)
    assert f"{path} does not match" in str(err.value) and "\n" not in str(err.value)


def test_the_signature_hook_follows_each_torch_versions_inductor_meta(heur, tmp_path):
    """torch 2.13 builds a kernel's meta in inductor_meta_per_kernel (``out``), 2.11 inline in
    codegen_kernel (``inductor_meta``); a source holding both anchors is ambiguous and refused."""
    root = _pristine(tmp_path)
    path = os.path.join(root, CODEGEN)
    text = open(path).read()
    assert _META_213 in text and _META_211 not in text  # the installed torch is 2.13 or 2.14
    hunk = lambda diff: diff.split(f"diff --git a/{CODEGEN}")[1].split("diff --git")[0]  # noqa: E731
    assert '+            out["reduction_signature"] = ' in hunk(patch_mod.generate(heur, root)[0])
    open(path, "w").write(text.replace(_META_213, _META_211))  # the 2.11 form of the same lines
    assert '+            inductor_meta["reduction_signature"] = ' in hunk(patch_mod.generate(heur, root)[0])
    open(path, "w").write(text + "\n" + text.split("def inductor_meta_per_kernel")[1].replace(_META_213, _META_211))
    with pytest.raises(patch_mod.PatchError, match=r"codegen/triton\.py does not match .* found 2 times"):
        patch_mod.generate(heur, root)


def test_keep_default_only_file_and_already_patched_tree_are_refused(heur, tmp_path):
    keep = fx.with_rules(heur, RuleSpec("inner_looped", 2, (2048, 2048), (8192, 32768), None))
    with pytest.raises(patch_mod.PatchError, match="nothing to patch"):
        patch_mod.generate(keep, _pristine(tmp_path / "keep"))
    root = _pristine(tmp_path / "patched")
    (tmp_path / "h.patch").write_text(patch_mod.generate(heur, root)[0])
    subprocess.run(["git", "apply", str(tmp_path / "h.patch")], cwd=root, check=True)
    with pytest.raises(patch_mod.PatchError, match="already patched"):
        patch_mod.generate(heur, root)


def test_cli_patch_writes_the_file_and_reports_errors_in_one_line(heur, tmp_path, capsys):
    from inductor_tune.heuristics import dump

    hfile = tmp_path / "h.yaml"
    dump(heur, str(hfile))
    out = tmp_path / "patches" / "x.patch"
    assert cli.main(["patch", str(hfile), "--out", str(out)]) == 0
    assert out.read_text() == patch_mod.generate(heur)[0]
    root = _pristine(tmp_path / "old")
    version_py = os.path.join(root, "torch", "version.py")
    open(version_py, "w").write("__version__ = '2.9.1'\n")
    before = out.read_text()
    assert cli.main(["patch", str(hfile), "--out", str(out), "--torch-root", root]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["inductor-tune: error: torch 2.9.1 is not supported: inductor_tune knows the Inductor "
                   "sources of torch 2.11, 2.13 and 2.14"]
    assert out.read_text() == before  # an error never touches an existing output


def _assigned(code: str) -> set[str]:
    """Names a hook's code binds in the function it is inserted into (assignments, walrus, imports)."""
    import textwrap

    names = set()
    for node in ast.walk(ast.parse(textwrap.dedent(code))):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name)
    return names


def test_no_hook_rebinds_a_name_of_the_function_it_sits_in():
    """A hook binding a local its host function uses later breaks every compile (seen on the H200: a
    `signature` in 2.11's codegen_kernel); only `configs`, the list a config hook replaces, may be."""
    root = patch_mod.installed_torch_root()
    checked = 0
    for hook in patch_mod.hooks_for(INSTALLED):
        with open(os.path.join(root, hook.path)) as fh:
            source = fh.read()
        for anchor, code in hook.choices():
            if source.count(anchor) != 1:
                continue  # the other torch version's anchor
            line = source[: source.index(anchor) + len(anchor)].count("\n")  # the hook's first line, 0-based
            tree = ast.parse(source)
            host = min((f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and f.lineno <= line <= f.end_lineno), key=lambda f: f.end_lineno - f.lineno,
                       default=tree)  # an import at module level: the module's own names
            used = {n.id for n in ast.walk(host) if isinstance(n, ast.Name)}
            used |= {a.arg for a in ast.walk(host) if isinstance(a, ast.arg)}
            clash = (_assigned(code) & used) - {"configs"}
            assert not clash, f"{hook.what}: the hook rebinds {sorted(clash)} of {getattr(host, 'name', hook.path)}"
            checked += 1
    assert checked == len(patch_mod.hooks_for(INSTALLED))


@pytest.mark.parametrize("gpu", ["h200", "h100"])
def test_the_committed_patch_is_what_patch_makes_from_the_shipped_file(gpu, tmp_path):
    """A reviewer reads `patches/`; a shipped file refitted without its patches regenerated would propose
    rules that no longer ship (stop 89 shipped 715d722d and regenerated the H100's three)."""
    committed = os.path.join(fx.ROOT, "patches", f"{gpu}-torch{torch.__version__.split('+')[0]}.patch")
    if not os.path.exists(committed):
        pytest.skip(f"no committed patch for torch {torch.__version__}")
    with open(committed) as fh:
        text = fh.read()
    if f"against torch {torch.__version__}." not in text.splitlines()[0]:
        pytest.skip(f"{os.path.basename(committed)} was made against another build than torch {torch.__version__}")
    out = tmp_path / "made.patch"
    proc = subprocess.run([sys.executable, "-m", "inductor_tune", "patch", os.path.join("heuristics", f"{gpu}.yaml"),
                           "--out", str(out)], capture_output=True, text=True, cwd=fx.ROOT)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == text
