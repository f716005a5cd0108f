"""The project's own tables, beside Optuna's in the same database (SQLAlchemy 2.0 ORM).

Optuna's RDB storage owns trials as the sampler sees them; these tables own the domain record:
the GPU and software fingerprint, each study's problem and probed search space, every trial's full
measurement with its typed outcome, and each study's noise-checked verdict.  They link to Optuna by
study name and trial number.  ``SCHEMA_VERSION`` is stored in the database; a database written by a
newer schema is refused rather than misread.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from typing import Any, Iterator

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.dialects import postgresql, sqlite

from . import origin_refs

# The URL and file checks live in dbfiles; their names stay importable from here.
from .dbfiles import (SCHEMA_VERSION, StoreError, check_url, default_sqlite_url, error_line,  # noqa: F401
                      same_database, shown)
from .gpu import GpuIdentity
from .records import Measurement, Outcome


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


class Base(orm.DeclarativeBase):
    pass


class SchemaInfo(Base):
    __tablename__ = "it_schema"
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    version: orm.Mapped[int]


class Gpu(Base):
    __tablename__ = "it_gpu"
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    fingerprint: orm.Mapped[str] = orm.mapped_column(sa.String(300), unique=True)
    name: orm.Mapped[str] = orm.mapped_column(sa.String(120))
    sm_count: orm.Mapped[int]
    compute_capability: orm.Mapped[str] = orm.mapped_column(sa.String(10))
    memory_bytes: orm.Mapped[int] = orm.mapped_column(sa.BigInteger)
    l2_bytes: orm.Mapped[int] = orm.mapped_column(sa.BigInteger)
    cuda_driver: orm.Mapped[str] = orm.mapped_column(sa.String(40))
    cuda_runtime: orm.Mapped[str] = orm.mapped_column(sa.String(40))
    torch: orm.Mapped[str] = orm.mapped_column(sa.String(60))
    triton: orm.Mapped[str] = orm.mapped_column(sa.String(60))
    ceiling_gbps: orm.Mapped[float]  # copy bandwidth measured by the latest run on this GPU
    created: orm.Mapped[dt.datetime] = orm.mapped_column(default=_now)


class Study(Base):
    __tablename__ = "it_study"
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    name: orm.Mapped[str] = orm.mapped_column(sa.String(400), unique=True)
    gpu_id: orm.Mapped[int] = orm.mapped_column(sa.ForeignKey("it_gpu.id"))
    kernel: orm.Mapped[str] = orm.mapped_column(sa.String(60))
    rows: orm.Mapped[int] = orm.mapped_column(sa.BigInteger)
    cols: orm.Mapped[int] = orm.mapped_column(sa.BigInteger)
    dtype: orm.Mapped[str] = orm.mapped_column(sa.String(10))
    experiment: orm.Mapped[str] = orm.mapped_column(sa.String(200))
    sampler: orm.Mapped[str] = orm.mapped_column(sa.String(40))
    seed: orm.Mapped[int]
    space_json: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    replayed: orm.Mapped[bool] = orm.mapped_column(default=False)  # measurements replayed, not taken
    created: orm.Mapped[dt.datetime] = orm.mapped_column(default=_now)
    gpu: orm.Mapped[Gpu] = orm.relationship()


class ValidationRecord(Base):
    """One `inductor-tune validate` measurement of one problem: every variant's rounds, as JSON."""

    __tablename__ = "it_validation"
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    gpu_id: orm.Mapped[int] = orm.mapped_column(sa.ForeignKey("it_gpu.id"))
    heuristics_path: orm.Mapped[str] = orm.mapped_column(sa.String(400))
    heuristics_digest: orm.Mapped[str] = orm.mapped_column(sa.String(64))
    kernel: orm.Mapped[str] = orm.mapped_column(sa.String(60))
    rows: orm.Mapped[int] = orm.mapped_column(sa.BigInteger)
    cols: orm.Mapped[int] = orm.mapped_column(sa.BigInteger)
    dtype: orm.Mapped[str] = orm.mapped_column(sa.String(10))
    regressed: orm.Mapped[bool]
    result_json: orm.Mapped[str] = orm.mapped_column(sa.Text)  # times per round, errors, notes, configs
    timing_json: orm.Mapped[str] = orm.mapped_column(sa.Text)
    created: orm.Mapped[dt.datetime] = orm.mapped_column(default=_now)


