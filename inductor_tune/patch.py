"""Unified diffs that build distilled rules into an installed torch (``inductor-tune patch``).

The patch adds ``torch/_inductor/runtime/distilled_reduction_rules.py`` (the text of
``inductor_tune.runtime.torch_rules`` with the rule table written out, one commented line of evidence per
rule) and one small hook at each place Inductor makes a decision the rules cover:

* ``choices.py``, ``InductorChoices.should_use_persistent_reduction``: the persistent threshold;
* the launch config of looped, persistent and fused mix-order kernels: up to torch 2.13 hooks in
  ``runtime/triton_heuristics.py``'s ``reduction`` and ``persistent_reduction``, from 2.14 on a reduction
  heuristic registered with Inductor's heuristics registry (``patch_hooks.REGISTRY_MODULE``);
* ``codegen/simd.py``, ``_codegen_mix_order_reduction``: the mix-order split size;
* ``codegen/triton.py``, where a kernel's ``inductor_meta`` is built: the kernel's signature (the
  reductions it fuses, forward or backward graph), which the rules key on and the config functions
  cannot see otherwise.

Every hook returns to Inductor's own code when the rules module says None, which it does on any GPU
but the one the rules were measured on.  The hooks (``patch_hooks``) are anchored on source snippets
checked against each torch of ``runtime.versions.SUPPORTED_TORCH``; a source without them exactly once
is refused rather than patched blindly.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.util
import inspect
import os
import re

from .patch_hooks import HOOKS, REGISTRY_MODULE, REGISTRY_PATH, RULES_PATH, Hook, hooks_for  # noqa: F401
from .runtime import torch_rules, versions
from .runtime.rulefile import _is_signature, gpu_problem
from .runtime.rules import Heuristics


class PatchError(RuntimeError):
    """A torch tree the generator cannot patch safely; the message is one line."""


def installed_torch_root() -> str:
    """The folder holding the installed ``torch`` package (found without importing it)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise PatchError("torch is not installed here; pass --torch-root")
    return os.path.dirname(list(spec.submodule_search_locations)[0])


def torch_version(root: str) -> str:
    try:
        with open(os.path.join(root, "torch", "version.py")) as fh:
            found = re.search(r"^__version__\s*=\s*['\"]([^'\"\n]+)['\"]", fh.read(), re.M)
    except (OSError, UnicodeDecodeError):
        found = None
    if not found:
        raise PatchError(f"{root} holds no torch/version.py with a __version__; not a torch tree")
    return found.group(1)


def check_version(version: str) -> tuple[int, int]:
    """The (major, minor) of a torch the generator knows the sources of; PatchError for any other."""
    found = versions.version_tuple(version)
    if found is None:
        raise PatchError(f"torch version {version!r} is not like 2.13.0; not a torch tree the generator knows")
    problem = versions.refusal(version)
    if problem:
        raise PatchError(problem)
    return found


