"""Where trajectories live: five tables, written and read through SQLAlchemy (SQLite or PostgreSQL).

    trajectory_toolsets  one row per (server, description, tool list) seen: the tools an episode had
    trajectory_episodes  one row per episode: task, split, seed, prompt, times, running totals, done
    trajectory_steps     one row per step: tool and arguments, observation, reward (and its named scores and
                         their reasons), done, timings
    trajectory_turns     one row per model call a chat policy made: the reply, its calls and what became of them,
                         and with --capture-tokens its token ids and log-probabilities (written by the policy's
                         side, joined to its episode by server and episode id); the capture proxy writes one
                         per request a harness made (its wire format, segment, and side requests marked)
    trajectory_journals  per recorder journal still being written, where its last written batch ends (updated
                         in that batch's transaction, so a writer that takes the journal up again after a crash
                         skips exactly what is stored: :mod:`~openenv_mcp.trajectories.journal`)

The store is synchronous: the recorder's writer process calls it, and the exporter from the
command line. It is the one module here that imports SQLAlchemy, so ``openenv-mcp --help`` does not.
There are no foreign keys on purpose: a batch the database refused must not make later batches
fail; the exporter skips episodes with missing steps instead.

Columns are only ever added, and only nullable ones: :meth:`TrajectoryStore.create` adds a column this version
has and an existing database lacks (``ALTER TABLE ... ADD COLUMN``), so an older file keeps working.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from sqlalchemy import (
    Column,
    Engine,
    Table,
    bindparam,
    create_engine,
    event,
    insert,
    inspect,
    select,
    tuple_,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from openenv_mcp.errors import BackendUnavailable, ConfigError
from openenv_mcp.trajectories.tables import (
    STEP_COLUMNS,
    episodes,
    journals,
    json_text,
    metadata,
    step_row,
    step_values,
    steps,
    toolset_id,
    toolsets,
    turns,
)

__all__ = [
    "STEP_COLUMNS",
    "EpisodeFilter",
    "StoredEpisode",
    "TrajectoryStore",
    "engine_url",
    "json_text",
    "step_values",
    "toolset_id",
]

_PROGRESS = ("step_count", "total_reward", "done")
_CREATE_RACES = ("already exists", "duplicate column", "database is locked")
_MARKED = ("dropped_steps",)
_CLOSE = (*_PROGRESS, "closed_at", "dropped_steps")


@dataclass(frozen=True, slots=True)
class EpisodeFilter:
    """Which episodes to read (and export).

    By default every episode with none of its steps missing (see ``include_incomplete``), those without a step
    included: an episode whose model never acted is data too.

    Attributes:
        split: Only this split (``train``, ``test``...).
        server: Only this server's episodes (one store may hold several servers).
        min_reward: Only episodes whose total reward is at least this.
        done_only: Only episodes the environment finished (not abandoned or still open).
        include_incomplete: Also episodes with steps the recorder dropped (its queue was full) or lost.
        min_steps: Only episodes with at least this many steps.
    """

    split: str | None = None
    server: str | None = None
    min_reward: float | None = None
    done_only: bool = False
    include_incomplete: bool = False
    min_steps: int = 0


def engine_url(url: str) -> str:
    """``url`` with PostgreSQL pointed at psycopg 3 (the driver this package installs)."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


@dataclass(frozen=True, slots=True)
class StoredEpisode:
    """One episode as stored: its row, its toolset row, its steps in order, and its captured turns in order."""

    episode: Mapping[str, Any]
    toolset: Mapping[str, Any]
    steps: list[Mapping[str, Any]]
    turns: list[Mapping[str, Any]] = field(default_factory=list)


