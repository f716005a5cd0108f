"""Pack what an offline GPU host lacks into a wheelhouse, on a machine that reaches a package index.

    python -m inductor_tune.offline pack [--out wheelhouse] [--with pandas,matplotlib,peers-current] [--without peers]

The GPU hosts this project measures on have no package index.  They bring CPython 3.12 with torch,
triton and the scientific stack (``HOST_PROVIDES``) but not Optuna and its storage stack, the
dashboard or the peer kernel libraries compared against (Quack and its CUTLASS DSL, Liger).  ``pack``
downloads those as wheels for the host's Python and platform (``--python-version``, ``--platform``),
builds this checkout's own wheel beside them and writes ``install.sh``; copy the folder to the host
and run ``bash wheelhouse/install.sh`` there (pip options such as ``--user`` pass through;
``$PYTHON`` picks the interpreter).

Every wheel is fetched without its dependencies: resolving them for the host's platform would
download torch and numpy, which the host has.  The groups below list the dependency closure of
each package minus ``HOST_PROVIDES`` instead, at versions tested together; on the host, pip
resolves again against what is installed there, so a dependency missing from both is named by pip
at install time, not at import time.  Stdlib only: it runs before anything else is installed.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

from . import __version__

log = logging.getLogger("inductor_tune.offline")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What the groups below leave to the host (pandas and matplotlib: the groups of those names pack them
# for a host without).  install.sh names them, so that a host without one knows what pip will ask for.
HOST_PROVIDES = ("torch", "triton", "numpy", "scipy", "pyyaml", "packaging", "typing-extensions", "pandas",
                 "matplotlib", "cuda-bindings (the CUDA bindings the CUTLASS DSL imports)")
# name -> (the packages install.sh names, every wheel to download).  Pins: core as CI and the GPU hosts
# run it, the dashboard version checked in docs/inspection.md, the peers peers.py wraps.
GROUPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "core": (("inductor_tune",), (
        "optuna==5.0.0", "sqlalchemy==2.1.9", "alembic==1.20.1", "mako==1.4.3", "markupsafe==3.0.4",
        "colorlog==6.12.0", "greenlet==3.5.6", "tqdm==4.70.1", "cmaes==0.13.1")),
    "dashboard": (("optuna-dashboard",), ("optuna-dashboard==0.21.0", "bottle==0.13.4")),
    # Quack 0.2.2 pins the CUTLASS DSL 4.2.1; newer Quack releases also need apache-tvm-ffi (< 0.2).
    "peers": (("liger-kernel", "quack-kernels", "nvidia-cutlass-dsl", "apache-tvm-ffi"), (
        "liger-kernel==0.8.5", "quack-kernels==0.2.2", "nvidia-cutlass-dsl==4.2.1", "apache-tvm-ffi==0.1.15.post2")),
    # The newest Quack (LayerNorm backward since 0.6.2), instead of "peers": its CUTLASS DSL comes in four
    # wheels (libs-core holds the DSL's Python sources; the CUDA 12 libraries alone are 92 MB), and it
    # imports einops and torch-c-dlpack-ext.
    "peers-current": (("liger-kernel", "quack-kernels", "nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-base",
                       "nvidia-cutlass-dsl-libs-core", "nvidia-cutlass-dsl-libs-cu12", "apache-tvm-ffi",
                       "torch-c-dlpack-ext", "einops"), (
        "liger-kernel==0.8.5", "quack-kernels==0.6.5", "nvidia-cutlass-dsl==4.8.1",
        "nvidia-cutlass-dsl-libs-base==4.8.1", "nvidia-cutlass-dsl-libs-core==4.8.1",
        "nvidia-cutlass-dsl-libs-cu12==4.8.1", "apache-tvm-ffi==0.1.15.post2",
        "torch-c-dlpack-ext==0.1.5", "einops==0.8.2")),
    "pandas": (("pandas",), ("pandas==3.1.1", "python-dateutil==4.0.0", "tzdata==2026.6")),
    "matplotlib": (("matplotlib",), (
        "matplotlib==3.11.2", "contourpy==1.3.3", "cycler==0.12.1", "fonttools==4.68.0", "kiwisolver==1.5.1",
        "pillow==13.0.0", "pyparsing==3.3.3", "python-dateutil==4.0.0", "tzdata==2026.6")),
}
DEFAULT_GROUPS = ("core", "dashboard", "peers")
# pip expands no manylinux_2_N tag to older ones (only manylinux2014 to its aliases), so the tags a
# host with glibc >= 2.28 accepts are listed one by one; --platform replaces them.
DEFAULT_PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64",
                     "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64")
# pip names a connection error only in the warning of a retry: with none it says "no matching
# distribution", as for a package the index lacks.
RETRIES = 2
MARKER = "written by `python -m inductor_tune.offline pack`"  # how pack knows a folder it may replace
# What pip prints (in its retry warnings) when no index answers, as opposed to a package it cannot find.
UNREACHABLE = ("Connection refused", "Network is unreachable", "Temporary failure in name resolution",
               "Name or service not known", "No route to host", "timed out", "ProxyError",
               "Failed to establish a new connection", "connection broken", "SSLError", "Max retries exceeded")


class PackError(Exception):
    """Reported as one line, exit status 2."""


@dataclasses.dataclass(frozen=True)
class Plan:
    out: str
    groups: tuple[str, ...]
    python_version: str
    platforms: tuple[str, ...]
    timeout_s: int

    def specs(self) -> list[str]:
        """The wheels to download, each once (groups share some)."""
        return list(dict.fromkeys(s for g in self.groups for s in GROUPS[g][1]))

    def roots(self, *groups: str) -> list[str]:
        """What install.sh names of those of ``groups`` that are planned."""
        return [r for g in groups if g in self.groups for r in GROUPS[g][0]]


def _groups(text: str | None, option: str) -> set[str]:
    names = {g.strip() for g in (text or "").split(",") if g.strip()}
    unknown = sorted(names - set(GROUPS))
    if unknown:
        raise PackError(f"{option}: unknown group(s) {', '.join(unknown)} (groups: {', '.join(GROUPS)})")
    return names


def plan(args: argparse.Namespace) -> Plan:
    """The checked arguments: every mistake is reported here, before anything is downloaded."""
    added, removed = _groups(args.with_groups, "--with"), _groups(args.without_groups, "--without")
    if "core" in removed:
        raise PackError("--without core: inductor_tune needs Optuna's stack; pack it or nothing")
    if added & removed:
        raise PackError(f"--with and --without both name {', '.join(sorted(added & removed))}")
    if {"peers", "peers-current"} <= added:
        raise PackError("--with peers,peers-current: one Quack per host; name one of them")
    # Asking for the newest peers replaces the default ones: two Quacks in one wheelhouse stop install.sh.
    if "peers-current" in added:
        removed = removed | {"peers"}
    groups = tuple(g for g in GROUPS if (g in DEFAULT_GROUPS or g in added) and g not in removed)
    if not re.fullmatch(r"3\.\d{1,2}", args.python_version):
        raise PackError(f"--python-version {args.python_version!r} is not a CPython 3 version such as 3.12")
    platforms = tuple(args.platform or DEFAULT_PLATFORMS)
    bad = [p for p in platforms if not re.fullmatch(r"[a-z0-9_]+", p)]
    if bad:
        raise PackError(f"--platform {bad[0]!r} is not a wheel platform tag such as manylinux_2_28_x86_64")
    if args.timeout <= 0:
        raise PackError(f"--timeout {args.timeout}: give pip a positive number of seconds")
    out = os.path.abspath(args.out)
    if os.path.exists(out) and not os.path.isdir(out):
        raise PackError(f"--out {args.out} exists and is not a folder")
    if os.path.isdir(out) and os.listdir(out) and not _ours(out):
        raise PackError(f"--out {args.out} is a folder pack did not write (no install.sh of its own); "
                        "refusing to replace it: name a new or empty folder")
    if not os.path.isfile(os.path.join(ROOT, "setup.cfg")):
        raise PackError(f"pack builds the wheel of a source checkout, and {ROOT} is not one; run it from a "
                        "clone of inductor_tune (python -m inductor_tune.offline pack)")
    return Plan(out, groups, args.python_version, platforms, args.timeout)


def _ours(folder: str) -> bool:
    try:
        with open(os.path.join(folder, "install.sh"), encoding="utf-8") as fh:
            return MARKER in fh.read(2000)
    except OSError:
        return False


def download_command(p: Plan, dest: str) -> list[str]:
    target = ["--only-binary=:all:", "--implementation", "cp", "--python-version", p.python_version]
    for platform in p.platforms:
        target += ["--platform", platform]
    return [sys.executable, "-m", "pip", "download", "--no-deps", *target, *_network(p), "-d", dest, *p.specs()]


def wheel_command(p: Plan, source: str, dest: str) -> list[str]:
    # Build isolation fetches setuptools from the index, as the download did: nothing needs to be
    # installed here beyond pip.
    return [sys.executable, "-m", "pip", "wheel", "--no-deps", *_network(p), "-w", dest, source]


def _project_source(dest: str) -> str:
    """The files the wheel is built from, copied: setuptools builds in the source tree, and a build/
    folder left in the checkout would put files deleted since into later wheels."""
    source = os.path.join(dest, "inductor_tune-src")
    shutil.copytree(os.path.join(ROOT, "inductor_tune"), os.path.join(source, "inductor_tune"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("setup.cfg", "pyproject.toml", "README.md"):  # README.md: setup.cfg's long_description
        shutil.copy2(os.path.join(ROOT, name), source)
    return source


def _network(p: Plan) -> list[str]:
    return ["--timeout", str(p.timeout_s), "--retries", str(RETRIES), "--disable-pip-version-check",
            "--progress-bar", "off"]


def _quote(names: list[str]) -> str:
    return " ".join(shlex.quote(n) for n in names)


def install_script(p: Plan, project_wheel: str) -> str:
    """The text of install.sh: installs from its own folder only (pip options pass through)."""
    resolved = p.roots("core", "dashboard", "pandas", "matplotlib")
    lines = [
        "#!/usr/bin/env bash",
        f"# inductor_tune {__version__}: wheelhouse {MARKER},",
        f"# for CPython {p.python_version} on {', '.join(p.platforms)}; groups: {', '.join(p.groups)}.",
        f"# Expects on the host: {', '.join(HOST_PROVIDES)}.",
        "# Installs from this folder only, never an index:  bash install.sh [pip options, e.g. --user outside a venv]",
        "# (not --target: pip then ignores what the host has installed and looks for all of it here).",
        "# $PYTHON picks the interpreter (default python3).",
        "set -euo pipefail",
        'here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)',
        'py=${PYTHON:-python3}',
        "# Dependencies resolved against the host: one missing from both the host and this folder is named here.",
        f'"$py" -m pip install --no-index --find-links "$here" "$@" {_quote(resolved)}',
    ]
    peers = p.roots("peers", "peers-current")
    if peers:
        lines += [
            "# Without their declared dependencies: torch, triton and the CUDA bindings are the host's; resolving",
            "# would look for torch here, and for cuda-python, which the DSL declares where hosts have cuda-bindings.",
            f'"$py" -m pip install --no-index --find-links "$here" --no-deps "$@" {_quote(peers)}',
        ]
    lines += [
        f"# A checkout's wheel keeps version {__version__}: replace an installed one, which pip would keep.",
        f'"$py" -m pip install --no-index --no-deps --force-reinstall "$@" "$here/"{shlex.quote(project_wheel)}',
        'echo "inductor_tune and its dependencies installed from $here"',
    ]
    return "\n".join(lines) + "\n"


def _run_pip(command: list[str], what: str) -> None:
    log.info("%s: %s", what, shlex.join(command))
    try:
        proc = subprocess.run(command, capture_output=True, text=True)
    except OSError as exc:
        raise PackError(f"cannot run {command[0]}: {exc.strerror or exc}") from None
    if proc.returncode == 0:
        return
    text = proc.stdout + "\n" + proc.stderr
    if "No module named pip" in text:
        raise PackError(f"{sys.executable} has no pip; pack needs pip (python -m ensurepip)")
    cause = next((m for m in UNREACHABLE if m.lower() in text.lower()), None)
    if cause is not None:
        raise PackError(f"cannot reach {_index_shown()} ({cause}): pack downloads wheels, so run it on a machine "
                        "with network access, or point PIP_INDEX_URL at a reachable index or mirror")
    errors = [line.strip() for line in text.splitlines() if line.strip().startswith("ERROR:")]
    last = errors[-1] if errors else (text.strip().splitlines() or ["no output"])[-1]
    raise PackError(f"{what} failed: {last.removeprefix('ERROR:').strip()}")


def _index_shown() -> str:
    """$PIP_INDEX_URL without its credentials, or what pip uses when it is unset."""
    url = os.environ.get("PIP_INDEX_URL")
    if not url:
        return "the package index"
    parts = urllib.parse.urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def pack(p: Plan) -> str:
    """Download and build into a fresh folder beside ``p.out``, then put it in place (a failure leaves
    a previous wheelhouse as it was); returns the path of install.sh."""
    parent = os.path.dirname(p.out)
    os.makedirs(parent, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".wheelhouse-", dir=parent)
    scratch = tempfile.mkdtemp(prefix="inductor-tune-pack-")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(work, 0o777 & ~umask)  # mkdtemp's 0700 would keep the folder from others once in place
        log.info("downloading %d wheels (%s) for CPython %s", len(p.specs()), ", ".join(p.groups), p.python_version)
        _run_pip(download_command(p, work), "pip download")
        _run_pip(wheel_command(p, _project_source(scratch), work), "building the wheel of " + ROOT)
        project = sorted(f for f in os.listdir(work) if f.startswith("inductor_tune-") and f.endswith(".whl"))
        if not project:
            raise PackError(f"pip built no inductor_tune wheel from {ROOT}")
        with open(os.path.join(work, "install.sh"), "w", encoding="utf-8") as fh:
            fh.write(install_script(p, project[-1]))
        os.chmod(os.path.join(work, "install.sh"), 0o755)
        if os.path.isdir(p.out):
            shutil.rmtree(p.out)  # plan() checked that it is empty or ours
        os.rename(work, p.out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return os.path.join(p.out, "install.sh")


class _Parser(argparse.ArgumentParser):
    """argparse's errors as one line, as every other mistake (it prints its usage and exits)."""

    def error(self, message: str):
        raise PackError(f"{message} (see `{self.prog} --help`)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m inductor_tune.offline",
                     description="Wheels for GPU hosts without a package index.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    pk = sub.add_parser(
        "pack", help="download what an offline GPU host lacks into a wheelhouse with its install.sh",
        description="On a machine that reaches a package index: download the wheels an offline GPU host lacks "
        "for its Python and platform, build this checkout's wheel and write install.sh beside them. On the host: "
        "bash WHEELHOUSE/install.sh [pip options].")
    pk.add_argument("--out", default="wheelhouse", help="folder to write (default ./wheelhouse; replaced if pack "
                    "wrote it)")
    pk.add_argument("--with", dest="with_groups", metavar="GROUPS",
                    help=f"also pack these groups, comma-separated (groups: {', '.join(GROUPS)}; default "
                    f"{','.join(DEFAULT_GROUPS)}; pandas and matplotlib only for a host without them; peers-current: "
                    "the newest Quack instead of the pinned one)")
    pk.add_argument("--without", dest="without_groups", metavar="GROUPS", help="leave these default groups out")
    pk.add_argument("--python-version", default="3.12", help="the host's CPython, X.Y (default 3.12)")
    pk.add_argument("--platform", action="append", metavar="TAG",
                    help=f"wheel platform tag the host accepts, repeatable (default: {' '.join(DEFAULT_PLATFORMS)})")
    pk.add_argument("--timeout", type=int, default=15, help="seconds pip waits for the index (default 15)")
    pk.add_argument("-v", "--verbose", action="store_true", help="log each pip command")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        script = pack(plan(args))
    except (PackError, OSError) as exc:
        message = f"{exc.filename}: {exc.strerror or exc}" if isinstance(exc, OSError) and exc.filename else str(exc)
        print(f"inductor-tune: error: {' '.join(message.split())}", file=sys.stderr)
        return 2
    out = os.path.dirname(script)
    wheels = [f for f in os.listdir(out) if f.endswith(".whl")]
    size = sum(os.path.getsize(os.path.join(out, f)) for f in wheels) / 2**20
    print(f"wrote {len(wheels)} wheels ({size:.0f} MiB) and install.sh to {out}")
    shown = os.path.relpath(script) if not os.path.relpath(script).startswith("..") else script
    print(f"on the GPU host, with this folder copied there: bash {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