class CrossMeasureRecord(Base):
    """One `inductor-tune crossmeasure` task: candidate configs of a size group timed at one shape,
    interleaved round by round with Inductor's default (configs[0])."""

    __tablename__ = "it_crossmeasure"
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    gpu_id: orm.Mapped[int] = orm.mapped_column(sa.ForeignKey("it_gpu.id"))
    kernel: orm.Mapped[str] = orm.mapped_column(sa.String(60))
    rows: orm.Mapped[int] = orm.mapped_column(sa.BigInteger)
    cols: orm.Mapped[int] = orm.mapped_column(sa.BigInteger)
    dtype: orm.Mapped[str] = orm.mapped_column(sa.String(10))
    configs_json: orm.Mapped[str] = orm.mapped_column(sa.Text)  # TrialConfig JSON per config, default first
    rounds_json: orm.Mapped[str] = orm.mapped_column(sa.Text)  # per config, the median ms of each round
    # Per config, the shapes whose studies proposed it.  Stored (schema 6) as a reference to its rows in
    # it_origin_list (origin_refs); crossmeasures() returns the JSON itself, and records of older schemas hold it.
    origin_json: orm.Mapped[str] = orm.mapped_column(sa.Text)
    # per config: normwise error against float64, and why it has no times (compile error, wrong result)
    checks_json: orm.Mapped[str] = orm.mapped_column(sa.Text)
    timing_json: orm.Mapped[str] = orm.mapped_column(sa.Text)
    replayed: orm.Mapped[bool] = orm.mapped_column(default=False)
    created: orm.Mapped[dt.datetime] = orm.mapped_column(default=_now)
    gpu: orm.Mapped[Gpu] = orm.relationship()


class OriginList(Base):
    """One distinct origin list, stored once: with ``--candidates-from`` over many databases a config's list
    names about a thousand shapes, and the records of a run share a few hundred (origin_refs)."""

    __tablename__ = "it_origin_list"
    digest: orm.Mapped[str] = orm.mapped_column(sa.String(64), primary_key=True)  # sha256 hex of origin_json
    origin_json: orm.Mapped[str] = orm.mapped_column(sa.Text)


class TrialRecord(Base):
    __tablename__ = "it_trial"
    __table_args__ = (sa.UniqueConstraint("study_id", "trial_number"),)
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    study_id: orm.Mapped[int] = orm.mapped_column(sa.ForeignKey("it_study.id"), index=True)
    trial_number: orm.Mapped[int]
    outcome: orm.Mapped[Outcome] = orm.mapped_column(sa.Enum(Outcome, native_enum=False, length=20))
    reason: orm.Mapped[str] = orm.mapped_column(sa.Text, default="")
    inductor_default: orm.Mapped[bool] = orm.mapped_column(default=False)
    config_json: orm.Mapped[str] = orm.mapped_column(sa.Text)
    time_ms: orm.Mapped[float | None]
    time_p20_ms: orm.Mapped[float | None]
    time_p80_ms: orm.Mapped[float | None]
    gbps: orm.Mapped[float | None]
    ceiling_gbps: orm.Mapped[float | None]
    pct_of_ceiling: orm.Mapped[float | None]
    speedup_vs_default: orm.Mapped[float | None]
    rel_error: orm.Mapped[float | None]
    source_hash: orm.Mapped[str | None] = orm.mapped_column(sa.String(64))
    slots_json: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    inductor_choice_json: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    compile_s: orm.Mapped[float | None]
    measure_s: orm.Mapped[float | None]
    timing_json: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    created: orm.Mapped[dt.datetime] = orm.mapped_column(default=_now)


