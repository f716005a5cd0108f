"""Crossmeasure origin lists are stored once per distinct text (schema 6, it_origin_list) and read back whole;
older databases, which hold them in the records, read as they are; experiments/compact_origins.py copies a
database into the new form."""

import concurrent.futures
import json
import multiprocessing
import os
import sqlite3
import subprocess
import sys

import pytest
import sqlalchemy as sa

from inductor_tune.gpu import GpuIdentity
from inductor_tune.store import SCHEMA_VERSION, CrossMeasureRecord, OriginList, Store, StoreError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "experiments"))
import compact_origins  # noqa: E402

GPU = GpuIdentity(name="G", sm_count=132, compute_capability="9.0", memory_bytes=1, l2_bytes=1, cuda_driver="x",
                  cuda_runtime="13.0", torch="2.11", triton="3.6")
MANY = json.dumps([[], [f"rmsnorm_fwd/{m}x4096/bf16@H200" for m in range(1, 400)]])  # a long list, as in practice
OTHER = json.dumps([[], ["layernorm_fwd/1000x2000/bf16@H200"]])
FIELDS = [a.key for a in CrossMeasureRecord.__mapper__.column_attrs]


def _record(gpu_id, rows, origin_json):
    return dict(gpu_id=gpu_id, kernel="rmsnorm_fwd", rows=rows, cols=4096, dtype="bf16",
                configs_json=json.dumps(["{}", '{"x": 1}']), rounds_json=json.dumps([[1.0], [0.9]]),
                origin_json=origin_json, checks_json="{}", timing_json="{}")


def _store(path, origins=(MANY, MANY, OTHER)):
    store = Store(f"sqlite:///{path}")
    gpu_id = store.upsert_gpu(GPU, 4000.0)
    for n, text in enumerate(origins):
        store.add_crossmeasure(**_record(gpu_id, 1000 + n, text))
    return store


def _rows(path, sql):
    con = sqlite3.connect(path)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _fields(store):
    return [tuple(getattr(r, f) for f in FIELDS) for r in store.crossmeasures()]


def test_a_list_is_stored_once_and_read_back_as_the_text_passed(tmp_path):
    path = tmp_path / "cm.sqlite"
    store = _store(path)
    # One row per distinct config list: "[]" (Inductor's default, proposed by no study), MANY's and OTHER's.
    assert _rows(path, "select count(*) from it_origin_list") == [(3,)]
    stored = [r[0] for r in _rows(path, "select origin_json from it_crossmeasure order by id")]
    assert all(s.startswith("sha256[]:") and len(s) == 9 + 64 * 2 + 1 for s in stored)
    assert stored[0] == stored[1] != stored[2] and stored[0].split(",")[0] == stored[2].split(",")[0]
    assert [r.origin_json for r in store.crossmeasures()] == [MANY, MANY, OTHER]
    # The records are detached with the text as loaded: nothing is written back, by this store or a later one.
    assert [r[0] for r in _rows(path, "select origin_json from it_crossmeasure order by id")] == stored
    assert [r.origin_json for r in Store(f"sqlite:///{path}", create=False).crossmeasures()] == [MANY, MANY, OTHER]
    # A record read back and stored again (as tests and tools copy them) keeps its list and shares its row.
    store.add_crossmeasure(**{f: getattr(store.crossmeasures()[0], f) for f in FIELDS if f not in ("id", "created")})
    assert _rows(path, "select count(*) from it_origin_list") == [(3,)]
    assert store.crossmeasures()[-1].origin_json == MANY


@pytest.mark.parametrize("text", ['[[], ["a"]]', '[[],["a"]]', '[["a"], "b"]', '{"a": 1}', "[]", "not json", ""])
def test_every_text_comes_back_exactly_whatever_its_form(tmp_path, text):
    # json.dumps' own form of a list of lists is stored per config; any other text is stored whole.
    path = tmp_path / "cm.sqlite"
    store = _store(path, origins=(text,))
    stored = _rows(path, "select origin_json from it_crossmeasure")[0][0]
    assert stored.startswith("sha256[]:" if text in ('[[], ["a"]]', "[]") else "sha256:")
    assert [r.origin_json for r in store.crossmeasures()] == [text]


def _writer(url, gpu_id, n):
    store = Store(url)
    for k in range(12):
        store.add_crossmeasure(**_record(gpu_id, 100 * n + k, (MANY, OTHER, "[]")[k % 3]))
    store.engine.dispose()


