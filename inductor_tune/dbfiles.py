"""Database URLs and files, checked before anything is written: what a message shows of a URL,
whether two URLs name one database, and whether a URL or an SQLite file is usable (``check_url``),
in one line (``StoreError``) rather than a traceback from deep inside a command.  Also the schema
version every database of the project carries: a database written by a newer schema is refused.
"""

from __future__ import annotations

import os

SCHEMA_VERSION = 6  # 2: it_lease; 3: it_validation; 4: it_crossmeasure; 5: it_verdict_confirmation; 6: it_origin_list


class StoreError(RuntimeError):
    """A storage problem worth one clear line to the user."""


def url_of(path_or_url: str) -> str:
    """A database named by a path (an SQLite file) or an SQLAlchemy URL, as a URL."""
    return path_or_url if "://" in path_or_url else f"sqlite:///{path_or_url}"


def default_sqlite_url(experiment: str) -> str:
    return f"sqlite:///db/{experiment}.sqlite"


def error_line(exc: BaseException) -> str:
    """A database error in one line: the driver's own message (SQLAlchemy's adds the SQL statement and a
    link on further lines), its lines joined (psycopg2 puts the cause, "Connection refused", on the
    second), at most 300 characters."""
    orig = getattr(exc, "orig", None) or exc
    text = " ".join(str(orig).split())
    text = text if len(text) <= 300 else text[:297] + "..."
    return f"{type(orig).__name__}: {text}" if text else type(orig).__name__


def shown(url: str) -> str:
    """A URL as it may appear in a message: the password hidden."""
    import sqlalchemy as sa

    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url


# Default ports of the server dialects, so that 'host/db' and 'host:5432/db' count as one database.
_DEFAULT_PORTS = {"postgresql": 5432, "mysql": 3306, "mariadb": 3306, "mssql": 1433, "oracle": 1521}
_LOOPBACK = {"", "localhost", "127.0.0.1", "::1"}


def same_database(a: str, b: str) -> bool:
    """Whether two URLs name the same database: SQLite files compared as resolved paths (links and
    hard links included), servers by backend, host, port and database name."""
    import sqlalchemy as sa

    try:
        ua, ub = sa.engine.make_url(a), sa.engine.make_url(b)
    except Exception:
        return a == b
    if ua.get_backend_name() != ub.get_backend_name():
        return False
    if ua.get_backend_name() == "sqlite":
        pa, pb = ua.database or "", ub.database or ""
        if not pa or not pb or ":memory:" in (pa, pb):
            return False
        if os.path.exists(pa) and os.path.exists(pb):
            return os.path.samefile(pa, pb)
        return os.path.realpath(pa) == os.path.realpath(pb)

    def where(u):
        host = (u.host or "").lower()
        port = u.port or _DEFAULT_PORTS.get(u.get_backend_name())
        return ("localhost" if host in _LOOPBACK else host), port, u.database

    return where(ua) == where(ub)


def check_url(url: str, create: bool) -> None:
    """Reject unusable storage before anything is written, with one clear message.

    SQLite files are opened and checked (``PRAGMA quick_check``, milliseconds for the databases in
    db/) and servers are connected to, so that a damaged file or an unreachable server is reported
    here, as one line, before a command starts work (or asks for a GPU) rather than as a traceback
    from deep inside it.
    """
    import sqlalchemy as sa

    try:
        parsed = sa.engine.make_url(url)
    except Exception:
        raise StoreError(f"storage {url!r} is not an SQLAlchemy database URL (e.g. sqlite:///db/x.sqlite)") from None
    try:
        parsed.get_dialect()
    except Exception as exc:  # unknown dialect or its driver is not installed
        raise StoreError(f"storage {shown(url)!r}: cannot load its database driver ({error_line(exc)})") from None
    if parsed.get_backend_name() != "sqlite":
        _check_server(url)
        return
    path = parsed.database
    if not path or path == ":memory:":
        return
    if os.path.isdir(path):
        raise StoreError(f"{path} is a directory, not a database file")
    if os.path.exists(path):
        try:
            with open(path, "rb") as fh:
                head = fh.read(16)
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from None
        if head and head != b"SQLite format 3\x00":
            raise StoreError(f"{path} exists and is not an SQLite database; refusing to touch it")
        if not os.access(path, os.W_OK) and create:
            raise StoreError(f"{path} is not writable")
        if head:
            _check_sqlite_file(path)
    elif not create:
        raise StoreError(f"no database at {path}")
    else:
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise StoreError(f"cannot create {path}: folder {folder} is missing or not writable")


def _check_sqlite_file(path: str) -> None:
    """A truncated or damaged file fails here, read-only, not halfway through a command.

    The connection is opened read-write but only reads: a read-only one leaves -wal/-shm files
    behind beside a WAL database, where a read-write one removes them when it closes.
    """
    import sqlite3

    try:
        con = sqlite3.connect(path, timeout=60)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {path}: {error_line(exc)}") from None
    try:
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
        problems = [row[0] for row in con.execute("PRAGMA quick_check(3)").fetchall()]
        version = None
        if problems == ["ok"] and con.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'it_schema'").fetchone():
            version = con.execute("SELECT max(version) FROM it_schema").fetchone()[0]
    except sqlite3.Error as exc:
        raise StoreError(f"{path} is not a readable SQLite database ({' '.join(str(exc).split())}); "
                         "refusing to touch it") from None
    finally:
        con.close()
    if problems != ["ok"]:
        first = " ".join(str(problems[0]).split())
        raise StoreError(f"{path} is a damaged SQLite database (integrity check: {first}); refusing to touch it")
    _check_version(path, version)


def _check_version(where: str, found) -> None:
    if isinstance(found, int) and found > SCHEMA_VERSION:
        raise StoreError(f"{where} was written by a newer inductor_tune (schema {found} > {SCHEMA_VERSION}); "
                         "upgrade to read it")


def _check_server(url: str) -> None:
    """Connect once, failing fast: an unreachable server, a wrong password or a missing database is one
    line now, not a traceback (or a long hang) once the command is under way."""
    import sqlalchemy as sa

    connect_args = {"connect_timeout": 10} if url.startswith("postgresql") else {}
    engine = None
    try:
        engine = sa.create_engine(url, connect_args=connect_args, poolclass=sa.pool.NullPool)
        with engine.connect() as conn:
            found = None
            if sa.inspect(conn).has_table("it_schema"):
                found = conn.execute(sa.text("SELECT max(version) FROM it_schema")).scalar()
    except Exception as exc:
        raise StoreError(f"cannot connect to {shown(url)}: {error_line(exc)}") from None
    finally:
        if engine is not None:
            engine.dispose()
    _check_version(shown(url), found)