class Verdict(Base):
    """Finalists re-measured interleaved with the default: the study's reported result."""

    __tablename__ = "it_verdict"
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    study_id: orm.Mapped[int] = orm.mapped_column(sa.ForeignKey("it_study.id"), unique=True)
    trials_measured: orm.Mapped[int]  # how many trials the verdict covered (re-run when it grows)
    best_trial_number: orm.Mapped[int | None]
    best_config_json: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    default_ms: orm.Mapped[float | None]
    best_ms: orm.Mapped[float | None]
    speedup: orm.Mapped[float | None]
    speedup_low: orm.Mapped[float | None]
    speedup_high: orm.Mapped[float | None]
    improved: orm.Mapped[bool]
    rounds_json: orm.Mapped[str] = orm.mapped_column(sa.Text)
    created: orm.Mapped[dt.datetime] = orm.mapped_column(default=_now)


class VerdictConfirmation(Base):
    """The verdict's winner timed again against the default, both compiled afresh.

    A second compile of the same kernel can time over a percent apart (``stats.NOISE_FLOOR``), so a
    winner of the first re-measure is "improved" only if it also wins here.  A table of its own leaves
    ``Verdict.rounds_json`` as its readers expect it: the first re-measure's rounds, one list per config.
    """

    __tablename__ = "it_verdict_confirmation"
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    study_id: orm.Mapped[int] = orm.mapped_column(sa.ForeignKey("it_study.id"), unique=True)
    best_trial_number: orm.Mapped[int | None]
    config_json: orm.Mapped[str] = orm.mapped_column(sa.Text)  # the winner re-timed
    rounds_json: orm.Mapped[str] = orm.mapped_column(sa.Text)  # [default rounds, winner rounds], median ms each
    speedup: orm.Mapped[float | None]
    speedup_low: orm.Mapped[float | None]
    speedup_high: orm.Mapped[float | None]
    confirmed: orm.Mapped[bool]
    reason: orm.Mapped[str] = orm.mapped_column(sa.Text, default="")  # the numbers it was decided on
    created: orm.Mapped[dt.datetime] = orm.mapped_column(default=_now)


class Lease(Base):
    """Which process runs a study now; lets several `tune` processes share one study set."""

    __tablename__ = "it_lease"
    study_name: orm.Mapped[str] = orm.mapped_column(sa.String(400), primary_key=True)
    owner: orm.Mapped[str] = orm.mapped_column(sa.String(200))
    heartbeat_at: orm.Mapped[dt.datetime]


@sa.event.listens_for(sa.engine.Engine, "connect")
def _sqlite_busy_timeout(dbapi_connection, connection_record) -> None:
    # Several processes may write one SQLite file (Optuna's connections too): wait for the lock
    # instead of failing with "database is locked".
    if type(dbapi_connection).__module__.startswith("sqlite3"):
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA busy_timeout = 60000")
        cursor.close()


