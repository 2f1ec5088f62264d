"""A migrated, empty Prefect database kept once per Prefect version, copied into a fresh Prefect home.

    prepared = prepare(env, cwd)  # before a local API starts on the home: seed it, settings into env
    ...                           # the server answers its health check
    prepared.started()            # a first start's database becomes the template; the catalogue is noted

Why: a local API started on a fresh Prefect home runs all of Prefect's migrations before it
answers: 10.2-10.8 s wall and ~10 CPU s on the 2-core machine, against 3.9-4.1 s where the home's
database exists (issue 33: a sweep or preflight on a fresh home was to take <= 2x a bare loop).
The migrations write the same schema every time for the same Prefect, SQLAlchemy and SQLite, so
the first start on a fresh home keeps a copy of its database in the user cache
(`$TUNEGATE_CACHE/prefect-db/`, default `~/.cache/tunegate`, beside MLflow's store template,
tunegate.tracking.store_template), named for those versions, and a later fresh home starts from a
copy: Prefect then finds its schema at its revision and migrates nothing.

Only Prefect's default database, `$PREFECT_HOME/prefect.db`, and only when nothing names another:
a database setting in the environment, or the word "database" in the home's profiles or in the
`prefect.toml`, `.env` or `pyproject.toml` of the folder the server runs in, leaves it alone. The
template holds the schema, its revision and the block catalogue Prefect registers at every start,
nothing else: a copy with any other row (a flow run of a command that raced the first start) is
not kept, and Prefect's `configuration` rows (its telemetry session) are cleared. A template that
fails those checks is removed and the server migrates as before. Copies are written beside their
final name and put in place only where no file is (a second command, or a kill, never leaves half
a database under the name).

A server starting on a copy is told not to register Prefect's block types
(PREFECT_API_BLOCKS_REGISTER_ON_START=false, unless the environment sets it): the copy holds the
catalogue that registration writes, as the template is kept per set of installed Prefect
collections too (their entry points, which add block types). Registering it again cost a fresh
home's server 0.6 s of its ~4.4 s start (3 paired starts, 2026-12-06). Nor is it to check whether to
register (PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION=false, unless the environment sets it): that check
imported every installed collection first, 0.30 CPU s with prefect-dask and prefect-ray
(docs/benchmarks.md, session 47).

The same holds for a home whose database a start of the same Prefect, SQLAlchemy, SQLite and
collections left with its block catalogue registered: after each such start the versions are noted
beside the database (`$PREFECT_HOME/tunegate/prefect.db.catalogue`, the template's name, and the
schema's revision the database then had), and a later start that finds them unchanged (the shared
API's restart after it idled out: the first command after a break) skips the registration and its
check too, ~0.3-0.5 of its CPU s. Prefect's own check keys on the same things (the block types
installed, the database's URL), so a database reset under the same versions is passed over by both
alike; a note that cannot be read or written only means Prefect checks.

Nor does a start on the template's copy or on a noted database run Prefect's migrations
(PREFECT_API_DATABASE_MIGRATE_ON_START=false): every start does otherwise, and on a database already
at the installed Prefect's revision alembic only loads its ~100 revision scripts to find nothing to
do, ~0.1-0.2 of the server's ~2.4 CPU s (benchmarks/local_api_start.py, docs/benchmarks.md, session
49). The copy is at the revision its template's start migrated to; a noted database is current only
while its revision is the one noted, which a start of these versions migrated to (a database put back
from an older backup is migrated as before). A database setting of the user's own, that one included,
leaves the database to Prefect altogether (`database_file`).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, entry_points, version
from pathlib import Path
from urllib.parse import quote

from tunegate.local_api.setting_paths import absolute_settings, prefect_home
from tunegate.user_cache import cache_root

TEMPLATE_DIR = "prefect-db"
EXISTING, SEEDED, FRESH = "existing", "seeded", "fresh"
CURRENT = "current"  # an existing database whose block catalogue a start of the installed versions registered
# Prefect's names for the setting that registers its block types at every start.
REGISTER_ON_START = ("PREFECT_API_BLOCKS_REGISTER_ON_START", "PREFECT_SERVER_REGISTER_BLOCKS_ON_START")
# ... and for the one that skips that registration when a hash of the block types matches the last one's:
# working the hash out imports every installed Prefect collection first, registration or not.
MEMOIZE = ("PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION", "PREFECT_SERVER_MEMOIZE_BLOCK_AUTO_REGISTRATION")
# ... and for the one that runs its migrations (alembic upgrade) at every start.
MIGRATE_ON_START = "PREFECT_API_DATABASE_MIGRATE_ON_START"
EXTRA_ENTRYPOINTS = "PREFECT_EXTRA_ENTRYPOINTS"  # modules Prefect loads at start: they may add block types
# The tables Prefect's start fills by itself (besides the schema's revision): its block catalogue.
STARTUP_TABLES = frozenset({"alembic_version", "block_type", "block_schema", "block_schema_reference", "configuration"})
_SETTINGS_FILES = ("prefect.toml", ".env", "pyproject.toml")


def database_file(env: Mapping[str, str], cwd: Path) -> Path | None:
    """The home's default database file the server started with `env` in `cwd` will use, or None
    when a setting may name another database (see the module doc)."""
    if any(key.startswith("PREFECT_") and "DATABASE" in key for key in env):
        return None
    paths = absolute_settings(env)
    home = prefect_home(env)
    profiles = Path(paths.get("PREFECT_PROFILES_PATH") or home / "profiles.toml")
    if any(_mentions_database(path) for path in (profiles, *(cwd / name for name in _SETTINGS_FILES))):
        return None
    return home / "prefect.db"


@dataclass
class Prepared:
    """A database as a local API's start finds it (`prepare`): what to do once the server answers."""

    database: Path | None  # None: not Prefect's default database, left alone
    state: str  # EXISTING, SEEDED, FRESH or CURRENT
    registered: bool  # whether the start leaves its block catalogue current for the installed versions
    template: Path | None  # the template's file for the installed versions (its name is what a note holds)

    def started(self) -> None:
        """Once the server answered: a fresh home's database becomes the template (`keep`), and a
        current catalogue is noted for the next start (unless the note found already says so)."""
        if self.database is None or self.template is None:
            return
        if self.state == FRESH:
            keep(self.database, self.template)
        if self.registered and self.state != CURRENT:
            _note_catalogue(self.database, self.template.name)