def test_processes_writing_the_same_lists_at_once_store_each_once(storage):
    store = Store(storage)
    gpu_id = store.upsert_gpu(GPU, 4000.0)
    with concurrent.futures.ProcessPoolExecutor(4, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_writer, [storage] * 4, [gpu_id] * 4, range(4)))
    with store.session() as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(OriginList)) == 3
    assert sorted(r.origin_json for r in store.crossmeasures()) == sorted([MANY, OTHER, "[]"] * 16)
    store.engine.dispose()


def test_other_databases_look_the_list_up_before_adding_it(tmp_path, monkeypatch):
    store = Store(f"sqlite:///{tmp_path}/cm.sqlite")
    gpu_id = store.upsert_gpu(GPU, 4000.0)
    monkeypatch.setattr(store.engine.dialect, "name", "mysql")  # no insert-or-ignore construct
    for rows in (1, 2):
        store.add_crossmeasure(**_record(gpu_id, rows, MANY))
    assert _rows(f"{tmp_path}/cm.sqlite", "select count(*) from it_origin_list") == [(2,)]
    assert [r.origin_json for r in store.crossmeasures()] == [MANY, MANY]


def test_a_writer_that_loses_the_race_for_a_list_tries_once_more(tmp_path, monkeypatch):
    # Without insert-or-ignore, another process may add the same list between the look-up and the insert.
    store = Store(f"sqlite:///{tmp_path}/cm.sqlite")
    gpu_id = store.upsert_gpu(GPU, 4000.0)
    intern, lost = Store.intern_origins, []

    def race_once(self, conn, text):
        if not lost:
            lost.append(True)
            raise StoreError("UNIQUE constraint failed: it_origin_list.digest")
        return intern(self, conn, text)

    monkeypatch.setattr(Store, "intern_origins", race_once)
    store.add_crossmeasure(**_record(gpu_id, 1, MANY))
    assert lost and [r.origin_json for r in store.crossmeasures()] == [MANY]


def _make_schema_5(path):
    """A database as schema 5 wrote it: the list in the record, no it_origin_list."""
    store = _store(path, origins=())
    gpu_id = store.upsert_gpu(GPU, 4000.0)
    store.engine.dispose()
    con = sqlite3.connect(path)
    rec = _record(gpu_id, 1000, MANY)
    con.execute(f"insert into it_crossmeasure ({', '.join(rec)}, replayed, created) "
                f"values ({', '.join('?' * len(rec))}, 0, '2026-01-01 00:00:00')", list(rec.values()))
    con.execute("drop table it_origin_list")
    con.execute("update it_schema set version = 5")
    con.commit()
    con.close()


def test_a_schema_5_database_reads_as_it_is_and_reading_changes_nothing(tmp_path):
    path = tmp_path / "old.sqlite"
    _make_schema_5(path)
    before, mtime = path.read_bytes(), os.stat(path).st_mtime_ns
    reader = Store(f"sqlite:///{path}", create=False)
    assert [r.origin_json for r in reader.crossmeasures()] == [MANY]
    reader.engine.dispose()
    assert path.read_bytes() == before and os.stat(path).st_mtime_ns == mtime
    assert _rows(path, "select version from it_schema") == [(5,)]
    assert not _rows(path, "select 1 from sqlite_master where name = 'it_origin_list'")
    # A writer upgrades it; the old record still reads as it is, the new one through its reference.
    writer = Store(f"sqlite:///{path}")
    writer.add_crossmeasure(**_record(1, 2000, MANY))
    assert _rows(path, "select version from it_schema") == [(SCHEMA_VERSION,)] and SCHEMA_VERSION == 6
    assert [r.origin_json for r in writer.crossmeasures()] == [MANY, MANY]
    assert _rows(path, "select count(*) from it_origin_list") == [(2,)]


def test_a_dangling_reference_is_a_damaged_database(tmp_path):
    path = tmp_path / "cm.sqlite"
    _store(path).engine.dispose()
    con = sqlite3.connect(path)
    con.execute("delete from it_origin_list where origin_json = ?", (json.dumps(json.loads(OTHER)[1]),))
    con.commit()
    con.close()
    with pytest.raises(StoreError, match=r"is damaged: crossmeasure record 3 refers to origin list \w{16}, which"):
        Store(f"sqlite:///{path}", create=False).crossmeasures()


