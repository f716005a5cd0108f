"""Small databases cut from the recorded H200 studies (db/*.sqlite, read only) for the distil tests.

Rows are copied verbatim (same ids, same measurements) into fresh SQLite files, one per source
database because the two sources reuse ids.  Nothing here is invented: the fixture is the real
data, fewer studies.
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
from inductor_tune.store import Gpu, Store, Study, TrialRecord, Verdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Forward kernels at N = 256 (Inductor's persistent class), 2048 and 4096 (its looped class), the fused
# mix-order backward at N = 2048, and one multi-kernel backward study that distill must skip.
FIXTURE_STUDIES = {
    "quack": [f"{k}/32768x{n}/bf16" for k in ("rmsnorm_fwd", "layernorm_fwd", "softmax_fwd") for n in (256, 2048, 4096)]
    + ["rmsnorm_bwd/32768x2048/bf16", "layernorm_bwd/32768x2048/bf16"],
    "llm": [f"{k}/{m}x{n}/bf16" for k in ("rmsnorm_fwd", "layernorm_fwd", "softmax_fwd") for m in (8192, 32768)
            for n in (2048, 4096, 5120)]
    + [f"{k}/{m}x2048/bf16" for k in ("rmsnorm_bwd", "layernorm_bwd") for m in (8192, 32768)]
    + ["rmsnorm_bwd/8192x5120/bf16"],
}


def _copy_subset(source: str, dest: str, prefixes: list[str]) -> None:
    src = Store(f"sqlite:///{source}", create=False)
    dst = Store(f"sqlite:///{dest}", create=True)
    with src.engine.connect() as s, dst.engine.begin() as d:
        studies = [r for r in s.execute(sa.select(Study.__table__)).mappings()
                   if any(r["name"].startswith(p + "@") for p in prefixes)]
        ids = [r["id"] for r in studies]
        d.execute(sa.insert(Gpu.__table__), [dict(r) for r in s.execute(sa.select(Gpu.__table__)).mappings()])
        d.execute(sa.insert(Study.__table__), [dict(r) for r in studies])
        for table, column in ((TrialRecord.__table__, "study_id"), (Verdict.__table__, "study_id")):
            rows = [dict(r) for r in s.execute(sa.select(table).where(table.c[column].in_(ids))).mappings()]
            if rows:
                d.execute(sa.insert(table), rows)
    src.engine.dispose()
    dst.engine.dispose()


@functools.lru_cache(maxsize=None)
def fixture_dbs() -> tuple[str, ...]:
    """Paths of the two fixture databases (built once per test session, in a temporary folder)."""
    folder = tempfile.mkdtemp(prefix="it-distill-fixture-")
    out = []
    for name, prefixes in FIXTURE_STUDIES.items():
        # Copy the source first so that db/ is only ever read by a plain file copy.
        source = os.path.join(folder, f"source-{name}.sqlite")
        shutil.copyfile(os.path.join(ROOT, "db", f"{name}.sqlite"), source)
        dest = os.path.join(folder, f"{name}.sqlite")
        _copy_subset(source, dest, prefixes)
        os.unlink(source)
        out.append(dest)
    return tuple(out)


@functools.lru_cache(maxsize=None)
def fixture_points():
    stores = [Store(f"sqlite:///{p}", create=False) for p in fixture_dbs()]
    gpu = distill.select_gpu(stores, "H200")
    points, skipped = distill.load_points(stores, gpu)
    return gpu, tuple(points), tuple(skipped)


# Real verdict winners, used as rules of the two hook types the relaxed fit does not produce here: a
# looped config (layernorm_fwd 8192x5120) and a move out of Inductor's persistent class
# (layernorm_fwd 32768x256, looped instead of persistent).
LOOPED_8192 = SlotConfig(persistent=False, XBLOCK=2, num_warps=8, R0_BLOCK=1024, num_stages=2)
LOOPED_256 = SlotConfig(persistent=False, XBLOCK=64, num_warps=8, R0_BLOCK=64, num_stages=4)


@functools.lru_cache(maxsize=None)
def relaxed_heuristics() -> Heuristics:
    """Config rules of every hook type from the fixture's real measurements, with relaxed coverage
    (one measured shape suffices): for the patch and install tests, not for deployment."""
    gpu, points, _ = fixture_points()
    fitted = distill.fit_rules(points, distill.FitParams(min_coverage=0, min_shapes=1))
    rules = [r for r in fitted if r.config is not None and r.kind in ("mix_order", "inner_looped") and r.rnumel[1] < 8192]
    rules.append(RuleSpec("inner_looped", 2, (8192, 8192), (8192, 32768), LOOPED_8192))
    rules.append(RuleSpec("inner_persistent", 2, (256, 256), (32768, 32768), LOOPED_256))
    return Heuristics(gpu, tuple(rules), provenance={"databases": list(fixture_dbs())})


def with_rules(heur: Heuristics, *rules: RuleSpec) -> Heuristics:
    return dataclasses.replace(heur, rules=tuple(rules))