def check_data(heur: Heuristics) -> None:
    """Refuse what ``heuristics.parse`` would refuse, for a ``Heuristics`` built in code: the texts that
    reach the generated module and the diff's header, and the rules' signatures and envelopes."""
    problem = gpu_problem(heur.gpu)
    if problem:
        raise PatchError(f"the heuristics' gpu {problem}; refusing to write a patch")
    for rule in heur.rules:
        if rule.reductions is not None and not _is_signature(rule.reductions):
            raise PatchError(f"rule reductions {rule.reductions!r} is not a reduction signature; refusing to write a patch")
        if not all(isinstance(e, str) and text_ok(e) for e in rule.envelopes):
            raise PatchError(f"rule envelopes {list(rule.envelopes)!r} are not envelope texts; refusing to write a patch")
        spans = (*(rule.rows or ()), *(rule.cols or ()), *(v for span in rule.aligned_cols for v in span),
                 *(v for vertex in rule.odd_hull for v in vertex))
        if not all(type(v) is int for v in spans) or not all(len(span) == 4 for span in rule.aligned_cols) \
                or not all(len(vertex) == 2 for vertex in rule.odd_hull):
            raise PatchError(f"rule spans {rule.rows!r}, {rule.cols!r}, {rule.aligned_cols!r}, {rule.odd_hull!r} are "
                             "not whole numbers; refusing to write a patch")
    for spec in heur.unsplit:
        if not all(_is_signature(sig) and isinstance(env, str) and text_ok(env) for sig, env in spec.kernels):
            raise PatchError(f"unsplit kernels {list(spec.kernels)!r} are not signatures and envelope texts; refusing "
                             "to write a patch")
        if not all(_is_signature(t) and "+" not in t for t in spec.reduction_types):
            raise PatchError(f"unsplit reduction types {list(spec.reduction_types)!r} are not reduction type names; "
                             "refusing to write a patch")
        if not all(type(v) is int for v in (*spec.rows, *spec.cols)):
            raise PatchError(f"unsplit spans {spec.rows!r}, {spec.cols!r} are not whole numbers; refusing to write a patch")
        if type(spec.outer) is not bool:
            raise PatchError(f"unsplit kind {spec.outer!r} is not true or false; refusing to write a patch")


def _rule_source(rule) -> str:
    fields = ", ".join(f"{f.name}={getattr(rule, f.name)!r}" for f in dataclasses.fields(rule)
                       if getattr(rule, f.name) != f.default or f.default is dataclasses.MISSING)
    return f"Rule({fields})"


def text_ok(text: str) -> bool:
    return text.isascii() and text.isprintable() and not set(text) & set("\"'\\")


def rules_module(heur: Heuristics, torch_version_text: str) -> str:
    """torch_rules' source with the heuristic file's config rules as its table."""
    check_data(heur)
    if not text_ok(torch_version_text):
        raise PatchError(f"torch version {torch_version_text!r} is not plain text; refusing to write a patch")
    source = inspect.getsource(torch_rules)
    table = heur.table()
    lines = [
        "TABLE = Table(",
        f"    gpu={table.gpu!r},",
        f"    capability={table.capability},  # compute capability {heur.gpu.compute_capability}",
        f"    sm_count={table.sm_count},",
        "    rules=(",
    ]
    for spec in heur.unsplit:
        for rule in spec.launch_rules():
            lines.append(_comment(f"the one kernel of the unsplit rule below, rows {spec.rows[0]}..{spec.rows[1]}, "
                                  f"N {spec.cols[0]}..{spec.cols[1]}: the config its A/B measured"))
            lines.append(f"        {_rule_source(rule)},")
    specs = [r for r in heur.rules if r.config is not None]
    for spec, rule in zip(specs, table.rules[len(heur.unsplit_launch_rules()):]):
        ev = spec.evidence
        gain = (f"{ev.gain_min:.2f}-{ev.gain_max:.2f}x (geomean {ev.gain_geomean:.2f}x) over Inductor's default at "
                f"{len(ev.measured)} of {len(ev.shapes)} shapes, noise {100 * (ev.noise or 0):.1f}%"
                if ev.gain_geomean is not None else "no measured gain recorded")
        fused = f" ({spec.reductions})" if spec.reductions else ""
        lines.append(_comment(f"{spec.kind}{fused}, rnumel {spec.rnumel[0]}..{spec.rnumel[1]}: {gain}"))
        for default in ev.inductor_default[:2]:
            lines.append(_comment(f"Inductor's default there: {default}"))
        lines.append(f"        {_rule_source(rule)},")
    lines.append("    ),")
    if table.unsplit:
        lines.append("    unsplit=(")
        for spec, rule in zip(heur.unsplit, table.unsplit):
            ev = spec.evidence
            lines.append(_comment(f"one kernel: {ev.gain_min or 0:.2f}-{ev.gain_max or 0:.2f}x (geomean "
                                  f"{ev.gain_geomean or 0:.2f}x) over Inductor's split at {len(ev.measured)} shapes"))
            typed = f", reduction_types={tuple(rule.reduction_types)!r}" if rule.reduction_types else ""
            typed += ", outer=True" if rule.outer is True else ""
            lines.append(f"        UnsplitRule(rows={tuple(rule.rows)!r}, cols={tuple(rule.cols)!r}{typed}),")
        lines.append("    ),")
    lines.append(")")
    placeholder = 'TABLE = Table(gpu="none", capability=None, sm_count=None, rules=())'
    if source.count(placeholder) != 1:
        raise AssertionError("torch_rules has lost its TABLE placeholder")
    databases = ", ".join(heur.provenance.get("databases", [])) or "see the heuristic file"
    header = (
        f'"""Reduction launch configs distilled by inductor-tune for {_plain(heur.gpu.name)} '
        f"(sm{int(heur.gpu.cc)}, {int(heur.gpu.sm_count)} SMs).\n\n"
        f"Measured with {_plain(heur.gpu.fingerprint)}; patched into torch {_plain(torch_version_text)}.\n"
        f"Studies: {_plain(databases)}.\n"
        f"{_not_carried(heur)}"
        "On any other GPU every lookup returns None and Inductor keeps its own heuristics.\n"
        '"""\n\n'
    )
    body = source.split('"""', 2)[2].lstrip("\n")  # drop the template's own docstring
    module = header + body.replace(placeholder, "\n".join(lines))
    _check_module(module, source)
    return module


