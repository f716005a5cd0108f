"""Every subcommand fed bad input: one `inductor-tune: error: ...` line, exit status 2, nothing changed.

The commands run in-process (``cli.main``) in a workspace that mirrors the repository's layout (db/,
experiments/, heuristics/) with copies of the committed databases, so that relative paths resolve
there and the repository's own db/ is never touched.  After each case every file of the workspace
must hash as before; a -wal file, where SQLite left one, must be empty (a write would have put its
pages there before the main file).  Each case also names a fragment its message must contain, so an
input error is known to be reported as itself: before "no CUDA GPU", and not as a later failure.
"""

import dataclasses
import hashlib
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import traceback

import fast_yaml
import pytest

from inductor_tune import cli, heuristics

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLOSED_PG = "postgresql+psycopg2://it:secret@127.0.0.1:1/postgres"  # port 1: refused at once


def _heuristic_doc() -> dict:
    """A measured H200 file with a fused-backward config rule (the one shipped until stop 20; the shipped one
    has none), its provenance cut down to the one database copied here."""
    heur = heuristics.load(os.path.join(ROOT, "experiments", "h200", "h200-b1cc3709.yaml"))
    heur = dataclasses.replace(heur, provenance={"databases": ["db/quack.sqlite"]}, holdout={})
    return fast_yaml.safe_load(heuristics.to_yaml(heur))


def _variant(doc: dict, path: tuple, value) -> dict:
    import copy

    out = copy.deepcopy(doc)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


SMOKE = {"kernels": ["rmsnorm_fwd"], "shapes": ["32768x4096"], "dtypes": ["bf16"], "trials": 5}

EXPERIMENTS = {
    "name_up.yaml": dict(SMOKE, name="../../outside"),
    "name_abs.yaml": dict(SMOKE, name="/tmp/outside"),
    "name_dots.yaml": dict(SMOKE, name=".."),
    "name_slash.yaml": dict(SMOKE, name="db/x"),
    "unknown_key.yaml": dict(SMOKE, budget=3),
    "no_kernels.yaml": {k: v for k, v in SMOKE.items() if k != "kernels"},
    "storage_list.yaml": dict(SMOKE, storage=[1, 2]),
    "trials_neg.yaml": dict(SMOKE, trials=-1),
    "sampler_bad.yaml": dict(SMOKE, sampler="anneal"),
    "grid_bad.yaml": dict(SMOKE, grid={"warps": [1]}),
    "shapes_wide.yaml": dict(SMOKE, shapes=["\uff11\uff12x34"]),
    "list.yaml": ["kernels", "shapes"],
    "trials_inf.yaml": dict(SMOKE, trials=float("inf")),
    "timeout_nan.yaml": dict(SMOKE, timeout=float("nan")),
    "warmup_nan.yaml": dict(SMOKE, measure={"warmup_ms": float("nan")}),
    "heartbeat_inf.yaml": dict(SMOKE, heartbeat=float("inf")),
    "shape_pair_inf.yaml": dict(SMOKE, shapes=[[float("inf"), 2]]),
    "shape_pair_float.yaml": dict(SMOKE, shapes=[[4.5, 2]]),
    "shape_huge.yaml": dict(SMOKE, shapes=["99999999999999999999999x4"]),
}


