"""`python -m inductor_tune.offline pack`: what can be checked without a network.

Its arguments, the pip command it runs, the install.sh it writes (run with a stand-in for Python
that records the pip calls) and the one line it fails with when no index answers: a closed local
port, and a port that accepts connections but never answers.  Downloading itself needs an index.
"""

import argparse
import hashlib
import os
import socket
import subprocess
import sys

import pytest

from inductor_tune import offline
from inductor_tune.offline import GROUPS, MARKER, PackError


def _args(**overrides):
    base = dict(out="wheelhouse", with_groups=None, without_groups=None, python_version="3.12", platform=None,
                timeout=15)
    return argparse.Namespace(**{**base, **overrides})


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("inductor-tune: error: "), stderr
    return lines[0]


def test_default_plan_packs_core_dashboard_and_peers_for_cpython_312_on_manylinux(tmp_path):
    p = offline.plan(_args(out=str(tmp_path / "wh")))
    assert p.groups == ("core", "dashboard", "peers") and p.python_version == "3.12"
    command = offline.download_command(p, "DEST")
    assert command[1:4] == ["-m", "pip", "download"] and "--no-deps" in command
    assert "--only-binary=:all:" in command and command[command.index("--python-version") + 1] == "3.12"
    assert [command[i + 1] for i, c in enumerate(command) if c == "--platform"] == list(offline.DEFAULT_PLATFORMS)
    assert command[command.index("--retries") + 1] != "0"  # pip names a refused connection only when it retries
    names = {s.split("==")[0] for s in p.specs()}
    assert {"optuna", "sqlalchemy", "alembic", "colorlog", "mako", "greenlet", "tqdm", "optuna-dashboard",
            "quack-kernels", "liger-kernel", "nvidia-cutlass-dsl", "apache-tvm-ffi"} <= names
    assert not names & {"torch", "triton", "numpy", "pandas", "matplotlib"}  # the host has them
    assert all("==" in s for s in p.specs()) and all(s in command for s in p.specs())


def test_groups_are_added_and_removed_and_shared_wheels_fetched_once(tmp_path):
    p = offline.plan(_args(with_groups="pandas,matplotlib", without_groups="peers,dashboard"))
    assert p.groups == ("core", "pandas", "matplotlib")
    assert sum(s.startswith("python-dateutil==") for s in p.specs()) == 1
    assert not any(s.startswith(("quack", "optuna-dashboard")) for s in p.specs())


@pytest.mark.parametrize("argv, fragment", [
    (["pack", "--with", "pandas,scipy"], "--with: unknown group(s) scipy (groups: core, dashboard"),
    (["pack", "--without", "core"], "--without core"),
    (["pack", "--with", "peers", "--without", "peers"], "--with and --without both name peers"),
    (["pack", "--python-version", "3"], "not a CPython 3 version"),
    (["pack", "--python-version", "2.7"], "not a CPython 3 version"),
    (["pack", "--platform", "manylinux x86"], "is not a wheel platform tag"),
    (["pack", "--timeout", "0"], "--timeout 0"),
    (["pack", "--timeout", "soon"], "argument --timeout: invalid int value"),
    (["pack", "--bogus"], "unrecognized arguments: --bogus"),
    (["unpack"], "invalid choice: 'unpack'"),
])
def test_bad_arguments_are_one_line_and_download_nothing(tmp_path, capsys, monkeypatch, argv, fragment):
    monkeypatch.setattr(offline, "_run_pip", lambda *a: pytest.fail("pip was run"))
    assert offline.main([*argv, "--out", str(tmp_path / "wh")] if argv[0] == "pack" else argv) == 2
    assert fragment in _one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "wh").exists()