class Store:
    """Session factory over one database URL, with the schema checked on open."""

    def __init__(self, url: str, create: bool = True):
        check_url(url, create)
        connect_args = {"timeout": 60} if url.startswith("sqlite") else {}
        self.url = url
        self._origin_lists = False
        self.engine = sa.create_engine(url, connect_args=connect_args, future=True)
        self._sessions = orm.sessionmaker(self.engine, expire_on_commit=False)
        try:
            self._check_schema(create)
            if create and url.startswith("sqlite"):
                # Writers (tune) switch the file to WAL, which lets readers and other processes
                # proceed during a write; it persists in the file.  Readers (show) change nothing.
                with self.engine.connect() as conn:
                    conn.exec_driver_sql("PRAGMA journal_mode = WAL")
        except sa.exc.SQLAlchemyError as exc:
            raise StoreError(f"database error on {shown(url)}: {error_line(exc)}") from exc

    def _check_schema(self, create: bool) -> None:
        inspector = sa.inspect(self.engine)
        if inspector.has_table("it_schema"):
            with self.session() as s:
                found = s.scalar(sa.select(SchemaInfo.version))
            if found is not None and found > SCHEMA_VERSION:
                raise StoreError(
                    f"{shown(self.url)} was written by a newer inductor_tune (schema {found} > {SCHEMA_VERSION}); upgrade to read it"
                )
            if create and (found or 0) < SCHEMA_VERSION:
                # Schema changes so far only add tables, which create_all adds without touching data.
                Base.metadata.create_all(self.engine)
                with self.session() as s:
                    s.execute(sa.update(SchemaInfo).values(version=SCHEMA_VERSION))
            return
        if not create:
            raise StoreError(f"{shown(self.url)} holds no inductor_tune studies")
        try:
            Base.metadata.create_all(self.engine)
            with self.session() as s:
                s.add(SchemaInfo(id=1, version=SCHEMA_VERSION))
        except (sa.exc.SQLAlchemyError, StoreError):
            # Another process created the schema at the same moment: use theirs.
            if not sa.inspect(self.engine).has_table("it_schema"):
                raise

    @contextlib.contextmanager
    def session(self) -> Iterator[orm.Session]:
        session = self._sessions()
        try:
            yield session
            session.commit()
        except sa.exc.SQLAlchemyError as exc:
            session.rollback()
            raise StoreError(f"database error on {shown(self.url)}: {error_line(exc)}") from exc
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()

    # -- writes -----------------------------------------------------------------------------

    def _insert(self, record: Base) -> int:
        with self.session() as s:
            s.add(record)
            s.flush()
            return record.id

    def add_validation(self, **fields: Any) -> int:
        return self._insert(ValidationRecord(**fields))

    def validations(self) -> list[ValidationRecord]:
        with self.session() as s:
            return list(s.scalars(sa.select(ValidationRecord).order_by(ValidationRecord.id)))

    def add_crossmeasure(self, **fields: Any) -> int:
        """Store one record, its ``origin_json`` as a reference to its list in it_origin_list (written in
        the same transaction; a store opened without create on a database older than schema 6 has no such
        table and keeps the list in the record, as such databases do)."""
        origins = fields.get("origin_json")
        if not isinstance(origins, str) or not self._has_origin_lists():
            return self._insert(CrossMeasureRecord(**fields))
        try:
            return self._insert_interned(fields, origins)
        except StoreError:  # without insert-or-ignore, another process may have added a list first
            return self._insert_interned(fields, origins)

    def _insert_interned(self, fields: dict[str, Any], origins: str) -> int:
        with self.session() as s:
            record = CrossMeasureRecord(**dict(fields, origin_json=self.intern_origins(s, origins)))
            s.add(record)
            s.flush()
            return record.id

    def intern_origins(self, conn: orm.Session | sa.Connection, origin_json: str) -> str:
        """The reference to ``origin_json`` in it_origin_list, its rows added there through ``conn`` if absent
        (per config where it can be: origin_refs)."""
        per_config, texts = origin_refs.stored_texts(origin_json)
        table = OriginList.__table__
        dialect = {"sqlite": sqlite, "postgresql": postgresql}.get(self.engine.dialect.name)
        digests = []
        for text in texts:
            digests.append(origin_refs.digest(text))
            row = dict(digest=digests[-1], origin_json=text)
            if dialect is not None:  # a row another writer added meanwhile holds the same text: nothing to do
                conn.execute(dialect.insert(table).values(**row).on_conflict_do_nothing())
            elif conn.execute(sa.select(table.c.digest).where(table.c.digest == digests[-1])).first() is None:
                conn.execute(sa.insert(table).values(**row))  # a race: IntegrityError, and add_crossmeasure retries
        return origin_refs.reference(per_config, digests)

    def crossmeasures(self) -> list[CrossMeasureRecord]:
        """Every cross-measure record, oldest first (absent in databases older than schema 4), its
        ``origin_json`` the JSON text however stored, set as a loaded value: nothing is written back."""
        if not self._has_table(CrossMeasureRecord):
            return []
        with self.session() as s:
            records = list(s.scalars(sa.select(CrossMeasureRecord).options(orm.joinedload(CrossMeasureRecord.gpu))
                                     .order_by(CrossMeasureRecord.id)))
            refs = [r for r in records if origin_refs.is_reference(r.origin_json)]
            if not refs:
                return records
            # Every list at once: records share few, and an IN of many could pass SQLite's parameter limit.
            rows = s.execute(sa.select(OriginList.digest, OriginList.origin_json)) if self._has_table(OriginList) else ()
            lists = {digest: text for digest, text in rows}
            for record in refs:
                orm.attributes.set_committed_value(record, "origin_json", self._resolve(record, lists))
            return records

    def _resolve(self, record: CrossMeasureRecord, lists: dict[str, str]) -> str:
        per_config, digests = origin_refs.referenced(record.origin_json)
        for digest in digests:
            if digest not in lists:
                raise StoreError(f"{shown(self.url)} is damaged: crossmeasure record {record.id} refers to "
                                 f"origin list {digest[:16]}, which it_origin_list lacks")
        return origin_refs.text_of(per_config, [lists[d] for d in digests])

    def gpu_id(self, key: str) -> int | None:
        """The id of the ``it_gpu`` row keyed ``key``, or None where this storage has none."""
        with self.session() as s:
            return s.scalar(sa.select(Gpu.id).where(Gpu.fingerprint == key))

    def upsert_gpu(self, gpu_identity: GpuIdentity, ceiling_gbps: float, key: str | None = None) -> int:
        """The id of the ``it_gpu`` row keyed ``key`` (default: the identity's key; a sweep's studies
        have one of their own), created with the identity's columns, its ceiling updated."""
        fingerprint_key = key or gpu_identity.key
        info = gpu_identity.stored_fields()
        for attempt in range(2):  # another process may insert the same GPU between select and insert
            try:
                with self.session() as s:
                    gpu = s.scalar(sa.select(Gpu).where(Gpu.fingerprint == fingerprint_key))
                    if gpu is None:
                        gpu = Gpu(fingerprint=fingerprint_key, ceiling_gbps=ceiling_gbps, **info)
                        s.add(gpu)
                    else:
                        gpu.ceiling_gbps = ceiling_gbps
                    s.flush()
                    return gpu.id
            except StoreError:
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def get_or_create_study(self, name: str, **fields: Any) -> Study:
        for attempt in range(2):
            try:
                with self.session() as s:
                    study = s.scalar(sa.select(Study).where(Study.name == name))
                    if study is None:
                        study = Study(name=name, **fields)
                        s.add(study)
                        s.flush()
                    return study
            except StoreError:
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def claim(self, study_name: str, owner: str, stale_after_s: float, owner_is_dead=lambda owner: False) -> bool:
        """Take the study if nobody holds it, its holder stopped renewing or is known dead."""
        now = _now()
        stale = now - dt.timedelta(seconds=stale_after_s)
        try:
            with self.session() as s:
                s.add(Lease(study_name=study_name, owner=owner, heartbeat_at=now))
            return True
        except StoreError:
            pass  # already leased: take it over only if the lease is ours, stale or its owner dead
        with self.session() as s:
            holder = s.scalar(sa.select(Lease.owner).where(Lease.study_name == study_name))
            takeover = sa.or_(Lease.owner == owner, Lease.heartbeat_at < stale)
            if holder is not None and owner_is_dead(holder):
                takeover = sa.or_(takeover, Lease.owner == holder)
            taken = s.execute(
                sa.update(Lease).where(Lease.study_name == study_name, takeover).values(owner=owner, heartbeat_at=now)
            )
            return taken.rowcount == 1

    def renew(self, study_name: str, owner: str) -> None:
        with self.session() as s:
            s.execute(sa.update(Lease).where(Lease.study_name == study_name, Lease.owner == owner).values(heartbeat_at=_now()))

    def release(self, study_name: str, owner: str) -> None:
        with self.session() as s:
            s.execute(sa.delete(Lease).where(Lease.study_name == study_name, Lease.owner == owner))

    def set_space(self, study_id: int, space_json: str) -> None:
        with self.session() as s:
            s.get(Study, study_id).space_json = space_json

    def add_trial(
        self, study_id: int, trial_number: int, config_json: str, inductor_default: bool, m: Measurement,
        default_ms: float | None,
    ) -> TrialRecord:
        speedup = default_ms / m.time_ms if (default_ms and m.time_ms) else None
        pct = 100.0 * m.gbps / m.ceiling_gbps if (m.gbps and m.ceiling_gbps) else None
        record = TrialRecord(
            study_id=study_id, trial_number=trial_number, outcome=m.outcome, reason=m.reason,
            inductor_default=inductor_default, config_json=config_json, time_ms=m.time_ms,
            time_p20_ms=m.time_p20_ms, time_p80_ms=m.time_p80_ms, gbps=m.gbps, ceiling_gbps=m.ceiling_gbps,
            pct_of_ceiling=pct, speedup_vs_default=speedup, rel_error=m.rel_error, source_hash=m.source_hash,
            slots_json=json.dumps([s.__dict__ for s in m.slots]) if m.slots else None,
            inductor_choice_json=m.inductor_choice, compile_s=m.compile_s, measure_s=m.measure_s, timing_json=m.timing,
        )
        with self.session() as s:
            s.add(record)
        return record

    def set_verdict(self, study_id: int, confirmation: dict[str, Any] | None = None, **fields: Any) -> None:
        """Store the study's verdict and its winner's confirmation (None: none was needed) together,
        so a verdict never keeps the confirmation of an earlier one."""
        has_confirmations = self._has_table(VerdictConfirmation)  # absent: opened read-only at schema < 5
        with self.session() as s:
            verdict = s.scalar(sa.select(Verdict).where(Verdict.study_id == study_id))
            if verdict is None:
                s.add(Verdict(study_id=study_id, **fields))
            else:
                for k, v in fields.items():
                    setattr(verdict, k, v)
            if has_confirmations:
                s.execute(sa.delete(VerdictConfirmation).where(VerdictConfirmation.study_id == study_id))
            if confirmation is not None:
                s.add(VerdictConfirmation(study_id=study_id, **confirmation))

    # -- reads ------------------------------------------------------------------------------

    def finished(self, study_name: str, trials: int) -> bool:
        """The study has its budget of measured trials and a verdict covering every successful one
        (a run stopped after more trials but before its verdict is not finished)."""
        with self.session() as s:
            study = s.scalar(sa.select(Study).where(Study.name == study_name))
            if study is None:
                return False
            verdict = s.scalar(sa.select(Verdict).where(Verdict.study_id == study.id))

            def count(*where) -> int:
                return s.scalar(sa.select(sa.func.count()).select_from(TrialRecord)
                                .where(TrialRecord.study_id == study.id, *where))

            if verdict is None or count(TrialRecord.outcome != Outcome.CONSTRAINT) < trials:
                return False
            return verdict.trials_measured >= count(TrialRecord.outcome == Outcome.OK)

    def trials(self, study_id: int) -> list[TrialRecord]:
        with self.session() as s:
            return list(s.scalars(sa.select(TrialRecord).where(TrialRecord.study_id == study_id).order_by(TrialRecord.trial_number)))

    def studies(self) -> list[Study]:
        with self.session() as s:
            return list(s.scalars(sa.select(Study).options(orm.joinedload(Study.gpu)).order_by(Study.id)))

    def verdict(self, study_id: int) -> Verdict | None:
        with self.session() as s:
            return s.scalar(sa.select(Verdict).where(Verdict.study_id == study_id))

    def confirmation(self, study_id: int) -> VerdictConfirmation | None:
        """The re-timing of the verdict's winner; None where the first re-measure found no winner or
        the database predates schema 5 (read as it is: reading never upgrades a database)."""
        if not self._has_table(VerdictConfirmation):
            return None
        with self.session() as s:
            return s.scalar(sa.select(VerdictConfirmation).where(VerdictConfirmation.study_id == study_id))

    def _has_origin_lists(self) -> bool:
        # Once there, a table stays: ask the database until it has it.
        self._origin_lists = self._origin_lists or self._has_table(OriginList)
        return self._origin_lists

    def _has_table(self, model: type[Base]) -> bool:
        try:
            return sa.inspect(self.engine).has_table(model.__tablename__)
        except sa.exc.SQLAlchemyError as exc:
            raise StoreError(f"database error on {shown(self.url)}: {error_line(exc)}") from exc