def prepare(env: dict[str, str], cwd: Path) -> Prepared:
    """Before a local API starts with `env` in `cwd`: its home's database seeded from the template
    and `env` given what a start skips there (`seeded_settings`)."""
    database = database_file(env, cwd)
    template = template_path() if database is not None else None  # read once: each reads every entry point
    state = seed(database, template)
    if state == EXISTING and template is not None and _catalogue_current(database, template.name):
        state = CURRENT
    env.update(seeded_settings(state, env))
    # A start Prefect registers in, unless the environment turned registration off: then the
    # catalogue is only current where it was before (the template's copy, a noted database).
    registered = state in (SEEDED, CURRENT) or not any(name in env for name in REGISTER_ON_START)
    return Prepared(database, state, registered, template)


def seed(database: Path | None, template: Path | None = None) -> str:
    """Give a fresh home's database the template's copy (`template`, by default the installed
    versions'): SEEDED; FRESH when there is no good template yet (the server migrates; `keep` its
    result), EXISTING when the file is there already or the database is not ours to make (None)."""
    if database is None or _has_content(database):
        return EXISTING
    template = template or template_path()
    if not template.is_file():
        return FRESH
    try:
        source = sqlite3.connect(_read_only(template), uri=True)
    except sqlite3.Error:
        return FRESH
    with contextlib.closing(source):
        try:
            good = _only_startup_rows(source)
        except sqlite3.Error:
            good = False
        if not good:  # a damaged cache: never copied; this start's migrations make a new one
            with contextlib.suppress(OSError):
                template.unlink()
            return FRESH
        try:
            _copy_into_place(source, database)
        except (OSError, sqlite3.Error):  # a home this user cannot write: the server says so
            return FRESH
    return SEEDED


def seeded_settings(state: str, env: Mapping[str, str]) -> dict[str, str]:
    """Prefect settings for a server starting on the database `prepare` found in `state`: on the
    template's copy, no block registration (the copy holds that catalogue), unless `env` sets it;
    and then no check of whether to register either (unless `env` sets that): Prefect's check
    imports every installed collection to hash their block types before it asks whether to register
    at all, 0.30 CPU s of the server's start with prefect-dask and prefect-ray installed. On a
    database whose catalogue is noted current, neither, unless `env` sets either (a user who set
    Prefect's check off wants every start to register). On both, no migrations: the schema is at
    the installed Prefect's revision (a migration setting of the user's own leaves the database
    Prefect's: `prepare` finds no database of ours, EXISTING)."""
    no_migrations = {MIGRATE_ON_START: "false"} if state in (SEEDED, CURRENT) else {}
    if any(name in env for name in REGISTER_ON_START):
        return no_migrations
    checks = any(name in env for name in MEMOIZE)
    if state == SEEDED:
        return {**no_migrations, REGISTER_ON_START[0]: "false", **({} if checks else {MEMOIZE[0]: "false"})}
    if state == CURRENT and not checks:
        return {**no_migrations, REGISTER_ON_START[0]: "false", MEMOIZE[0]: "false"}
    return no_migrations


