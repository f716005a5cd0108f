"""The runtime stands alone and the package's imports run one way.

A user's training process imports ``inductor_tune.install`` and what it reaches: the runtime
subpackage (``inductor_tune/runtime``).  It must not load the tuner (Optuna, SQLAlchemy, the
search, the studies, distillation, validation, the CLI): the tuner imports the runtime and registers
its trial plans with the hook, never the other way.  Imports are read from the source with ``ast``,
function-local ones included, because a lazy import is still a dependency: it is how
``heuristics`` <-> ``choices`` hid a cycle.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import inductor_tune

PACKAGE_DIR = os.path.dirname(inductor_tune.__file__)
ROOT = os.path.dirname(PACKAGE_DIR)
H200_FILE = os.path.join(ROOT, "heuristics", "h200.yaml")
RUNTIME = "inductor_tune.runtime"
# Named for the failure message; the test refuses every inductor_tune module outside the runtime.
TUNER = ("search", "store", "distill", "evidence", "experiment", "workers", "validate", "cli", "crossmeasure",
         "space", "choices", "heuristics")
# What the runtime may import besides itself and the standard library.
RUNTIME_THIRD_PARTY = {"torch", "triton", "yaml"}


def _modules() -> dict[str, str]:
    """Every module of the package: dotted name -> file."""
    found = {}
    for folder, _, files in os.walk(PACKAGE_DIR):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                found[dotted.removesuffix(".__init__")] = path
    return found


def _imports(module: str, path: str, modules: dict[str, str]) -> set[str]:
    """What ``module`` imports anywhere in its file: package modules by dotted name (``from . import x``
    names the submodule x where there is one), other modules by their top-level name."""
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
        if isinstance(node, ast.Import):
            out.update(alias.name if alias.name in modules else alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            for alias in node.names:
                target = f"{base}.{alias.name}"
                out.add(target if target in modules else base if base in modules else base.split(".")[0])
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {m: {d for d in _imports(m, p, modules) if d in modules and d != m} for m, p in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for dep in sorted(graph[node]):
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_package_import_graph_has_no_cycle():
    cycles = [sorted(c) for c in _cycles(_graph())]
    assert not cycles, f"import cycles (function-local imports count): {cycles}"


def test_the_runtime_imports_only_itself_the_standard_library_torch_triton_and_yaml():
    """No upward arrow: not the tuner, not the package root, not Optuna, even in a function body."""
    modules = _modules()
    allowed = set(sys.stdlib_module_names) | RUNTIME_THIRD_PARTY
    wrong = {
        module: sorted(d for d in _imports(module, path, modules)
                       if not (d == RUNTIME or d.startswith(RUNTIME + ".") or d in allowed))
        for module, path in modules.items() if module == RUNTIME or module.startswith(RUNTIME + ".")
    }
    assert {m: d for m, d in wrong.items() if d} == {}


LOADED = """
import json, pkgutil, sys
import inductor_tune, inductor_tune.runtime
for info in pkgutil.walk_packages(inductor_tune.runtime.__path__, "inductor_tune.runtime."):
    __import__(info.name)
handle = inductor_tune.install(sys.argv[1])  # no GPU here: read, checked, and not installed
print(json.dumps(sorted(sys.modules)))
"""


def test_a_training_process_that_installs_rules_loads_no_tuner_module():
    env = dict(os.environ, INDUCTOR_TUNE_HEURISTICS="")
    proc = subprocess.run([sys.executable, "-c", LOADED, H200_FILE], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    loaded = set(json.loads(proc.stdout))
    assert f"{RUNTIME}.hook" in loaded and f"{RUNTIME}.installation" in loaded
    tuner = sorted(m for m in loaded if m in {f"inductor_tune.{t}" for t in TUNER} | {"optuna", "sqlalchemy"})
    assert tuner == []
    outside = sorted(m for m in loaded if m.startswith("inductor_tune.") and not m.startswith(RUNTIME))
    assert outside == [], "a training process reaches package modules outside inductor_tune.runtime"