def _heuristic_variants(doc: dict) -> dict:
    rule = next(i for i, r in enumerate(doc["rules"]) if r.get("reductions"))
    looped = next(i for i, r in enumerate(doc["rules"]) if r["action"] == "config" and "num_stages" in r["config"])
    mix = next(i for i, r in enumerate(doc["rules"]) if r["action"] == "config" and r["kind"] == "mix_order")
    return {
        "h_name_newline.yaml": _variant(doc, ("gpu", "name"), "NVIDIA H200\nimport os"),
        "h_name_quote.yaml": _variant(doc, ("gpu", "name"), 'H200"""; import os; """'),
        "h_name_empty.yaml": _variant(doc, ("gpu", "name"), ""),
        "h_fp_backslash.yaml": _variant(doc, ("gpu", "fingerprint"), "NVIDIA-H200\\x"),
        "h_fp_newline.yaml": _variant(doc, ("gpu", "fingerprint"), "fp\ndiff --git a/evil b/evil"),
        "h_torch_quote.yaml": _variant(doc, ("gpu", "torch"), "2.13'"),
        "h_triton_ctrl.yaml": _variant(doc, ("gpu", "triton"), "3.6\x1b[2J"),
        "h_sm_neg.yaml": _variant(doc, ("gpu", "sm_count"), -1),
        "h_sm_zero.yaml": _variant(doc, ("gpu", "sm_count"), 0),
        "h_sm_text.yaml": _variant(doc, ("gpu", "sm_count"), "132"),
        "h_sm_bool.yaml": _variant(doc, ("gpu", "sm_count"), True),
        "h_cc_word.yaml": _variant(doc, ("gpu", "compute_capability"), "nine"),
        "h_cc_newline.yaml": _variant(doc, ("gpu", "compute_capability"), "9.0\nimport os"),
        "h_cc_triple.yaml": _variant(doc, ("gpu", "compute_capability"), "9.0.1"),
        "h_reductions_newline.yaml": _variant(doc, ("rules", rule, "reductions"), "sum\nimport os"),
        "h_reductions_code.yaml": _variant(doc, ("rules", rule, "reductions"), "sum'); import os; ('"),
        "h_envelope_code.yaml": _variant(doc, ("rules", rule, "envelopes"), ["x=1\nimport os"]),
        "h_gain_text.yaml": _variant(doc, ("rules", rule, "evidence", "gain_min"), "abc"),
        "h_shapes_number.yaml": _variant(doc, ("rules", rule, "evidence", "shapes"), [1, 2]),
        "h_provenance_list.yaml": _variant(doc, ("provenance",), ["db/quack.sqlite"]),
        "h_databases_ints.yaml": _variant(doc, ("provenance",), {"databases": [1]}),
        "h_format.yaml": _variant(doc, ("format",), "inductor-tune-heuristics/0"),
        "h_stages_text.yaml": _variant(doc, ("rules", looped, "config", "num_stages"), "x"),
        "h_stages_neg.yaml": _variant(doc, ("rules", looped, "config", "num_stages"), -1),
        "h_mix_stages_float.yaml": _variant(doc, ("rules", mix, "config", "NUM_STAGES"), 2.5),
    }