class TrajectoryStore:
    """The trajectory tables behind one SQLAlchemy URL."""

    def __init__(self, url: str) -> None:
        self.url = url
        try:
            parsed = make_url(engine_url(url))
            options: dict[str, Any] = {"json_serializer": json_text}
            if parsed.get_backend_name() == "sqlite":
                options["connect_args"] = {"timeout": 30, "check_same_thread": False}
                if parsed.database in (None, "", ":memory:"):
                    options["poolclass"] = StaticPool  # one shared connection, or each thread sees its own empty DB
            self.engine: Engine = create_engine(parsed, **options)
        except (ArgumentError, ImportError, ValueError) as exc:
            raise ConfigError(
                f"OPENENV_TRAJECTORIES is not a usable SQLAlchemy URL ({url!r}: {exc}); "
                "use e.g. sqlite:///trajectories.db, postgresql://user@host/db, or 'off'"
            ) from None
        # SQLite (the default store) takes steps and running totals straight through the driver (below).
        self._direct = self.engine.dialect.name == "sqlite" and self.engine.dialect.paramstyle == "qmark"
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._has_turns: bool | None = None
        self._columns: dict[str, list[Column[Any]]] = {}

    def create(self) -> None:
        """Create the tables that do not exist yet; a database that cannot be reached is a ConfigError.

        Two processes may create one store at once (a server's recorder and the capture proxy): the one that finds
        a table or column the other has just made, or the new file locked while the other turns on its write-ahead
        log (SQLite does not wait for that), looks again, up to five times.
        """
        for attempt in range(5):
            try:
                metadata.create_all(self.engine, checkfirst=True)
                self._add_missing_columns()
                self._columns = {}
                return
            except SQLAlchemyError as exc:
                if attempt < 4 and any(race in str(exc) for race in _CREATE_RACES):
                    time.sleep(0.05 * (attempt + 1))
                    continue
                self._refuse(exc)

    def _refuse(self, exc: SQLAlchemyError) -> NoReturn:
        raise ConfigError(
            f"Cannot open the trajectory store {self.url!r} (OPENENV_TRAJECTORIES): {exc.__class__.__name__}: "
            f"{str(exc).splitlines()[0]}; fix the URL, or set OPENENV_TRAJECTORIES=off to record nothing"
        ) from None

    def _add_missing_columns(self) -> None:
        """Add the nullable columns a database made by an older version lacks (never drops or changes any)."""
        found = inspect(self.engine)
        preparer = self.engine.dialect.identifier_preparer
        for table in metadata.sorted_tables:
            have = {column["name"] for column in found.get_columns(table.name)}
            for column in table.columns:
                if column.name in have or not column.nullable:
                    continue
                kind = column.type.compile(dialect=self.engine.dialect)
                with self.engine.begin() as conn:
                    conn.exec_driver_sql(
                        f"ALTER TABLE {preparer.quote(table.name)} ADD COLUMN {preparer.quote(column.name)} {kind}"
                    )

    def _select_steps(self, conn: Any) -> Any:
        """``select(steps)`` of the columns this database has (one made by an older version lacks the newest)."""
        return self._select(conn, steps)

    def _select(self, conn: Any, table: Table) -> Any:
        """``select(table)`` of the columns of ``table`` this database has."""
        if table.name not in self._columns:
            have = {column["name"] for column in inspect(conn).get_columns(table.name)}
            self._columns[table.name] = [column for column in table.columns if column.name in have]
        return select(*self._columns[table.name])

    def check_readable(self) -> None:
        """Raise ConfigError unless the store exists and holds the trajectory tables (never creates a file)."""
        url = self.engine.url
        database = url.database if url.get_backend_name() == "sqlite" else None
        if database not in (None, "", ":memory:") and not Path(str(database)).exists():
            raise ConfigError(
                f"No trajectory store at {self.url!r}: {database} does not exist "
                "(a sim server writes it; pass --url or set OPENENV_TRAJECTORIES to where it records)"
            )
        try:
            found = inspect(self.engine).has_table(episodes.name)
        except SQLAlchemyError as exc:
            raise ConfigError(f"Cannot read the trajectory store {self.url!r}: {str(exc).splitlines()[0]}") from None
        if not found:
            raise ConfigError(f"The database {self.url!r} holds no trajectories (no {episodes.name} table)")

    def save_toolset(self, *, server: str, description: str, tools: Sequence[Mapping[str, Any]]) -> str:
        """Store a server's tool list once; return its id."""
        key = toolset_id(server, description, tools)
        with self.engine.begin() as conn:
            if conn.execute(select(toolsets.c.id).where(toolsets.c.id == key)).first() is None:
                conn.execute(
                    insert(toolsets).values(
                        id=key, server=server, description=description, tools=list(tools), created_at=time.time()
                    )
                )
        return key

    def write(
        self,
        *,
        opened: Sequence[Mapping[str, Any]] = (),
        stepped: Sequence[Mapping[str, Any]] = (),
        progress: Sequence[Mapping[str, Any]] = (),
        marked: Sequence[Mapping[str, Any]] = (),
        closed: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        """Write one batch of rows as mappings (see :meth:`write_values`)."""
        self.write_values(
            opened=opened,
            stepped=[step_values(row) for row in stepped],
            progress=[(row["step_count"], row["total_reward"], row["done"], row["id"]) for row in progress],
            marked=marked,
            closed=closed,
        )

    def write_values(
        self,
        *,
        opened: Sequence[Mapping[str, Any]] = (),
        stepped: Sequence[Sequence[Any]] = (),
        progress: Sequence[Sequence[Any]] = (),
        marked: Sequence[Mapping[str, Any]] = (),
        closed: Sequence[Mapping[str, Any]] = (),
        position: tuple[str, int, int] | None = None,
    ) -> None:
        """Write one batch in one transaction: new episodes, their steps, running totals, drop marks, closes, and
        with ``position`` (a journal's name, a segment, an offset) where in that journal the batch ends.

        ``stepped`` holds each step as one tuple in ``STEP_COLUMNS`` order, its JSON columns already JSON text
        (:func:`step_values`); ``progress`` each episode's running totals as ``(step_count, total_reward, done,
        id)``: plain values, as the trajectory writer makes them of what a server journals.

        Raises:
            BackendUnavailable: the database refused the batch (nothing of it was written).
        """
        try:
            with self.engine.begin() as conn:
                if opened:
                    conn.execute(insert(episodes), list(opened))
                if self._direct:
                    # Steps and running totals go straight to the driver's executemany as tuples: they cost a
                    # fifth of SQLAlchemy's per-row parameter processing.
                    if stepped:
                        conn.exec_driver_sql(_INSERT_STEP, list(stepped))
                    if progress:
                        conn.exec_driver_sql(_UPDATE_PROGRESS, list(progress))
                    direct: tuple[tuple[Sequence[Mapping[str, Any]], tuple[str, ...]], ...] = (
                        (marked, _MARKED),
                        (closed, _CLOSE),
                    )
                else:
                    if stepped:  # through the JSON type, which serialises the decoded values back alike
                        conn.execute(insert(steps), [step_row(values) for values in stepped])
                    rows = [dict(zip((*_PROGRESS, "id"), values, strict=True)) for values in progress]
                    direct = ((rows, _PROGRESS), (marked, _MARKED), (closed, _CLOSE))
                for rows_, names in direct:
                    if rows_:
                        statement = (
                            update(episodes)
                            .where(episodes.c.id == bindparam("b_id"))
                            .values({name: bindparam(f"b_{name}") for name in names})
                        )
                        conn.execute(statement, [{f"b_{k}": v for k, v in row.items()} for row in rows_])
                if position is not None:
                    journal, segment, offset = position
                    values = {"segment": segment, "offset": offset, "at": time.time()}
                    moved = conn.execute(update(journals).where(journals.c.journal == journal).values(values))
                    if not moved.rowcount:
                        conn.execute(insert(journals).values(journal=journal, **values))
        except SQLAlchemyError as exc:
            raise BackendUnavailable(
                f"The trajectory store {self.url!r} refused a write: {exc.__class__.__name__}: "
                f"{str(exc).splitlines()[0]}"
            ) from exc

    def journal_position(self, journal: str) -> tuple[int, int] | None:
        """Where the batches written from ``journal`` end (segment, offset); None when none was written."""
        try:
            with self.engine.connect() as conn:
                row = conn.execute(
                    select(journals.c.segment, journals.c.offset).where(journals.c.journal == journal)
                ).first()
        except SQLAlchemyError as exc:
            raise BackendUnavailable(
                f"The trajectory store {self.url!r} cannot be read: {exc.__class__.__name__}"
            ) from exc
        return None if row is None else (int(row[0]), int(row[1]))

    def forget_journal(self, journal: str) -> None:
        """Drop ``journal``'s position: it is written to its end and deleted."""
        try:
            with self.engine.begin() as conn:
                conn.execute(journals.delete().where(journals.c.journal == journal))
        except SQLAlchemyError as exc:
            raise BackendUnavailable(
                f"The trajectory store {self.url!r} refused a write: {exc.__class__.__name__}"
            ) from exc

    def write_turns(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Insert captured turns (``trajectory_turns`` rows) in one transaction.

        Raises:
            BackendUnavailable: the database refused them (nothing was written).
        """
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(turns), list(rows))
        except SQLAlchemyError as exc:
            raise BackendUnavailable(
                f"The trajectory store {self.url!r} refused the captured turns: {exc.__class__.__name__}: "
                f"{str(exc).splitlines()[0]}"
            ) from exc

    def episode_server(self, episode_id: str) -> str | None:
        """The server of the latest episode with id ``episode_id``; ``None`` when there is none (yet)."""
        query = (
            select(episodes.c.server)
            .where(episodes.c.episode_id == episode_id)
            .order_by(episodes.c.created_at.desc())
            .limit(1)
        )
        try:
            with self.engine.connect() as conn:
                row = conn.execute(query).first()
        except SQLAlchemyError as exc:
            raise BackendUnavailable(
                f"The trajectory store {self.url!r} cannot be read: {str(exc).splitlines()[0]}"
            ) from exc
        return None if row is None else str(row.server)

    def episode_turns(self, episode_id: str, *, server: str | None = None) -> list[dict[str, Any]]:
        """The model turns stored for ``episode_id`` (of ``server`` when given), in turn order.

        Raises:
            BackendUnavailable: the store cannot be read.
        """
        try:
            with self.engine.connect() as conn:
                query = self._select(conn, turns).where(turns.c.episode_id == episode_id)
                if server is not None:
                    query = query.where(turns.c.server == server)
                return [dict(row._mapping) for row in conn.execute(query.order_by(turns.c.turn, turns.c.id))]
        except SQLAlchemyError as exc:
            raise BackendUnavailable(
                f"The trajectory store {self.url!r} cannot be read: {str(exc).splitlines()[0]}"
            ) from exc

    def read(self, where: EpisodeFilter | None = None, *, chunk: int = 200) -> Iterator[StoredEpisode]:
        """Episodes matching ``where``, oldest first, each with its steps; streamed in chunks."""
        where = where or EpisodeFilter()
        conditions = [episodes.c.step_count >= where.min_steps]
        if where.split is not None:
            conditions.append(episodes.c.split == where.split)
        if where.server is not None:
            conditions.append(episodes.c.server == where.server)
        if where.min_reward is not None:
            conditions.append(episodes.c.total_reward >= where.min_reward)
        if where.done_only:
            conditions.append(episodes.c.done.is_(True))
        if not where.include_incomplete:
            conditions.append(episodes.c.dropped_steps == 0)
        known: dict[str, Mapping[str, Any]] = {}
        after: tuple[float, str] | None = None
        while True:
            query = select(episodes).where(*conditions)
            if after is not None:
                query = query.where(tuple_(episodes.c.created_at, episodes.c.id) > tuple_(*after))
            query = query.order_by(episodes.c.created_at, episodes.c.id).limit(chunk)
            with self.engine.connect() as conn:
                rows = [dict(row._mapping) for row in conn.execute(query)]
                if not rows:
                    return
                ids = [row["id"] for row in rows]
                by_episode: dict[str, list[Mapping[str, Any]]] = {key: [] for key in ids}
                step_query = (
                    self._select_steps(conn)
                    .where(steps.c.trajectory_id.in_(ids))
                    .order_by(steps.c.trajectory_id, steps.c.step)
                )
                for step in conn.execute(step_query):
                    by_episode[step.trajectory_id].append(dict(step._mapping))
                captured = self._turns(conn, rows)
                missing = {row["toolset_id"] for row in rows} - known.keys()
                if missing:
                    for toolset in conn.execute(select(toolsets).where(toolsets.c.id.in_(missing))):
                        known[toolset.id] = dict(toolset._mapping)
            for row in rows:
                yield StoredEpisode(
                    episode=row,
                    toolset=known[row["toolset_id"]],
                    steps=by_episode[row["id"]],
                    turns=captured.get((row["server"], row["episode_id"]), []),
                )
            after = (rows[-1]["created_at"], rows[-1]["id"])

    def _turns(self, conn: Any, rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], list[Mapping[str, Any]]]:
        """The model turns of ``rows``' episodes by (server, episode id); none in a store made before turns were."""
        if self._has_turns is None:
            self._has_turns = inspect(conn).has_table(turns.name)
        found: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        if not self._has_turns:
            return found
        query = (
            self._select(conn, turns)
            .where(turns.c.episode_id.in_(sorted({row["episode_id"] for row in rows})))
            .order_by(turns.c.episode_id, turns.c.turn, turns.c.id)
        )
        for turn in conn.execute(query):
            found.setdefault((turn.server, turn.episode_id), []).append(dict(turn._mapping))
        return found

    def recent(self, limit: int = 500) -> list[Mapping[str, Any]]:
        """The ``limit`` latest episodes with at least one step, newest first, without their steps."""
        query = (
            select(episodes)
            .where(episodes.c.step_count > 0)
            .order_by(episodes.c.created_at.desc(), episodes.c.id.desc())
            .limit(limit)
        )
        with self.engine.connect() as conn:
            return [dict(row._mapping) for row in conn.execute(query)]

    def episode(self, trajectory_id: str) -> StoredEpisode | None:
        """One episode by its stored id, with its steps; ``None`` when there is none."""
        with self.engine.connect() as conn:
            row = conn.execute(select(episodes).where(episodes.c.id == trajectory_id)).first()
            if row is None:
                return None
            found = dict(row._mapping)
            toolset = conn.execute(select(toolsets).where(toolsets.c.id == found["toolset_id"])).one()
            stored_steps = conn.execute(
                self._select_steps(conn).where(steps.c.trajectory_id == trajectory_id).order_by(steps.c.step)
            )
            return StoredEpisode(
                episode=found, toolset=dict(toolset._mapping), steps=[dict(step._mapping) for step in stored_steps]
            )

    def close(self) -> None:
        self.engine.dispose()


_INSERT_STEP = f"INSERT INTO {steps.name} ({', '.join(STEP_COLUMNS)}) VALUES ({', '.join('?' * len(STEP_COLUMNS))})"
_UPDATE_PROGRESS = f"UPDATE {episodes.name} SET {', '.join(f'{name} = ?' for name in _PROGRESS)} WHERE id = ?"


def _sqlite_pragmas(connection: Any, record: Any) -> None:
    # WAL lets the exporter (and other replicas) read while a server writes.
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()
