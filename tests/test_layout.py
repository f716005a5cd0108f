"""The shape the code and README keep: the command line parses and prints, ``inductor_tune/app/`` does the
work, no module or function grows past what one reader can hold, and README.md stays a user's page.

Each test names what to do when it fails; the exception lists are for code owned elsewhere, each with
its reason and its size today, which it may not outgrow.
"""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "inductor_tune"

MAX_MODULE_LINES = 550
MAX_FUNCTION_LINES = 80
MAX_CLI_LINES = 400  # cli.py: a request built, an answer printed, per command
README_MAX_BYTES = 12_500

# Module -> (lines it may keep, why it is longer than MAX_MODULE_LINES).
LONG_MODULES: dict[str, tuple[int, str]] = {
    "runtime/torch_rules.py": (600, "self-contained on purpose: `patch` copies its text into torch, so it imports no helper"),
}
# "module.py:function" -> (lines it may keep, why).
LONG_FUNCTIONS = {
    "evidence.py:_study_point": (84, "one study's evidence, read in one pass; owned by the distill work"),
}

# What the command line may import from the package: the application layer, the parsers of argument
# text, and the renderers of what the application layer returns.  A module missing here (workers,
# search, store, ...) means orchestration came back into the command line: move it into inductor_tune/app/.
CLI_MODULES = ("cli.py", "cli_args.py")
CLI_MAY_IMPORT = {
    "inductor_tune", "inductor_tune.cli_args", "inductor_tune.app", "inductor_tune.app.common",
    "inductor_tune.app.crossmeasure", "inductor_tune.app.demo", "inductor_tune.app.results",
    "inductor_tune.app.rules", "inductor_tune.app.tune", "inductor_tune.app.validate",
    # parsers of argument text
    "inductor_tune.experiment", "inductor_tune.gate", "inductor_tune.models", "inductor_tune.problem",
    # renderers
    "inductor_tune.benchsearch", "inductor_tune.crossmeasure", "inductor_tune.show", "inductor_tune.tables",
    "inductor_tune.validate",
}
CLI_MAY_IMPORT_STDLIB = {"__future__", "argparse", "logging", "os", "sys"}


def _modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _name(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def _imports(path: Path) -> set[str]:
    """Absolute names of the modules ``path`` imports (``from . import x`` counts as the module x)."""
    package = ["inductor_tune", *path.relative_to(PACKAGE).parent.parts]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            if node.level and not node.module:  # from . import x: the module x (or the package's __version__)
                found |= {module if alias.name.startswith("__") else f"{module}.{alias.name}" for alias in node.names}
            else:
                found.add(module)
    return found


def test_no_module_outgrows_its_limit():
    over = {}
    for path in _modules():
        lines = len(path.read_text().splitlines())
        limit, _ = LONG_MODULES.get(_name(path), (MAX_MODULE_LINES, ""))
        if lines > limit:
            over[_name(path)] = f"{lines} lines (at most {limit})"
    assert not over, f"split these modules (inductor_tune/app/ shows one way): {over}"


def test_no_function_outgrows_its_limit():
    over = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                key = f"{_name(path)}:{node.name}"
                limit, _ = LONG_FUNCTIONS.get(key, (MAX_FUNCTION_LINES, ""))
                if node.end_lineno - node.lineno + 1 > limit:
                    over[key] = f"{node.end_lineno - node.lineno + 1} lines (at most {limit})"
    assert not over, f"split these functions: {over}"


def test_the_command_line_only_parses_and_prints():
    for name in CLI_MODULES:
        path = PACKAGE / name
        imported = _imports(path)
        ours = {m for m in imported if m.split(".")[0] == "inductor_tune"}
        assert ours <= CLI_MAY_IMPORT, (
            f"{name} imports {sorted(ours - CLI_MAY_IMPORT)}: what a command does belongs in inductor_tune/app/, "
            "which cli.py calls with a request and whose answer it prints")
        stdlib = imported - ours
        assert stdlib <= CLI_MAY_IMPORT_STDLIB, (
            f"{name} imports {sorted(stdlib - CLI_MAY_IMPORT_STDLIB)}: processes, files and timing belong in "
            "inductor_tune/app/")
    lines = len((PACKAGE / "cli.py").read_text().splitlines())
    assert lines <= MAX_CLI_LINES, f"cli.py has {lines} lines (at most {MAX_CLI_LINES}): move work into inductor_tune/app/"


def test_nothing_runs_commands_through_the_command_line():
    """The demo, `tune --gpus` and every other caller use the application layer, never ``cli.main(argv)``
    or a `python -m inductor_tune` process of their own."""
    spawn = re.compile(r"""["']-m["']\s*,\s*["']inductor_tune["']""")
    for path in _modules():
        if _name(path) in ("__main__.py", *CLI_MODULES):
            continue
        imported = _imports(path)
        assert not imported & {"inductor_tune.cli", "inductor_tune.cli_args"}, f"{_name(path)} imports the command line"
        assert not spawn.search(path.read_text()), f"{_name(path)} starts `python -m inductor_tune`"
    assert not _imports(PACKAGE / "cli_args.py") & {"inductor_tune.cli"}


def test_the_application_layer_imports_heavy_packages_only_where_it_needs_them():
    """Read-only commands and bad input answer without torch, SQLAlchemy or Optuna (tests/test_torch_free.py
    times the torch part): the app modules import them inside functions, never at the top."""
    heavy = {"torch", "triton", "sqlalchemy", "optuna", "matplotlib", "pandas"}
    for path in sorted((PACKAGE / "app").glob("*.py")):
        top = set()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Import):
                top |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level:
                top.add(node.module.split(".")[0])
        assert not top & heavy, f"app/{path.name} imports {sorted(top & heavy)} at the top"


def test_readme_stays_a_users_page():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_MAX_BYTES, (
        f"README.md is {size} bytes (at most {README_MAX_BYTES}): move results, method, file formats and "
        "development notes into docs/ and point there")


def test_readme_points_only_at_files_of_the_repository():
    text = (ROOT / "README.md").read_text()
    targets = set(re.findall(r"\]\(([^)#\s]+)", text)) | set(re.findall(r"\bdocs/[\w./-]*\.md\b", text))
    assert not [t for t in targets if "://" in t], "README links outside the repository"
    missing = sorted(t for t in targets if not (ROOT / t).exists())
    assert not missing, f"README points at files that do not exist: {missing}"


def test_ci_runs_the_test_command_readme_gives():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", readme, re.S)
    commands = [line.strip() for block in blocks for line in block.splitlines() if "pytest" in line]
    assert len(commands) == 1, f"README's quickstart should give one test command, found {commands}"
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[0] in ci.splitlines(), f".ci/run does not run README's test command {commands[0]!r}"