def _not_carried(heur: Heuristics) -> str:
    """Lines saying what of the file the patch leaves out, or ''.  The split-autotune entries (``mix_autotune``)
    need a hook around Inductor's split autotuner that the patched sources do not have yet; without them the patched
    torch keeps Inductor's own split there, as ``install`` does outside the entries."""
    count, entries = len(heur.mix_autotune), len(heur.multi_kernel)
    split = (f"Not in this patch: the file's {count} split-autotune entries (mix_autotune); inductor_tune.install "
             "applies them, and here Inductor keeps its own split for those kernels.\n") if count else ""
    # A multi-kernel entry needs a hook around TritonScheduling.add_multi_kernel_choices (runtime/multi_kernel.py)
    # that the patched sources do not have yet; without it the file's config rules apply there, as they do where no
    # entry covers a kernel.
    return split + (f"Not in this patch: the file's {entries} multi-kernel entries (multi_kernel); "
                    "inductor_tune.install applies them, and here the config rules and Inductor's own configs apply "
                    "to those kernels.\n" if entries else "")


def _plain(text: str) -> str:
    """Text from a heuristic file as it may stand in the generated module's docstring: no quotes,
    backslashes or line breaks (a value that could end the docstring never reaches the patch)."""
    return re.sub(r"[^A-Za-z0-9 ._:,()@+/=-]", "?", str(text))


def _comment(text: str) -> str:
    return "        # " + _plain(text)


def _check_module(module: str, template: str) -> None:
    """The generated module must parse and hold exactly the template's definitions plus literal rules:
    a heuristic file supplies data, never code."""
    import ast

    try:
        tree = ast.parse(module)
    except SyntaxError as exc:
        raise PatchError(f"the generated rules module does not parse ({exc.msg}); refusing to write a patch") from None
    names = lambda t: [type(node).__name__ + ":" + getattr(node, "name", "") for node in t.body]  # noqa: E731
    if names(tree)[1:] != names(ast.parse(template))[1:]:
        raise PatchError("the generated rules module has statements the template lacks; refusing to write a patch")
    table = next(node for node in tree.body if isinstance(node, ast.Assign)
                 and any(getattr(t, "id", None) == "TABLE" for t in node.targets))
    allowed = (ast.Call, ast.Name, ast.Constant, ast.Tuple, ast.keyword, ast.Load, ast.UnaryOp, ast.USub)
    for node in ast.walk(table.value):
        if not isinstance(node, allowed) or (isinstance(node, ast.Call) and getattr(node.func, "id", "") not in
                                             ("Table", "Rule", "UnsplitRule")):
            raise PatchError("the generated rule table holds more than literal rules; refusing to write a patch")


