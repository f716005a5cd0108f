"""Copy an SQLite database of inductor_tune with its crossmeasure origin lists stored once (schema 6).

Records written before schema 6 hold each config's proposing shapes in full in ``it_crossmeasure.origin_json``;
with ``--candidates-from`` over many databases that is about a thousand names a record, repeated across records
that share a few hundred distinct lists. DST gets every table and row of SRC with the same ids, each record's
lists moved to ``it_origin_list`` (once per distinct list of a config, ``inductor_tune/origin_refs.py``) and
referred to by digest, as a schema-6 writer stores them; then the file is vacuumed. Readers see no difference: ``Store.crossmeasures()`` returns the lists.

Run it while nothing writes SRC. SRC is never opened, only copied byte for byte into a temporary file in
DST's folder; all work is on that copy, renamed to DST once done. A SRC with a non-empty ``-wal`` sibling is
refused: commits in the log are not in the file a copy takes (the last connection to close folds the log in;
open and close it once with sqlite3). DST keeps SRC's journal mode. Before DST appears, the copy's
``crossmeasures()`` is compared field by field with SRC's, read from the untouched copy; any difference leaves
no DST and exits 1.

Usage: python3 experiments/compact_origins.py SRC DST
Exit status: 0 done (one summary line), 1 the check found a difference, 2 refused or failed (one line on
stderr; nothing is written).
"""

import argparse
import os
import shutil
import sys
import tempfile

import sqlalchemy as sa

from inductor_tune import origin_refs
from inductor_tune.store import CrossMeasureRecord, OriginList, Store, StoreError

SQLITE_HEADER = b"SQLite format 3\x00"
FIELDS = tuple(attr.key for attr in sa.inspect(CrossMeasureRecord).column_attrs)


class Refused(Exception):
    """Why nothing was written, in one line."""


def check_paths(src: str, dst: str) -> None:
    if not os.path.exists(src):
        raise Refused(f"no database at {src}")
    if os.path.lexists(dst):
        if os.path.exists(dst) and os.path.samefile(src, dst):
            raise Refused(f"{src} and {dst} are the same file")
        raise Refused(f"{dst} exists; name a new file")
    if not os.path.isfile(src):
        raise Refused(f"{src} is not a database file")
    with open(src, "rb") as fh:
        if fh.read(16) != SQLITE_HEADER:
            raise Refused(f"{src} is not an SQLite database")
    wal = src + "-wal"
    if os.path.exists(wal) and os.path.getsize(wal):
        raise Refused(f"{wal} holds commits not yet in {src} (a writer may be running); "
                      "let it finish or checkpoint the database, then retry")
    for left in (dst + "-wal", dst + "-shm", dst + "-journal"):
        if os.path.lexists(left):  # SQLite would take it for DST's own and apply it
            raise Refused(f"{left} exists, left by an earlier database of that name; remove it or name another file")
    folder = os.path.dirname(os.path.abspath(dst))
    if not os.path.isdir(folder):
        raise Refused(f"folder {folder} does not exist")


def records(url: str) -> list[tuple]:
    store = Store(url, create=False)
    try:
        return [tuple(getattr(r, f) for f in FIELDS) for r in store.crossmeasures()]
    finally:
        store.engine.dispose()


def intern_all(store: Store) -> None:
    """Every record's list into it_origin_list, the record referring to it (one transaction)."""
    table = CrossMeasureRecord.__table__
    with store.engine.begin() as conn:
        for record_id, text in conn.execute(sa.select(table.c.id, table.c.origin_json)).all():
            if not origin_refs.is_reference(text):
                ref = store.intern_origins(conn, text)
                conn.execute(sa.update(table).where(table.c.id == record_id).values(origin_json=ref))


def compact(src: str, tmp: str) -> tuple[list[tuple], int]:
    """Rewrite the copy ``tmp`` of ``src`` in place; SRC's records (read from the copy first) and how many
    distinct lists the copy holds."""
    url = f"sqlite:///{tmp}"
    try:
        before = records(url)
    except StoreError as exc:  # the copy is SRC byte for byte: say SRC
        raise Refused(str(exc).replace(tmp, src)) from None
    with open(tmp, "rb") as fh:
        wal_mode = fh.read(20)[18] == 2
    store = Store(url, create=True)  # adds it_origin_list, sets schema 6 and WAL mode
    try:
        intern_all(store)
        with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM")
            if not wal_mode:  # keep SRC's journal mode
                conn.exec_driver_sql("PRAGMA journal_mode = DELETE")
        with store.session() as s:
            lists = s.scalar(sa.select(sa.func.count()).select_from(OriginList))
    finally:
        store.engine.dispose()  # the last connection's close folds the WAL into the file
    return before, lists


def first_difference(before: list[tuple], after: list[tuple]) -> str | None:
    if len(before) != len(after):
        return f"{len(before)} records in SRC, {len(after)} in the copy"
    for old, new in zip(before, after):
        for field, a, b in zip(FIELDS, old, new):
            if a != b:
                return f"record {old[FIELDS.index('id')]}: {field} differs"
    return None


def _remove(path: str) -> None:
    for p in (path, path + "-wal", path + "-shm", path + "-journal"):
        if os.path.exists(p):
            os.unlink(p)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src")
    parser.add_argument("dst")
    args = parser.parse_args(argv)
    src, dst = args.src, args.dst
    try:
        check_paths(src, dst)
    except Refused as exc:
        return _error(exc)
    fd, tmp = tempfile.mkstemp(prefix=".compact-", suffix=".sqlite", dir=os.path.dirname(os.path.abspath(dst)))
    os.fchmod(fd, 0o644)  # mkstemp makes it private; the databases in db/ are shared
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        before, lists = compact(src, tmp)
        try:
            difference = first_difference(before, records(f"sqlite:///{tmp}"))
        except StoreError as exc:
            difference = str(exc)
        if difference:
            print(f"compact_origins: check failed: {difference}; {dst} not written", file=sys.stderr)
            return 1
        if os.path.exists(tmp + "-wal"):
            raise Refused(f"{tmp}-wal is left beside the copy; {dst} not written")
        _publish(tmp, dst)
    except (Refused, StoreError, OSError) as exc:
        return _error(exc)
    finally:
        _remove(tmp)
    mb = lambda path: os.path.getsize(path) / 1e6  # noqa: E731
    print(f"{dst}: {len(before)} crossmeasure records, {lists} distinct origin lists, "
          f"{mb(src):.1f} MB -> {mb(dst):.1f} MB")
    return 0


def _publish(tmp: str, dst: str) -> None:
    """``tmp`` under the name ``dst``, never replacing a DST that appeared meanwhile (a rename would)."""
    try:
        os.link(tmp, dst)
    except FileExistsError:
        raise Refused(f"{dst} exists; name a new file") from None
    except OSError:  # a file system without hard links: check, then rename
        if os.path.lexists(dst):
            raise Refused(f"{dst} exists; name a new file") from None
        os.rename(tmp, dst)


def _error(exc: Exception) -> int:
    print(f"compact_origins: error: {exc}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