def _old_database(path, copies=6):
    """A schema-5 database of ``copies`` records sharing two lists, beside a study table's rows."""
    _make_schema_5(path)
    con = sqlite3.connect(path)
    for n in range(1, copies):
        con.execute("insert into it_crossmeasure (gpu_id, kernel, rows, cols, dtype, configs_json, rounds_json, "
                    "origin_json, checks_json, timing_json, replayed, created) select gpu_id, kernel, rows + ?, "
                    "cols, dtype, configs_json, rounds_json, ?, checks_json, timing_json, replayed, created "
                    "from it_crossmeasure where id = 1", (n, MANY if n % 2 else OTHER))
    con.commit()
    con.close()


def test_compact_copies_every_row_with_each_list_once(tmp_path, capsys):
    src, dst = tmp_path / "old.sqlite", tmp_path / "new.sqlite"
    _old_database(src)
    sqlite3.connect(src).execute("pragma journal_mode = delete").connection.close()  # kept in DST too
    before = src.read_bytes()
    assert compact_origins.main([str(src), str(dst)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{dst}: 6 crossmeasure records, 3 distinct origin lists, ") and out.count("\n") == 1
    assert src.read_bytes() == before and not os.path.exists(f"{src}-wal")
    assert sorted(os.listdir(tmp_path)) == ["new.sqlite", "old.sqlite"]  # no temporary file is left
    assert _rows(dst, "select version from it_schema") == [(6,)] and dst.read_bytes()[18] == before[18] == 1
    assert _rows(dst, "select count(*) from it_origin_list") == [(3,)]
    assert all(r[0].startswith("sha256[]:") for r in _rows(dst, "select origin_json from it_crossmeasure"))
    assert _rows(dst, "select * from it_gpu") == _rows(src, "select * from it_gpu")
    assert _fields(Store(f"sqlite:///{dst}", create=False)) == _fields(Store(f"sqlite:///{src}", create=False))
    assert os.path.getsize(dst) < os.path.getsize(src)


def test_compact_refuses_an_existing_dst_the_same_file_and_a_missing_src(tmp_path, capsys, monkeypatch):
    src, dst = tmp_path / "old.sqlite", tmp_path / "taken.sqlite"
    _old_database(src)
    dst.write_text("mine\n")
    (tmp_path / "left-wal").write_bytes(b"")
    before = src.read_bytes()
    with monkeypatch.context() as m:  # these are refused before anything is copied
        m.setattr(compact_origins.shutil, "copyfile", lambda *a: pytest.fail("copied before refusing"))
        for args, message in (((src, dst), f"{dst} exists"), ((src, src), "are the same file"),
                              ((tmp_path / "absent.sqlite", tmp_path / "x.sqlite"), "no database at"),
                              ((dst, tmp_path / "x.sqlite"), "not an SQLite database"),
                              ((src, tmp_path / "left"), "left-wal exists, left by an earlier database")):
            assert compact_origins.main([str(a) for a in args]) == 2
            err = capsys.readouterr().err
            assert err.startswith("compact_origins: error: ") and message in err and err.count("\n") == 1
    assert dst.read_text() == "mine\n" and src.read_bytes() == before
    os.unlink(tmp_path / "left-wal")
    assert sorted(os.listdir(tmp_path)) == ["old.sqlite", "taken.sqlite"]
    # An SQLite file of something else: refused after the copy, which is removed, naming SRC.
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("create table t (x)").connection.close()
    assert compact_origins.main([str(other), str(tmp_path / "x.sqlite")]) == 2
    assert f"{other} holds no inductor_tune studies" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["old.sqlite", "other.sqlite", "taken.sqlite"]
    # As a command: the exit status, and the one line on stderr.
    run = subprocess.run([sys.executable, "experiments/compact_origins.py", str(src), str(src)], cwd=ROOT,
                         capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=ROOT))
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr == f"compact_origins: error: {src} and {src} are the same file\n"


def test_compact_refuses_a_src_with_commits_in_its_log(tmp_path, capsys):
    src = tmp_path / "old.sqlite"
    _old_database(src)
    (tmp_path / "old.sqlite-wal").write_bytes(b"x" * 100)
    assert compact_origins.main([str(src), str(tmp_path / "new.sqlite")]) == 2
    assert "holds commits not yet in" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "new.sqlite")


def test_compact_writes_no_dst_when_the_copy_reads_back_different(tmp_path, capsys, monkeypatch):
    src, dst = tmp_path / "old.sqlite", tmp_path / "new.sqlite"
    _old_database(src)
    intern = Store.intern_origins
    monkeypatch.setattr(Store, "intern_origins",
                        lambda self, conn, text: intern(self, conn, text.replace("H200", "H100")))
    assert compact_origins.main([str(src), str(dst)]) == 1
    assert "check failed: record 1: origin_json differs" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["old.sqlite"]
