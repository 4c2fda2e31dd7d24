"""The real stores the LangGraph tests run on, and the PostgreSQL server they start and stop themselves.

``postgres_server`` (session scope): Debian's PostgreSQL (``apt-get install postgresql``; ``.ci/run``
installs it when missing), ``initdb`` into a temporary directory as an unprivileged user when the tests
run as root (initdb refuses root), started with ``pg_ctl`` on a Unix socket in that directory only (no TCP
port), durability off (a test server), stopped and removed at the end of the session. Each store gets a
schema of its own (``search_path``), so tests never see each other's rows.

``Stores`` makes fresh stores of one kind (``memory``, ``sqlite``, ``postgres``) in one mode (``sync`` or
``async``: ``AsyncSqliteStore``, ``AsyncPostgresStore``, and ``InMemoryStore`` driven through its
``a*`` methods), and wraps a store in :class:`Calls`, which calls the sync methods or runs the async ones
on the test's event loop, so one test body covers both modes.

A test module imports the fixtures it uses (``from langgraph_stores import stores_fixture``); each is
registered under its short name (``stores``).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import glob
import inspect
import itertools
import os
import pwd
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

KINDS = ("memory", "sqlite", "postgres")
MODES = ("sync", "async")
PORT = 54329  # names the socket file only: the server listens on no TCP port


def _pg_bin() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    return Path(versions[-1]).parent if versions else None


class PostgresServer:
    """A throwaway PostgreSQL server on a Unix socket."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="memdedup-pg-"))
        self.data = self.root / "data"
        self.user: str | None = None
        if os.geteuid() == 0:  # initdb and postgres refuse to run as root
            self.user = "postgres" if _has_user("postgres") else "nobody"
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        self.dbuser = "memdedup"
        self._schemas = itertools.count()

    def _run(self, *argv: str) -> None:
        subprocess.run(
            [str(self.bindir / argv[0]), *argv[1:]],
            check=True,
            capture_output=True,
            user=self.user,
            cwd=self.root,
            timeout=120,
        )

    def start(self) -> None:
        self._run("initdb", "-D", str(self.data), "-U", self.dbuser, "-A", "trust", "-E", "UTF8",
                  "--locale=C", "--no-sync", "--no-instructions")  # fmt: skip
        options = (
            f"-c listen_addresses='' -c unix_socket_directories={self.root} -p {PORT} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=40"
        )
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w", "start")
        atexit.register(self.stop)  # a session that dies early leaves no server behind

    def stop(self) -> None:
        if not self.root.exists():
            return
        with contextlib.suppress(Exception):
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, schema: str | None = None) -> str:
        url = f"postgresql://{self.dbuser}@/postgres?host={self.root}&port={PORT}"
        return url + (f"&options=-csearch_path%3D{schema}" if schema else "")

    def new_schema(self) -> str:
        """A fresh, empty schema: one store's tables."""
        import psycopg

        schema = f"s{os.getpid()}_{next(self._schemas)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        return schema


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


_SERVER: list[PostgresServer] = []  # one server per test session, whichever module asks first


@pytest.fixture(scope="session", name="postgres_server")
def postgres_server_fixture() -> Iterator[PostgresServer]:
    # Each test module that imports this fixture holds a session fixture of its own: they share one
    # server (started by the first, stopped by the first teardown, at the end of the session).
    if not _SERVER:
        bindir = _pg_bin()
        if bindir is None:
            if os.environ.get("CI"):
                pytest.fail("PostgreSQL is not installed: .ci/run installs Debian's postgresql package")
            pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
        server = PostgresServer(bindir)
        try:
            server.start()
        except BaseException:
            server.stop()
            raise
        _SERVER.append(server)
    yield _SERVER[0]
    if _SERVER:
        _SERVER.pop().stop()