def _diff(path: str, old: str | None, new: str) -> str:
    old_lines = [] if old is None else old.splitlines(keepends=True)
    body = difflib.unified_diff(
        old_lines, new.splitlines(keepends=True), "/dev/null" if old is None else f"a/{path}", f"b/{path}", n=3,
    )
    head = f"diff --git a/{path} b/{path}\n" + ("new file mode 100644\n" if old is None else "")
    return head + "".join(body)


def _patched_sources(root: str, version: str, hooks: tuple[Hook, ...]) -> tuple[dict[str, str], dict[str, str]]:
    """(pristine, patched) text of every file the hooks change."""
    sources: dict[str, str] = {}
    for hook in hooks:
        if hook.path not in sources:
            try:
                with open(os.path.join(root, hook.path)) as fh:
                    sources[hook.path] = fh.read()
            except OSError as exc:
                raise PatchError(f"torch {version}: cannot read {hook.path}: {exc.strerror}") from None
            except UnicodeDecodeError:
                raise PatchError(f"torch {version}: {hook.path} is not UTF-8 Python source") from None
    patched = dict(sources)
    for hook in hooks:
        counts = [(sources[hook.path].count(anchor), anchor, code) for anchor, code in hook.choices()]
        found = [(anchor, code) for count, anchor, code in counts if count]
        if len(found) != 1 or sum(count for count, _, _ in counts) != 1:
            raise PatchError(
                f"torch {version}: {hook.path} does not match what the generator expects ({hook.what} found "
                f"{sum(count for count, _, _ in counts)} times, expected once); refusing to patch"
            )
        ((anchor, code),) = found
        patched[hook.path] = patched[hook.path].replace(anchor, anchor + code)
    return sources, patched


def generate(heur: Heuristics, torch_root: str | None = None) -> tuple[str, str]:
    """(unified diff, torch version) against the torch tree at ``torch_root`` (default: installed)."""
    check_data(heur)
    root = torch_root or installed_torch_root()
    version = torch_version(root)
    release = check_version(version)
    if not heur.table().rules:
        raise PatchError("the heuristic file has no config rules (all keep the default): nothing to patch")
    new_files = {RULES_PATH: rules_module(heur, version)}
    if release >= versions.REGISTRY_TORCH:
        new_files[REGISTRY_PATH] = REGISTRY_MODULE
    for path in new_files:
        if os.path.exists(os.path.join(root, path)):
            raise PatchError(f"{os.path.join(root, path)} exists: this torch is already patched")
    sources, patched = _patched_sources(root, version, hooks_for(release))
    # Text before the first "diff --git" is commentary to git apply; a line break in it could start
    # another file's diff, so only plain text goes there (check_data refused anything else already).
    header = (
        f"inductor-tune patch: distilled reduction heuristics for {_plain(heur.gpu.name)} "
        f"(sm{heur.gpu.cc}, {heur.gpu.sm_count} SMs) against torch {_plain(version)}.\n"
        f"Rules measured with {_plain(heur.gpu.fingerprint)}; {len(heur.table().rules)} config rules.\n"
        "Apply in the folder that holds torch/: git apply --check <this file> && git apply <this file>\n"
        "(or patch -p1 < <this file>).  Other GPUs keep Inductor's behaviour.\n"
        f"{_not_carried(heur)}\n"
    )
    diffs = [_diff(path, None, text) for path, text in new_files.items()]
    diffs += [_diff(path, sources[path], patched[path]) for path in sorted(sources)]
    return header + "".join(diffs), version


def default_out(heur: Heuristics, version: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", heur.gpu.name.lower().split()[-1]).strip("-") or "gpu"
    return os.path.join("patches", f"{slug}-torch{version.split('+')[0]}.patch")
