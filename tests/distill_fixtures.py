"""Small databases cut from the recorded H200 data (db/*.sqlite, read only) for the distil tests.

Rows are copied verbatim (same ids, same measurements) into fresh SQLite files, one per source
database because the sources reuse ids: the studies (with their trials and verdicts) named below,
and from db/crossmeasure.sqlite every crossmeasure record of those studies' shapes, with the GPU
rows they refer to.  Nothing here is invented: the fixture is the real data, fewer shapes.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import tempfile

import sqlalchemy as sa

from inductor_tune import distill
from inductor_tune.heuristics import Heuristics, RuleSpec
from inductor_tune.space import SlotConfig
from inductor_tune.store import CrossMeasureRecord, Gpu, OriginList, Store, Study, TrialRecord, Verdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPU = "NVIDIA-H200/sm90x132/torch2.11.0+cu130/triton3.6.0"
KERNELS = ("rmsnorm_fwd", "layernorm_fwd", "softmax_fwd", "rmsnorm_bwd", "layernorm_bwd")
FWD = KERNELS[:3]

# Forward kernels at N = 256 (Inductor's persistent class), 2048 and 4096 (its looped class) and 5120
# (r=8192), the fused mix-order backward at N = 2048 and 5120 (whose crossmeasure has configs that
# ran out of shared memory), one multi-kernel backward study that distill must skip, and every kernel
# at 16384x1536 from the hold-out set (N=1536 shares the r=2048 size group with N=2048).
FIXTURE_STUDIES = {
    "quack": [f"{k}/32768x{n}/bf16" for k in FWD for n in (256, 2048, 4096)]
    + ["rmsnorm_bwd/32768x2048/bf16", "layernorm_bwd/32768x2048/bf16"],
    "llm": [f"{k}/{m}x{n}/bf16" for k in FWD for m in (8192, 32768) for n in (2048, 4096, 5120)]
    + [f"{k}/{m}x2048/bf16" for k in ("rmsnorm_bwd", "layernorm_bwd") for m in (8192, 32768)]
    + ["rmsnorm_bwd/8192x5120/bf16", "rmsnorm_bwd/32768x5120/bf16"],
    "holdout": [f"{k}/16384x1536/bf16" for k in KERNELS],
}
MULTI_KERNEL = "rmsnorm_bwd/8192x5120/bf16"  # 3 reduction kernels under Inductor's default flags
HELD_OUT = "16384x1536"
# Crossmeasure probes (crossmeasure.probes: 3/2 of a studied shape's rows, no study there) of the fused
# backward at N = 1536 and 2048; at 24576x2048 the split-32 config that won at 8192 and 32768 rows lost.
PROBE_SHAPES = frozenset((k, m, n, "bf16") for k in ("rmsnorm_bwd", "layernorm_bwd")
                         for m, n in ((12288, 2048), (24576, 1536), (24576, 2048), (49152, 2048)))


# The crossmeasure records the tests' expectations were read from (stop 10, 2026-11-23: ids 1..202); later
# records of the same shapes (the envelope-keyed plan's) would change which configs the fixture sees.
CROSSMEASURE_MAX_ID = 202


def _shape_key(name: str) -> tuple:
    kernel, shape, dtype = name.split("/")
    rows, cols = shape.split("x")
    return kernel, int(rows), int(cols), dtype


FIXTURE_SHAPES = frozenset(_shape_key(n) for names in FIXTURE_STUDIES.values() for n in names)


def _copy_subset(source: str, dest: str, prefixes: list[str] | None, shapes=FIXTURE_SHAPES) -> None:
    """Studies named by ``prefixes`` with their trials and verdicts; None: the crossmeasure records of
    ``shapes`` instead."""
    src = Store(f"sqlite:///{source}", create=False)
    dst = Store(f"sqlite:///{dest}", create=True)
    with src.engine.connect() as s, dst.engine.begin() as d:
        d.execute(sa.insert(Gpu.__table__), [dict(r) for r in s.execute(sa.select(Gpu.__table__)).mappings()])
        if prefixes is None:
            table = CrossMeasureRecord.__table__
            rows = [dict(r) for r in s.execute(sa.select(table).order_by(table.c.id)).mappings()
                    if (r["kernel"], r["rows"], r["cols"], r["dtype"]) in shapes and r["id"] <= CROSSMEASURE_MAX_ID]
            d.execute(sa.insert(table), rows)
            if src._has_table(OriginList):  # the lists the copied records refer to (schema 6 on)
                lists = [dict(r) for r in s.execute(sa.select(OriginList.__table__)).mappings()]
                if lists:
                    d.execute(sa.insert(OriginList.__table__), lists)
        else:
            studies = [r for r in s.execute(sa.select(Study.__table__)).mappings()
                       if any(r["name"].startswith(p + "@") for p in prefixes)]
            assert len(studies) == len(prefixes), "a fixture study is missing from its database"
            ids = [r["id"] for r in studies]
            d.execute(sa.insert(Study.__table__), [dict(r) for r in studies])
            for table in (TrialRecord.__table__, Verdict.__table__):
                rows = [dict(r) for r in s.execute(sa.select(table).where(table.c.study_id.in_(ids))).mappings()]
                if rows:
                    d.execute(sa.insert(table), rows)
    src.engine.dispose()
    dst.engine.dispose()


def _build(folder: str, sources: dict[str, list[str] | None], shapes=FIXTURE_SHAPES, suffix="") -> tuple[str, ...]:
    out = []
    for name, prefixes in sources.items():
        # Copy the source first so that db/ is only ever read by a plain file copy.
        source = os.path.join(folder, f"source-{name}.sqlite")
        shutil.copyfile(os.path.join(ROOT, "db", f"{name}.sqlite"), source)
        dest = os.path.join(folder, f"{name}{suffix}.sqlite")
        _copy_subset(source, dest, prefixes, shapes)
        os.unlink(source)
        out.append(dest)
    return tuple(out)


@functools.lru_cache(maxsize=None)
def fixture_dbs() -> tuple[str, ...]:
    """Paths of the fixture databases, quack, llm, holdout (studies) then crossmeasure (records),
    built once per test session in a temporary folder."""
    return _build(tempfile.mkdtemp(prefix="it-distill-fixture-"), {**FIXTURE_STUDIES, "crossmeasure": None})


@functools.lru_cache(maxsize=None)
def probe_db() -> str:
    """The crossmeasure records at PROBE_SHAPES (no study ran there), in a database of their own."""
    (path,) = _build(tempfile.mkdtemp(prefix="it-probe-fixture-"), {"crossmeasure": None}, PROBE_SHAPES, "-probes")
    return path


def study_dbs() -> tuple[str, ...]:
    """The fixture's study databases without the crossmeasure records."""
    return fixture_dbs()[:3]