class Calls:
    """A store's methods called in one mode: ``calls.put(...)`` is ``store.put(...)`` (sync) or runs
    ``store.aput(...)`` to completion on ``loop`` (async)."""

    def __init__(self, store: Any, loop: asyncio.AbstractEventLoop | None) -> None:
        self.store = store
        self.loop = loop

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if self.loop is None:
            return getattr(self.store, name)  # type: ignore[no-any-return]
        method = getattr(self.store, "a" + name)
        loop = self.loop
        return lambda *args, **kwargs: loop.run_until_complete(method(*args, **kwargs))

    def same(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Call a method that has one name in both modes (``setup``, ``sweep_ttl``: sync on a sync store,
        a coroutine on an async one)."""
        result = getattr(self.store, name)(*args, **kwargs)
        if inspect.isawaitable(result):
            assert self.loop is not None
            return self.loop.run_until_complete(result)
        return result


class Stores:
    """Fresh inner stores of one kind in one mode, closed at the end of the test."""

    def __init__(self, kind: str, mode: str, server: PostgresServer | None) -> None:
        self.kind, self.mode, self.server = kind, mode, server
        self.loop = asyncio.new_event_loop() if mode == "async" else None
        self._exits = contextlib.ExitStack()
        self._aexits = contextlib.AsyncExitStack()

    def run(self, awaitable: Any) -> Any:
        assert self.loop is not None
        return self.loop.run_until_complete(awaitable)

    def calls(self, store: Any) -> Calls:
        return Calls(store, self.loop)

    def inner(self, *, index: dict[str, Any] | None = None, ttl: dict[str, Any] | None = None) -> Any:
        """A new, empty, set-up store of this kind and mode."""
        if self.kind == "memory":
            if self.loop is None:
                return _memory(index)
            return self.run(_amemory(index))
        if self.kind == "sqlite":
            if self.loop is None:
                from langgraph.store.sqlite import SqliteStore

                conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
                self._exits.callback(conn.close)
                store = SqliteStore(conn, index=index, ttl=ttl)  # type: ignore[arg-type]
                store.setup()
                return store
            return self.run(self._asqlite(index, ttl))
        assert self.server is not None
        url = self.server.url(self.server.new_schema())
        if self.loop is None:
            from langgraph.store.postgres import PostgresStore

            store = self._exits.enter_context(PostgresStore.from_conn_string(url, index=index, ttl=ttl))
            store.setup()
            return store
        return self.run(self._apostgres(url, index, ttl))

    async def _asqlite(self, index: Any, ttl: Any) -> Any:
        from langgraph.store.sqlite.aio import AsyncSqliteStore

        store = await self._aexits.enter_async_context(
            AsyncSqliteStore.from_conn_string(":memory:", index=index, ttl=ttl)
        )
        await store.setup()
        return store

    async def _apostgres(self, url: str, index: Any, ttl: Any) -> Any:
        from langgraph.store.postgres.aio import AsyncPostgresStore

        store = await self._aexits.enter_async_context(
            AsyncPostgresStore.from_conn_string(url, index=index, ttl=ttl)
        )
        await store.setup()
        return store

    def close(self) -> None:
        if self.loop is not None:
            self.run(self._aexits.aclose())
            self.run(_cancel_background_tasks())
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()
        self._exits.close()


async def _cancel_background_tasks() -> None:
    """Cancel the async stores' background batching tasks before the loop closes."""
    pending = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


def _memory(index: Any) -> Any:
    from langgraph.store.memory import InMemoryStore

    return InMemoryStore(index=index)


async def _amemory(index: Any) -> Any:
    return _memory(index)


@pytest.fixture(
    name="stores", params=[(kind, mode) for kind in KINDS for mode in MODES], ids=lambda p: f"{p[0]}-{p[1]}"
)
def stores_fixture(request: pytest.FixtureRequest) -> Iterator[Stores]:
    """Every store kind in both modes."""
    kind, mode = request.param
    server = request.getfixturevalue("postgres_server") if kind == "postgres" else None
    made = Stores(kind, mode, server)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(name="sync_stores", params=KINDS)
def sync_stores_fixture(request: pytest.FixtureRequest) -> Iterator[Stores]:
    """Every store kind, sync."""
    server = request.getfixturevalue("postgres_server") if request.param == "postgres" else None
    made = Stores(request.param, "sync", server)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(name="memory_stores", params=MODES)
def memory_stores_fixture(request: pytest.FixtureRequest) -> Iterator[Stores]:
    """InMemoryStore in both modes: the one store with vector search here (Debian's PostgreSQL has no
    pgvector package, and this Python's sqlite3 cannot load sqlite-vec)."""
    made = Stores("memory", request.param, None)
    try:
        yield made
    finally:
        made.close()