def keep(database: Path, template: Path | None = None) -> None:
    """After the first start on a fresh home: its database becomes the template (`template`, by
    default the installed versions'), if it holds nothing but what any start puts there (best
    effort: without one the next fresh home migrates)."""
    template = template or template_path()
    tmp = template.with_name(f".{template.name}.creating-{os.getpid()}")
    try:
        template.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.closing(sqlite3.connect(_read_only(database), uri=True)) as source, \
                contextlib.closing(sqlite3.connect(tmp)) as copy:
            source.backup(copy)
            copy.execute("DELETE FROM configuration")
            copy.commit()
            if not _only_startup_rows(copy):
                raise sqlite3.DatabaseError("holds rows of a command")
            # One file, no -wal beside it while it is read (Prefect turns WAL on for every connection).
            copy.execute("PRAGMA journal_mode = DELETE")
            copy.execute("VACUUM")
        os.replace(tmp, template)
    except (OSError, sqlite3.Error):
        with contextlib.suppress(OSError):
            tmp.unlink()


def catalogue_note(database: Path) -> Path:
    """Where the versions the database's block catalogue was registered under are noted, with the
    schema's revision it then had: "VERSIONS\nREVISION"."""
    return database.parent / "tunegate" / f"{database.name}.catalogue"


def _catalogue_current(database: Path, versions: str) -> bool:
    """Whether a start of `versions` noted the database, and its schema is still at the noted revision."""
    try:
        noted = catalogue_note(database).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    revision = _revision(database)
    return revision is not None and noted == f"{versions}\n{revision}"


def _note_catalogue(database: Path, versions: str) -> None:
    """Best effort: without the note the next start checks and migrates as Prefect does."""
    revision = _revision(database)
    if revision is None:
        return
    note = catalogue_note(database)
    tmp = note.with_name(f".{note.name}.{os.getpid()}")
    try:
        note.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(f"{versions}\n{revision}", encoding="utf-8")
        os.replace(tmp, note)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _revision(database: Path) -> str | None:
    """The schema's one alembic revision in `database`; None where it has none, several or cannot be read."""
    try:
        with contextlib.closing(sqlite3.connect(_read_only(database), uri=True)) as db:
            rows = db.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.Error:
        return None
    return str(rows[0][0]) if len(rows) == 1 and rows[0][0] else None


def template_path() -> Path:
    """The template's file for the installed Prefect, SQLAlchemy and SQLite and the Prefect
    collections (versions read from the installed packages' metadata: Prefect is not imported here)."""
    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "none"

    name = (f"prefect-{installed('prefect')}_sqlalchemy-{installed('sqlalchemy')}_sqlite-{sqlite3.sqlite_version}"
            f"_collections-{_collections()}.db")
    return cache_root() / TEMPLATE_DIR / name


def _collections() -> str:
    """A digest of what adds block types to the catalogue a start registers, besides Prefect itself:
    the installed collections' entry points (with their packages' versions) and Prefect's extra
    entry points named in the environment."""
    found = sorted(f"{point.name}={point.value}@{point.dist.version if point.dist else ''}"
                   for point in entry_points(group="prefect.collections"))
    text = json.dumps([found, os.environ.get(EXTRA_ENTRYPOINTS, "")])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _only_startup_rows(db: sqlite3.Connection) -> bool:
    """A migrated Prefect database (one revision) whose only rows are those every start makes."""
    tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    if "alembic_version" not in tables or "flow_run" not in tables:
        return False
    if len(db.execute("SELECT version_num FROM alembic_version").fetchall()) != 1:
        return False
    return all(db.execute(f'SELECT 1 FROM "{name}" LIMIT 1').fetchone() is None
               for name in tables if name not in STARTUP_TABLES and not name.startswith("sqlite_"))


def _copy_into_place(source: sqlite3.Connection, database: Path) -> None:
    """The template's copy as `database`, only where no file is (another command may be first)."""
    database.parent.mkdir(parents=True, exist_ok=True)
    tmp = database.with_name(f".{database.name}.seeding-{os.getpid()}")
    try:
        with contextlib.closing(sqlite3.connect(tmp)) as copy:
            source.backup(copy)
        if database.exists() and not _has_content(database):
            database.unlink()  # an empty file: nothing to keep (SQLite reads it as a new database)
        with contextlib.suppress(FileExistsError):
            os.link(tmp, database)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _read_only(path: Path) -> str:
    return f"file:{quote(os.fsencode(path))}?mode=ro"  # quoted: `?` or `%41` in a folder name is no URI syntax


def _has_content(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def _mentions_database(path: Path) -> bool:
    try:
        return "database" in path.read_text(encoding="utf-8", errors="replace").lower()
    except OSError:
        return False
