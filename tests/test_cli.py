import hashlib
import re
import shutil
import subprocess
import sys

import pytest

from inductor_tune.choices import UnsupportedTorch, check_torch_supported


def run(*args, cwd=None):
    proc = subprocess.run([sys.executable, "-m", "inductor_tune", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("inductor-tune: error: ")
    return lines[0]


def test_help_lists_every_command():
    code, out, _ = run("--help")
    assert code == 0
    for command in ("gpus", "tune", "sweep", "show"):
        assert command in out
    code, out, _ = run("tune", "--help")
    for flag in ("--kernels", "--shapes", "--dtypes", "--trials", "--timeout", "--sampler", "--storage", "--gpu", "--seed",
                 "--warm-start"):
        assert flag in out


def test_show_prints_the_recorded_table(tmp_path):
    db = tmp_path / "quack.sqlite"
    shutil.copy("db/quack.sqlite", db)
    code, out, err = run("show", str(db), "--kernel", "rmsnorm_fwd", "--wide")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["gpu", "kernel", "shape", "dtype"]
    assert len(lines) == 2 + 11 and all("NVIDIA H200" in line for line in lines[2:])


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the no-GPU message")
def test_tune_without_gpu_says_so_in_one_line(tmp_path):
    code, _, err = run("tune", "experiments/smoke.yaml", "--storage", f"sqlite:///{tmp_path}/x.sqlite")
    assert code == 2
    assert "no CUDA GPU is visible" in one_error_line(err) and "inductor-tune show" in err
    assert not (tmp_path / "x.sqlite").exists()
    code, _, err = run("gpus")
    assert code == 2 and "no CUDA GPU" in one_error_line(err)
    code, _, err = run("sweep", "experiments/sweep_fwd.yaml", "--storage", f"sqlite:///{tmp_path}/s.sqlite")
    assert code == 2 and "`sweep` measures on a GPU" in one_error_line(err)
    assert not (tmp_path / "s.sqlite").exists()


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["tune", "experiments/nope.yaml"], "does not exist"),
        (["tune", "experiments/smoke.yaml", "--kernels", "rmsnorm_fwd,groupnorm"], "unknown kernel(s) groupnorm"),
        (["tune", "experiments/smoke.yaml", "--shapes", "4096"], "not MxN"),
        (["tune", "experiments/smoke.yaml", "--sampler", "anneal"], "unknown sampler"),
        (["tune", "experiments/smoke.yaml", "--warm-start", "-1"], "'warm_start' must be a non-negative integer"),
        (["tune", "experiments/smoke.yaml", "--storage", "nosuchdb://host/x"], "cannot load its database driver"),
        (["show", "db/none.sqlite"], "no database at"),
    ],
)
def test_bad_input_gives_one_line_and_exit_2(args, fragment):
    code, _, err = run(*args)
    assert code == 2
    assert fragment in one_error_line(err)


def test_show_refuses_non_databases_without_touching_them(tmp_path):
    notes = tmp_path / "notes.sqlite"
    notes.write_text("not a database\n")
    digest = hashlib.sha256(notes.read_bytes()).hexdigest()
    code, _, err = run("show", str(notes))
    assert code == 2 and "not an SQLite database" in one_error_line(err)
    assert hashlib.sha256(notes.read_bytes()).hexdigest() == digest


def test_show_of_an_empty_database_says_so(tmp_path):
    from inductor_tune.store import Store

    Store(f"sqlite:///{tmp_path}/empty.sqlite")
    code, _, err = run("show", str(tmp_path / "empty.sqlite"))
    assert code == 2 and "has no studies" in one_error_line(err)


def test_unsupported_torch_versions_are_refused():
    # 2.12 sits between two supported releases but its Inductor was never read: refused like 2.15.
    for version in ("2.9.1", "2.10.0+cu128", "2.12.0", "2.15.0", "2.15.0a0+git1234", "3.0.0"):
        with pytest.raises(UnsupportedTorch, match=rf"^torch {re.escape(version)} is not supported: .* 2\.11, "
                                                   r"2\.13 and 2\.14$"):
            check_torch_supported(version)
    for version in ("2.11.0+cu130", "2.13.0+cpu", "2.14.1+cu130", "2.14.0"):
        check_torch_supported(version)


@pytest.mark.parametrize("command, promise", [
    ("tune", "re-run the same command to resume"),
    ("crossmeasure", "re-run the same command to resume"),
    ("validate", "the records stored so far stay; re-running the command resumes a --random or --draw run and "
                 "measures a suite's or the models' problems again"),
    ("distill", "re-run the same command to start again"),
])
def test_an_interrupt_promises_a_resume_only_where_the_command_resumes(monkeypatch, capsys, command, promise):
    # validate of models or a suite stores a record per problem but never skips one already stored: its interrupt must
    # not promise them a resume (a cut-off --models run was re-run in full on an H100, stop 22); a gate run resumes.
    from inductor_tune import cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setitem(cli.HANDLERS, command, interrupted)
    argv = {"tune": ["tune", "experiments/smoke.yaml"], "crossmeasure": ["crossmeasure", "db/quack.sqlite"],
            "validate": ["validate", "heuristics/h200.yaml", "--models"],
            "distill": ["distill", "db/quack.sqlite", "--gpu", "H200"]}[command]
    assert cli.main(argv) == 130
    assert capsys.readouterr().err.strip() == f"inductor-tune: interrupted; {promise}"