def stores(paths=None) -> list[Store]:
    return [Store(f"sqlite:///{p}", create=False) for p in (paths or fixture_dbs())]


@functools.lru_cache(maxsize=None)
def fixture_points():
    """(gpu, points, skipped) of every fixture database, crossmeasure records merged in."""
    opened = stores()
    gpu = distill.select_gpu(opened, "H200")
    points, skipped = distill.load_points(opened, gpu)
    return gpu, tuple(points), tuple(skipped)


@functools.lru_cache(maxsize=None)
def study_points():
    """The same shapes from the studies alone (no crossmeasure records)."""
    opened = stores(study_dbs())
    points, _ = distill.load_points(opened, distill.select_gpu(opened, "H200"))
    return tuple(points)


# Real verdict winners, used as rules of the hook types the fit does not produce here: a looped config
# (layernorm_fwd 8192x5120) and a move out of Inductor's persistent class (layernorm_fwd 32768x256,
# looped instead of persistent).
LOOPED_8192 = SlotConfig(persistent=False, XBLOCK=2, num_warps=8, R0_BLOCK=1024, num_stages=2)
LOOPED_256 = SlotConfig(persistent=False, XBLOCK=64, num_warps=8, R0_BLOCK=64, num_stages=4)
LAYERNORM = "welford_reduce+welford_reduce"


@functools.lru_cache(maxsize=None)
def relaxed_heuristics() -> Heuristics:
    """One config rule of every hook type from the fixture's real measurements: the fitted inner_looped
    rule at r=2048..4096 (softmax, a persistent config), the fitted mix_order rule at r=2048 (LayerNorm's
    backward: RMSNorm's keeps the default there), and two verdict winners of layernorm_fwd (a looped inner_looped rule at r=8192, a looped
    inner_persistent rule at r=256).  Each keeps the kernel signature of the shapes it comes from.
    For the patch and install tests, not for deployment."""
    gpu, points, _ = fixture_points()
    fitted = distill.fit_rules(points)
    wanted = {("inner_looped", "online_softmax_reduce+online_softmax_reduce"), ("mix_order", "sum+sum@backward")}
    rules = [r for r in fitted if r.config is not None and r.rnumel[0] == 2048 and (r.kind, r.reductions) in wanted]
    assert len(rules) == 2, "the fixture no longer fits both rules; pick others"
    rules.append(RuleSpec("inner_looped", 2, (8192, 8192), (8192, 32768), LOOPED_8192, reductions=LAYERNORM))
    rules.append(RuleSpec("inner_persistent", 2, (256, 256), (32768, 32768), LOOPED_256, reductions=LAYERNORM))
    return Heuristics(gpu, tuple(rules), provenance={"databases": list(fixture_dbs())})


def write_heuristics(tmp_path, heur: Heuristics, edit=None) -> str:
    """``heur`` written as YAML under ``tmp_path`` (``edit`` may change the parsed document first); its path."""
    import fast_yaml

    from inductor_tune import heuristics

    doc = fast_yaml.safe_load(heuristics.to_yaml(heur))
    if edit:
        edit(doc)
    path = tmp_path / "h.yaml"
    path.write_text(fast_yaml.safe_dump(doc))
    return str(path)


def with_rules(heur: Heuristics, *rules: RuleSpec) -> Heuristics:
    return dataclasses.replace(heur, rules=tuple(rules))


def any_signature(heur: Heuristics) -> Heuristics:
    """The same rules for kernels of any signature (reductions=None), e.g. for CPU codegen of a
    forward function standing in for a backward graph."""
    return with_rules(heur, *(dataclasses.replace(r, reductions=None) for r in heur.rules))