def _sqlite(path, statements=()):
    con = sqlite3.connect(path)
    for statement in statements:
        con.execute(statement)
    con.commit()
    con.close()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    ws = tmp_path_factory.mktemp("ws")
    (ws / "db").mkdir()
    for name in ("quack", "sweeps", "crossmeasure"):
        shutil.copy(os.path.join(ROOT, "db", f"{name}.sqlite"), ws / "db" / f"{name}.sqlite")
    shutil.copytree(os.path.join(ROOT, "experiments"), ws / "experiments",
                    ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    (ws / "heuristics").mkdir()
    doc = _heuristic_doc()
    (ws / "heuristics" / "h200.yaml").write_text(fast_yaml.safe_dump(doc))
    for name, variant in _heuristic_variants(doc).items():
        (ws / name).write_text(fast_yaml.safe_dump(variant))
    for name, data in EXPERIMENTS.items():
        (ws / name).write_text(fast_yaml.safe_dump(data, allow_unicode=True))
    (ws / "junk.yaml").write_bytes(bytes(range(256)) * 8)
    (ws / "nul.yaml").write_bytes(b"kernels: [rmsnorm_fwd]\x00\n")
    (ws / "deep.yaml").write_text("[" * 20000 + "]" * 20000)
    (ws / "syntax.yaml").write_text("kernels: [rmsnorm_fwd\n")
    (ws / "empty.yaml").write_text("")
    (ws / "notes.sqlite").write_text("not a database\n")
    (ws / "adir").mkdir()
    (ws / "adir" / "keep.txt").write_text("keep\n")
    (ws / "afile").write_text("a file\n")
    quack = (ws / "db" / "quack.sqlite").read_bytes()
    (ws / "trunc.sqlite").write_bytes(quack[:100_000])
    (ws / "header.sqlite").write_bytes(quack[:16])
    corrupt = bytearray(quack)
    corrupt[4096 * 3: 4096 * 5] = b"\xff" * 8192
    (ws / "corrupt.sqlite").write_bytes(bytes(corrupt))
    os.symlink(ws / "db" / "quack.sqlite", ws / "quack-link.sqlite")
    from inductor_tune.store import Store

    Store(f"sqlite:///{ws / 'empty.sqlite'}").engine.dispose()  # the schema, no studies
    _sqlite(ws / "foreign.sqlite", ["CREATE TABLE t (x INTEGER)"])
    shutil.copy(ws / "empty.sqlite", ws / "newer.sqlite")
    _sqlite(ws / "newer.sqlite", ["UPDATE it_schema SET version = 99"])
    (ws / "demo-done").mkdir()
    (ws / "demo-done" / "demo.yaml").write_text("name: demo\n")
    (ws / "torch-bad" / "torch").mkdir(parents=True)
    (ws / "torch-bad" / "torch" / "version.py").write_text("__version__ = 'abc'\n")
    return ws


def _snapshot(root) -> dict:
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            if name.endswith("-shm"):  # SQLite's shared-memory index: rewritten by any reader
                continue
            if name.endswith("-wal"):  # present while a connection is open; must hold no write
                if os.path.getsize(path):
                    out[rel] = "non-empty WAL"
                continue
            if os.path.islink(path):
                out[rel] = "link -> " + os.readlink(path)
                continue
            with open(path, "rb") as fh:
                out[rel] = hashlib.sha256(fh.read()).hexdigest()
    return out


RS = "--replay"
H = "heuristics/h200.yaml"
Q = "db/quack.sqlite"
SM = "experiments/smoke.yaml"

CASES = [
    # -- no command, or none known
    ([], "required"),
    (["nosuch"], "invalid choice"),
    (["-v"], "required"),
    # -- gpus
    (["gpus", "--bogus"], "unrecognized arguments"),
    (["gpus", "extra"], "unrecognized arguments"),
    # -- tune: the experiment file
    (["tune", "junk.yaml"], "not a YAML text file"),
    (["tune", "nul.yaml"], "not valid YAML"),
    (["tune", "deep.yaml"], "nested too deeply"),
    (["tune", "syntax.yaml"], "not valid YAML at line"),
    (["tune", "empty.yaml"], "must be a YAML mapping"),
    (["tune", "list.yaml"], "must be a YAML mapping"),
    (["tune", "adir"], "is a directory"),
    (["tune", "experiments"], "is a directory"),
    (["tune", "missing.yaml"], "does not exist"),
    (["tune", "name_up.yaml"], "experiment name '../../outside'"),
    (["tune", "name_abs.yaml"], "experiment name '/tmp/outside'"),
    (["tune", "name_dots.yaml"], "experiment name '..'"),
    (["tune", "name_slash.yaml"], "experiment name 'db/x'"),
    (["tune", "unknown_key.yaml"], "unknown key(s) budget"),
    (["tune", "no_kernels.yaml"], "missing required key 'kernels'"),
    (["tune", "storage_list.yaml"], "'storage' must be"),
    (["tune", "trials_neg.yaml"], "'trials' must be a positive number"),
    (["tune", "sampler_bad.yaml"], "unknown sampler"),
    (["tune", "grid_bad.yaml"], "unknown grid field"),
    (["tune", "shapes_wide.yaml"], "not MxN"),
    (["tune", "trials_inf.yaml"], "'trials' must be a positive number"),
    (["tune", "timeout_nan.yaml"], "'timeout' must be a positive number"),
    (["tune", "warmup_nan.yaml"], "'measure.warmup_ms' must be a positive number"),
    (["tune", "heartbeat_inf.yaml"], "'heartbeat' must be a positive number"),
    (["tune", "shape_pair_inf.yaml"], "not MxN"),
    (["tune", "shape_pair_float.yaml"], "not MxN"),
    (["tune", "shape_huge.yaml"], "at most 1099511627776"),
    (["tune", SM, "--timeout", "nan"], "'timeout' must be a positive number"),
    (["tune", SM, "--trial-timeout", "inf"], "'trial_timeout' must be a positive number"),
    (["tune", SM, "--shapes", "99999999999999999999999x4"], "at most 1099511627776"),
    # -- tune: options
    (["tune", SM, "--shapes", "\uff11\uff12x\uff13\uff14"], "not MxN"),
    (["tune", SM, "--shapes", "2x\u00b2"], "not MxN"),
    (["tune", SM, "--shapes", "0x5"], "not MxN"),
    (["tune", SM, "--shapes", "4096"], "not MxN"),
    (["tune", SM, "--shapes", ""], "'shapes' is empty"),
    (["tune", SM, "--kernels", "groupnorm"], "unknown kernel(s) groupnorm"),
    (["tune", SM, "--dtypes", "fp64"], "unknown dtype(s) fp64"),
    (["tune", SM, "--trials", "abc"], "invalid int value"),
    (["tune", SM, "--trials", "0"], "'trials' must be a positive number"),
    (["tune", SM, "--timeout", "-5"], "'timeout' must be a positive number"),
    (["tune", SM, "--trial-timeout", "nan?"], "invalid float value"),
    (["tune", SM, "--sampler", "anneal"], "unknown sampler"),
    (["tune", SM, "--seed", "-1"], "'seed' must be a non-negative integer"),
    (["tune", SM, "--warm-start", "-1"], "'warm_start' must be a non-negative integer"),
    (["tune", SM, "--workers", "0"], "'workers' must be a positive number"),
    (["tune", SM, "--gpus", "0,0"], "distinct device indices"),
    (["tune", SM, "--gpus", "a,b"], "not a comma-separated list"),
    (["tune", SM, "--gpu", "-1"], "--gpu -1"),
    (["tune", SM, "--bogus"], "unrecognized arguments"),
    # -- tune: storage
    (["tune", SM, "--storage", "adir"], "adir is a directory"),
    (["tune", SM, "--storage", "notes.sqlite"], "not an SQLite database"),
    (["tune", SM, "--storage", "trunc.sqlite"], "not a readable SQLite database"),
    (["tune", SM, "--storage", "corrupt.sqlite"], "damaged SQLite database"),
    (["tune", SM, "--storage", "header.sqlite"], "not a readable SQLite database"),
    (["tune", SM, "--storage", "newer.sqlite"], "newer inductor_tune"),
    (["tune", SM, "--storage", "nosuchdb://host/x"], "cannot load its database driver"),
    (["tune", SM, "--storage", "sqlite:///nofolder/x.sqlite"], "missing or not writable"),
    (["tune", SM, "--storage", CLOSED_PG], "cannot connect to postgresql+psycopg2://it:***@127.0.0.1:1"),
    (["tune", SM, "--storage", "postgresql+psycopg2://it:wrong@127.0.0.1:1/missing_db"], "cannot connect"),
    # -- tune: replay
    (["tune", "experiments/quack.yaml", RS, Q], "also the storage"),  # the old no-GPU hint
    (["tune", SM, RS, Q, "--storage", Q], "also the storage"),
    (["tune", SM, RS, "db/../db/quack.sqlite", "--storage", f"sqlite:///{Q}"], "also the storage"),
    (["tune", SM, RS, "quack-link.sqlite", "--storage", Q], "also the storage"),
    (["tune", SM, RS, "junk.yaml", "--storage", "out.sqlite"], "not an SQLite database"),
    (["tune", SM, RS, "trunc.sqlite", "--storage", "out.sqlite"], "not a readable SQLite database"),
    (["tune", SM, RS, "corrupt.sqlite", "--storage", "out.sqlite"], "damaged SQLite database"),
    (["tune", SM, RS, "adir", "--storage", "out.sqlite"], "adir is a directory"),
    (["tune", SM, RS, "missing.sqlite", "--storage", "out.sqlite"], "no database at missing.sqlite"),
    (["tune", SM, RS, "empty.sqlite", "--storage", "out.sqlite"], "no recorded studies"),
    (["tune", SM, RS, "foreign.sqlite", "--storage", "out.sqlite"], "holds no inductor_tune studies"),
    (["tune", SM, RS, Q, "--shapes", "8x8", "--storage", "out.sqlite"], "no recorded study of rmsnorm_fwd 8x8"),
    (["tune", SM, RS, CLOSED_PG, "--storage", "out.sqlite"], "cannot connect"),
    # -- sweep
    (["sweep", "junk.yaml"], "not a YAML text file"),
    (["sweep", "experiments/sweep_fwd.yaml", "--storage", "adir"], "is a directory"),
    (["sweep", "experiments/sweep_fwd.yaml", RS, "db/sweeps.sqlite", "--storage", "db/sweeps.sqlite"],
     "also the storage"),
    (["sweep", "experiments/sweep_fwd.yaml", "--trials", "5"], "unrecognized arguments"),
    (["sweep", "experiments/sweep_fwd.yaml", "--shapes", "1x"], "not MxN"),
    (["sweep", "experiments/sweep_fwd.yaml", RS, "trunc.sqlite", "--storage", "out.sqlite"], "not a readable"),
    # -- demo
    (["demo", "--out", "afile"], "exists and is not a folder"),
    (["demo", "--out", "/proc/inductor-tune-demo"], "cannot create --out"),
    (["demo", "--out", "demo-done"], "already holds demo.yaml"),
    (["demo", "--trials", "1"], "--trials must be at least 2"),
    (["demo", "--trials", "x"], "invalid int value"),
    # -- bench-search
    (["bench-search", "adir"], "is a directory"),
    (["bench-search", "trunc.sqlite"], "not a readable SQLite database"),
    (["bench-search", "corrupt.sqlite"], "damaged SQLite database"),
    (["bench-search", "notes.sqlite"], "not an SQLite database"),
    (["bench-search", "missing.sqlite"], "no database at"),
    (["bench-search", "empty.sqlite"], "has no complete sweep"),
    (["bench-search", "db/sweeps.sqlite", "--strategies", "bogus"], "unknown strategy bogus"),
    (["bench-search", "db/sweeps.sqlite", "--strategies", ","], "unknown strategy (none)"),
    (["bench-search", "db/sweeps.sqlite", "--seeds", "0"], "must be positive"),
    (["bench-search", "db/sweeps.sqlite", "--budget", "-1"], "must be positive"),
    (["bench-search", "db/sweeps.sqlite", "--out", "afile"], "exists and is not a folder"),
    # -- show
    (["show", "adir"], "is a directory"),
    (["show", "trunc.sqlite"], "not a readable SQLite database"),
    (["show", "corrupt.sqlite"], "damaged SQLite database"),
    (["show", "header.sqlite"], "not a readable SQLite database"),
    (["show", "notes.sqlite"], "not an SQLite database"),
    (["show", "missing.sqlite"], "no database at"),
    (["show", "empty.sqlite"], "has no studies"),
    (["show", "foreign.sqlite"], "holds no inductor_tune studies"),
    (["show", "newer.sqlite"], "newer inductor_tune"),
    (["show", CLOSED_PG], "cannot connect"),
    (["show", "nosuchdb://x"], "cannot load its database driver"),
    (["show", Q, "--kernel", "groupnorm"], "no studies matching"),
    (["show", "--wide"], "required"),
    # -- report
    (["report", "adir"], "is a directory"),
    (["report", "trunc.sqlite"], "not a readable SQLite database"),
    (["report", "corrupt.sqlite"], "damaged SQLite database"),
    (["report", "notes.sqlite"], "not an SQLite database"),
    (["report", "missing.sqlite"], "no database at"),
    (["report", "empty.sqlite", "--out", "rep"], "has no studies"),
    (["report", Q, "--gpu", "B200", "--out", "rep"], "has no studies on a GPU matching"),
    (["report", CLOSED_PG], "cannot connect"),
    (["report", Q, "--out", "afile"], "exists and is not a folder"),
    (["report", Q, "--heuristics", "missing.yaml", "--out", "rep"], "cannot read heuristic file"),
    (["report", Q, "--heuristics", "adir", "--out", "rep"], "is a directory"),
    (["report", Q, "--heuristics", "junk.yaml", "--out", "rep"], "not a YAML text file"),
    (["report", Q, "--heuristics", "h_format.yaml", "--out", "rep"], "format is"),
    (["report", "empty.sqlite", "--heuristics", H, "--out", "rep"], "no validation records"),
    # -- crossmeasure
    (["crossmeasure", "adir"], "is a directory"),
    (["crossmeasure", "trunc.sqlite"], "not a readable SQLite database"),
    (["crossmeasure", "foreign.sqlite", "--storage", "cm.sqlite"], "holds no inductor_tune studies"),
    (["crossmeasure", Q, "--storage", "adir"], "is a directory"),
    (["crossmeasure", Q, "--storage", "corrupt.sqlite"], "damaged SQLite database"),
    (["crossmeasure", Q, "--rounds", "1"], "--rounds must be at least 2"),
    (["crossmeasure", Q, "--storage", Q, "--plan-only", "H200"], "also read as a database of studies"),
    (["crossmeasure", Q, "--storage", "quack-link.sqlite"], "also read as a database of studies"),
    (["crossmeasure", Q, "--top", "0"], "--top and --max-configs at least 1"),
    (["crossmeasure", Q, "--probes", "bogus"], "unknown kind(s) bogus"),
    (["crossmeasure", Q, "--kernels", "groupnorm"], "unknown kernel(s)"),
    (["crossmeasure", Q, RS, "db/sweeps.sqlite", "--storage", "db/sweeps.sqlite"], "also the storage"),
    (["crossmeasure", Q, RS, "trunc.sqlite", "--storage", "cm.sqlite"], "not a readable SQLite database"),
    (["crossmeasure", Q, "--hold-out", "1x", "--storage", "cm.sqlite"], "not MxN"),
    (["crossmeasure", Q, "--storage", "cm.sqlite", "--plan-only", "B200"], "no studies or crossmeasure records of a GPU matching"),
    (["crossmeasure", Q, "--storage", "cm.sqlite", "--gpu", "-1"], "--gpu -1"),
    (["crossmeasure", Q, "--storage", "cm.sqlite", "--workers", "0"], "--workers must be at least 1"),
    # -- distill
    (["distill", "adir", "--gpu", "H200"], "is a directory"),
    (["distill", "trunc.sqlite", "--gpu", "H200"], "not a readable SQLite database"),
    (["distill", "corrupt.sqlite", "--gpu", "H200"], "damaged SQLite database"),
    (["distill", "notes.sqlite", "--gpu", "H200"], "not an SQLite database"),
    (["distill", "missing.sqlite", "--gpu", "H200"], "no database at"),
    (["distill", Q, "--gpu", "B200", "--out", "h.yaml"], "no studies or crossmeasure records of a GPU matching"),
    (["distill", Q, "--gpu", "H200", "--min-coverage", "2"], "--min-coverage must lie in [0, 1]"),
    (["distill", Q, "--gpu", "H200", "--min-shapes", "0"], "--min-shapes be at least 1"),
    (["distill", Q, "--gpu", "H200", "--workers", "0"], "--workers must be at least 1"),
    (["distill", Q, "--gpu", "H200", "--hold-out", "4096"], "not MxN"),
    (["distill", Q, "--gpu", "H200", "--out", "adir"], "is a directory"),
    (["distill", Q], "required: --gpu"),
    (["distill", Q, "--gpu", "H200", "--out", Q], "is one of the databases read"),
    (["distill", Q, "--gpu", "H200", "--out", "quack-link.sqlite"], "is one of the databases read"),
    (["distill", CLOSED_PG, "--gpu", "H200"], "cannot connect"),
    # -- patch
    (["patch", "junk.yaml"], "not a YAML text file"),
    (["patch", "deep.yaml"], "nested too deeply"),
    (["patch", "adir"], "is a directory"),
    (["patch", "missing.yaml"], "cannot read heuristic file"),
    (["patch", "empty.yaml"], "not a heuristic file"),
    (["patch", "h_format.yaml"], "format is"),
    (["patch", "h_name_newline.yaml"], "gpu: name may hold only printable ASCII"),
    (["patch", "h_name_quote.yaml"], "gpu: name may hold only printable ASCII"),
    (["patch", "h_name_empty.yaml"], "gpu: name must be a non-empty text"),
    (["patch", "h_fp_backslash.yaml"], "gpu: fingerprint may hold only"),
    (["patch", "h_fp_newline.yaml"], "gpu: fingerprint may hold only"),
    (["patch", "h_torch_quote.yaml"], "gpu: torch may hold only"),
    (["patch", "h_triton_ctrl.yaml"], "gpu: triton may hold only"),
    (["patch", "h_sm_neg.yaml"], "sm_count -1 is not a positive number"),
    (["patch", "h_sm_zero.yaml"], "sm_count 0 is not a positive number"),
    (["patch", "h_sm_text.yaml"], "`sm_count` must be int"),
    (["patch", "h_sm_bool.yaml"], "`sm_count` must be int"),
    (["patch", "h_cc_word.yaml"], "compute_capability 'nine' is not like '9.0'"),
    (["patch", "h_cc_newline.yaml"], "is not like '9.0'"),
    (["patch", "h_cc_triple.yaml"], "is not like '9.0'"),
    (["patch", "h_reductions_newline.yaml"], "reductions 'sum\\nimport os' is not like"),
    (["patch", "h_reductions_code.yaml"], "is not like 'sum'"),
    (["patch", "h_envelope_code.yaml"], "envelopes must be a list"),
    (["patch", "h_gain_text.yaml"], "`gain_min` must be a number"),
    (["patch", "h_shapes_number.yaml"], "`shapes` must be a list of texts"),
    (["patch", "h_provenance_list.yaml"], "must be mappings"),
    (["patch", "h_databases_ints.yaml"], "`databases` must be a list"),
    (["patch", "h_stages_text.yaml"], "num_stages='x' is not a whole number of stages"),
    (["patch", "h_stages_neg.yaml"], "num_stages=-1 is not a whole number of stages"),
    (["patch", "h_mix_stages_float.yaml"], "NUM_STAGES=2.5 is not a whole number of stages"),
    (["patch", H, "--torch-root", "adir"], "holds no torch/version.py"),
    (["patch", H, "--torch-root", "torch-bad"], "torch version 'abc' is not like"),
    (["patch", H, "--out", "adir"], "is a directory"),
    (["patch", H, "--out", H], "is the heuristic file read"),
    # -- validate: reported before "no CUDA GPU"
    (["validate", "junk.yaml", "--shapes", "32768x4096"], "not a YAML text file"),
    (["validate", "h_name_newline.yaml", "--shapes", "32768x4096"], "gpu: name may hold only"),
    (["validate", "h_sm_neg.yaml", "--shapes", "32768x4096"], "sm_count -1"),
    (["validate", H], "one of the arguments"),
    (["validate", H, "--shapes", "\uff11x2"], "not MxN"),
    (["validate", H, "--shapes", "0x1"], "not MxN"),
    (["validate", H, "--shapes", "32768x4096", "--kernels", "groupnorm"], "unknown kernel(s)"),
    (["validate", H, "--shapes", "32768x4096", "--dtypes", "fp64"], "unknown dtype(s)"),
    (["validate", H, "--shapes", "32768x4096", "--rounds", "1"], "--rounds must be at least 2"),
    (["validate", H, "--suite", "nosuch"], "does not exist"),
    (["validate", H, "--suite", "adir"], "is a directory"),
    (["validate", H, "--suite", "junk.yaml"], "not a YAML text file"),
    (["validate", H, "--shapes", "32768x4096", "--db", "adir"], "is a directory"),
    (["validate", H, "--shapes", "32768x4096", "--db", "trunc.sqlite"], "not a readable SQLite database"),
    (["validate", H, "--shapes", "32768x4096", "--db", "foreign.sqlite"], "holds no inductor_tune studies"),
    (["validate", H, "--shapes", "32768x4096", "--db", "newer.sqlite"], "newer inductor_tune"),
    (["validate", H, "--shapes", "32768x4096", "--db", Q, "--storage", "adir"], "is a directory"),
    (["validate", H, "--shapes", "32768x4096", "--db", Q, "--storage", "corrupt.sqlite"], "damaged"),
    (["validate", H, "--shapes", "32768x4096", "--db", Q, "--storage", Q], "also read as a database of studies"),
    (["validate", H, "--shapes", "32768x4096", "--storage", Q], "also read as a database of studies"),
    (["validate", H, "--shapes", "32768x4096", "--storage", CLOSED_PG], "cannot connect"),
    (["validate", H, "--shapes", "32768x4096", "--gpu", "-1"], "--gpu -1"),
    (["validate", H, "--shapes", "32768x4096", "--workers", "0"], "--workers must be at least 1"),
    (["validate", H, "--random", "0"], "--random must be at least 1"),
    (["validate", H, "--random", "x"], "--random 'x' is not an integer"),
    (["validate", H, "--random", "99999999999999999999999"], "--random must be at most"),
    (["validate", H, "--random", "3", "--seed", "-3"], "--seed must be at least 0"),
    (["validate", H, "--random", "3", "--dtypes", "bf16,fp16"], "one dtype"),
    (["validate", H, "--random", "3", "--max-gib", "0"], "--max-gib must be a positive number"),
    (["validate", H, "--models", "nope"], "nope"),
    (["validate", H, "--models", "--kernels", "rmsnorm_fwd"], "--models does not take --kernels"),
    (["validate", H, "--models", "--gpu", "-2"], "--gpu -2"),
    (["validate", H, "--models", "--storage", "adir"], "is a directory"),
]


def test_the_table_covers_every_subcommand_with_a_hundred_cases():
    commands = {argv[0] for argv, _ in CASES if argv and not argv[0].startswith("-")}
    assert {"gpus", "tune", "sweep", "demo", "bench-search", "show", "report", "crossmeasure", "distill", "patch",
            "validate"} <= commands
    assert len(CASES) >= 100


@pytest.mark.parametrize("argv, fragment", CASES, ids=[" ".join(a)[:80] or "(none)" for a, _ in CASES])
def test_bad_input_is_one_line_exit_2_and_changes_nothing(workspace, monkeypatch, capsys, caplog, argv, fragment):
    monkeypatch.chdir(workspace)
    caplog.set_level(logging.WARNING)
    before = _snapshot(workspace)
    try:
        code = cli.main(list(argv))
    except BaseException:  # noqa: BLE001 - a traceback is the failure this test looks for
        pytest.fail(f"inductor-tune {' '.join(argv)} raised:\n{traceback.format_exc()}")
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith("inductor-tune: error: "), err
    assert "Traceback" not in err
    assert fragment in lines[0], lines[0]
    assert "no CUDA GPU" not in lines[0]
    assert "secret" not in lines[0]  # a password in a URL is never echoed
    # In a real process each log record at WARNING or above is one more stderr line.
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert _snapshot(workspace) == before


SUBPROCESS_CASES = [
    ["tune", "junk.yaml"],
    ["show", "trunc.sqlite"],
    ["tune", "experiments/quack.yaml", RS, Q],
    ["crossmeasure", Q, RS, "db/sweeps.sqlite", "--storage", "db/sweeps.sqlite"],
    ["tune", SM, "--trials", "abc"],
    ["report", CLOSED_PG],
    ["patch", "h_reductions_newline.yaml"],
]


@pytest.mark.parametrize("argv", SUBPROCESS_CASES, ids=[" ".join(a)[:60] for a in SUBPROCESS_CASES])
def test_a_real_process_prints_the_one_line_too(workspace, argv):
    """Logging to stderr (not captured in-process) and the interpreter's own output included."""
    before = _snapshot(workspace)
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-m", "inductor_tune", *argv], capture_output=True, text=True,
                          cwd=workspace, env=env, timeout=300)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("inductor-tune: error: "), proc.stderr
    assert _snapshot(workspace) == before