def test_an_out_that_pack_did_not_write_is_refused_and_left_alone(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(offline, "_run_pip", lambda *a: pytest.fail("pip was run"))
    (tmp_path / "file").write_text("x")
    assert offline.main(["pack", "--out", str(tmp_path / "file")]) == 2
    assert "exists and is not a folder" in _one_error_line(capsys.readouterr().err)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    assert offline.main(["pack", "--out", str(mine)]) == 2
    assert "is a folder pack did not write" in _one_error_line(capsys.readouterr().err)
    assert os.listdir(mine) == ["notes.txt"]
    (mine / "install.sh").write_text(f"# wheelhouse {MARKER}\n")  # one pack wrote may be replaced
    assert offline.plan(_args(out=str(mine))).out == str(mine)


def _script(tmp_path, **overrides):
    p = offline.plan(_args(out=str(tmp_path / "wh"), **overrides))
    return offline.install_script(p, "inductor_tune-0.1.0-py3-none-any.whl")


def _pip_calls(tmp_path, text, *options):
    """Run install.sh with $PYTHON a stand-in that records each call's arguments."""
    (tmp_path / "wh").mkdir(exist_ok=True)
    (tmp_path / "wh" / "install.sh").write_text(text)
    log = tmp_path / "calls.log"
    fake = tmp_path / "fakepython"
    fake.write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    fake.chmod(0o755)
    proc = subprocess.run(["bash", str(tmp_path / "wh" / "install.sh"), *options], capture_output=True, text=True,
                          env=dict(os.environ, PYTHON=str(fake)), timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [line.split() for line in log.read_text().splitlines()], proc.stdout


def test_install_script_installs_from_its_own_folder_only(tmp_path):
    text = _script(tmp_path)
    assert MARKER in text and "CPython 3.12" in text and "cuda-bindings" in text  # what the host must bring
    assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0
    calls, out = _pip_calls(tmp_path, text, "--user")
    here = str(tmp_path / "wh")
    assert len(calls) == 3 and all(c[:3] == ["-m", "pip", "install"] and "--no-index" in c for c in calls)
    assert all("--user" in c for c in calls)  # pip options pass through to every call
    resolve, peers, project = calls
    # Resolved against the host: inductor_tune's and the dashboard's dependencies are checked.
    assert resolve[-2:] == ["inductor_tune", "optuna-dashboard"] and "--no-deps" not in resolve
    assert resolve[resolve.index("--find-links") + 1] == here
    # The peers without dependencies: torch and the CUDA bindings are the host's.
    assert peers[-4:] == ["liger-kernel", "quack-kernels", "nvidia-cutlass-dsl", "apache-tvm-ffi"]
    assert "--no-deps" in peers and peers[peers.index("--find-links") + 1] == here
    # The checkout's own wheel replaces an installed one of the same version.
    assert "--force-reinstall" in project and project[-1] == f"{here}/inductor_tune-0.1.0-py3-none-any.whl"
    assert f"installed from {here}" in out


def test_install_script_follows_the_groups(tmp_path):
    text = _script(tmp_path, with_groups="pandas", without_groups="peers,dashboard")
    calls, _ = _pip_calls(tmp_path, text)
    assert len(calls) == 2 and calls[0][-2:] == ["inductor_tune", "pandas"]  # no peers call
    assert calls[1][-1].endswith("/inductor_tune-0.1.0-py3-none-any.whl")


def _pip_env(index_url: str) -> dict:
    # Only the index under test: no pip configuration file, find-links folder or extra index here.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return dict(env, PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL=index_url)


def _pack_offline(tmp_path, index_url: str, out):
    proc = subprocess.run([sys.executable, "-m", "inductor_tune.offline", "pack", "--out", str(out), "--timeout", "1"],
                          capture_output=True, text=True, env=_pip_env(index_url), timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_closed_index_is_one_line_and_leaves_the_previous_wheelhouse(tmp_path):
    out = tmp_path / "wh"
    out.mkdir()
    (out / "install.sh").write_text(f"# wheelhouse {MARKER}\n")
    (out / "optuna-4.0.0-py3-none-any.whl").write_bytes(b"previous")
    before = {f: hashlib.sha256((out / f).read_bytes()).hexdigest() for f in os.listdir(out)}
    port = _free_port()
    code, stdout, stderr = _pack_offline(tmp_path, f"http://me:secret@127.0.0.1:{port}/simple", out)
    assert (code, stdout) == (2, "")
    line = _one_error_line(stderr)
    assert f"cannot reach http://127.0.0.1:{port}/simple (Connection refused)" in line and "network access" in line
    assert "secret" not in line
    assert {f: hashlib.sha256((out / f).read_bytes()).hexdigest() for f in os.listdir(out)} == before
    assert sorted(os.listdir(tmp_path)) == ["wh"]  # no half-built folder beside it


def test_an_index_that_never_answers_times_out_in_one_line(tmp_path):
    with socket.socket() as server:  # listens, so connecting succeeds, but nothing is ever read or sent
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        port = server.getsockname()[1]
        code, _, stderr = _pack_offline(tmp_path, f"http://127.0.0.1:{port}/simple", tmp_path / "wh")
    assert code == 2
    assert f"cannot reach http://127.0.0.1:{port}/simple (timed out)" in _one_error_line(stderr)
    assert os.listdir(tmp_path) == []


def test_the_packer_needs_nothing_but_the_standard_library():
    # It runs on a machine where nothing of the project's dependencies may be installed yet.
    code = ("import sys, inductor_tune.offline; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'optuna', 'sqlalchemy', 'yaml', 'numpy', "
            "'pandas', 'torch', 'tqdm'}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "[]", proc.stderr
    assert set(GROUPS) >= set(offline.DEFAULT_GROUPS)


def test_peers_current_replaces_the_pinned_peers_with_the_newest_quack_and_its_split_dsl(tmp_path):
    p = offline.plan(_args(with_groups="peers-current"))
    assert p.groups == ("core", "dashboard", "peers-current")
    specs = set(p.specs())
    assert {"quack-kernels==0.6.5", "nvidia-cutlass-dsl==4.8.1", "nvidia-cutlass-dsl-libs-cu12==4.8.1",
            "nvidia-cutlass-dsl-libs-base==4.8.1", "nvidia-cutlass-dsl-libs-core==4.8.1",
            "torch-c-dlpack-ext==0.1.5", "einops==0.8.2"} <= specs
    assert not specs & {"quack-kernels==0.2.2", "nvidia-cutlass-dsl==4.2.1"}  # one Quack per wheelhouse
    calls, _ = _pip_calls(tmp_path, _script(tmp_path, with_groups="peers-current"))
    peers = calls[1]
    roots = list(offline.GROUPS["peers-current"][0])
    assert "--no-deps" in peers and peers[-len(roots):] == roots
    with pytest.raises(offline.PackError, match="one Quack per host"):
        offline.plan(_args(with_groups="peers,peers-current"))
