"""The files and folders agentmem owns, and only those.

agentmem creates its home, its BM25 index folder and their sub-folders 0700, and writes a marker file
(`MARKER`) into each folder it creates but the logs/ and spool/ folders of a home it owns. It changes the mode
of a folder, or deletes anything in it, only when the folder carries that marker, is the logs/ or spool/ folder
of a home it owns, or is recognised as made by an older agentmem (`adopt_legacy_home`,
`index.fulltext.claim_index_dir`). A folder someone else made (`AGENTMEM_DB=/shared/agentmem.db` puts the
database in `/shared`) is used as it is, never chmodded. Files agentmem creates are 0600.

`check_private_file` is the rule for files agentmem reads as instructions (config.toml, spooled events):
a file another user could have written is not obeyed.

Standard library only: hooks import this module.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

TYPE_CHECKING = False  # typing costs a hook process ~5 ms, and hooks import this module
if TYPE_CHECKING:
    import socket
    from collections.abc import Callable
    from typing import Any

MARKER = ".agentmem-owned"
_MARKER_TEXT = "This folder was created by agentmem, which may change or delete what it created here.\n"
# What an older agentmem (before markers) wrote in its home; a folder holding only these, with the database and
# one of the folders only a home has, is adopted as an older home.
HOME_NAMES = frozenset({"agentmem.db", "agentmem.db-wal", "agentmem.db-shm", "agentmem.db-journal", "fulltext",
                        "logs", "spool", "config.toml", MARKER, "agentmem.db.audit-key",
                        "agentmem.db.audit-head", "agentmem.db.audit-head.lock", "config.cache.json"})
_HOME_ONLY = ("fulltext", "logs", "spool")


class ConfigError(ValueError):
    """A setting has a value agentmem cannot use (also raised for a home folder agentmem may not use)."""


class ForeignFolderError(ConfigError):
    """A folder agentmem would have to empty was not created by agentmem (the message says what to do)."""


class ForeignDatabaseError(ConfigError):
    """A database file agentmem was pointed at is another program's (the message says what to do)."""


def is_owned(path: Path) -> bool:
    """True when `path` is a folder agentmem created (it carries the marker file)."""
    return (path / MARKER).is_file()


def write_marker(path: Path) -> None:
    """Mark folder `path` as agentmem's."""
    old = os.umask(0o077)
    try:
        (path / MARKER).write_text(_MARKER_TEXT, encoding="utf-8")
    finally:
        os.umask(old)


def ensure_private_dir(path: Path) -> bool:
    """Make sure folder `path` exists; returns whether agentmem owns it.

    A missing folder is created (parents too, with the default mode), made 0700 and marked as agentmem's.
    An existing folder with agentmem's marker (or an older agentmem home, `adopt_legacy_home`) is made 0700 again
    if its mode drifted; any other existing folder is left exactly as it is."""
    try:
        path.mkdir(parents=True)
    except FileExistsError:
        if not path.is_dir():
            raise
        if not (is_owned(path) or adopt_legacy_home(path) or _home_folder(path)):
            return False
    else:
        if not _home_folder(path):
            write_marker(path)
    st = path.stat()
    if stat.S_IMODE(st.st_mode) != 0o700 and st.st_uid == current_uid():  # root too never chmods another user's folder
        os.chmod(path, 0o700)
    return True


def home_refusal(settings: Any) -> str | None:
    """Why agentmem must not use the home and files `settings` names (None: it may), in one line saying what to do.

    Refused: a home, database, index or log folder (or any file of these agentmem would open) owned by another
    user; a symbolic link where agentmem keeps a file of its own in its home (a planted `logs/agentmem.log`); a home
    that group or others may write into; and an existing home agentmem did not make whose mode lets other users in
    (agentmem changes the mode only of what it made, so it asks for the `chmod`). A missing home is fine: agentmem
    creates it private. Only `lstat` calls: hooks run this on every event."""
    if os.name == "nt":  # no POSIX owners and modes: Windows ACLs are not checked
        return None
    home = settings.home
    try:
        link = os.lstat(home)
    except OSError:
        return None
    try:
        st = os.stat(home) if stat.S_ISLNK(link.st_mode) else link
    except OSError:
        return None  # a dangling link: the preflight says the home is missing or not a folder
    uid = os.geteuid()
    if uid not in (link.st_uid, st.st_uid) or link.st_uid != st.st_uid:
        owner = link.st_uid if link.st_uid != uid else st.st_uid
        return (f"agentmem's home {home} belongs to another user (uid {owner}), who could read or plant its "
                f"memories: point AGENTMEM_HOME at a folder of yours (a new one is created private), or if this one "
                f"is yours, `chown -R {uid} {home}`")
    if not stat.S_ISDIR(st.st_mode):
        return None  # the preflight says so
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022 or (mode & 0o077 and not (is_owned(home) or adopt_legacy_home(home))):
        who = "write into" if mode & 0o022 else "enter"
        return (f"agentmem's home {home} lets other users {who} it (mode {oct(mode)}) and agentmem did not create "
                f"it, so it does not change its mode: run `chmod 700 {home}`, or point AGENTMEM_HOME at a new folder "
                "(agentmem creates it private)")
    for path, own_name in _expected(settings):
        try:
            found = os.lstat(path)
        except OSError:
            continue
        if found.st_uid != uid:
            return (f"{path} belongs to another user (uid {found.st_uid}), in the place of a file agentmem writes "
                    f"itself: move it away (agentmem makes a new one), or if it is yours, `chown {uid} {path}`")
        if own_name and stat.S_ISLNK(found.st_mode):
            return (f"{path} is a symbolic link where agentmem keeps a file of its own, so writing it would write "
                    f"wherever it points: remove the link (agentmem makes a new file); to keep the data elsewhere, "
                    f"set AGENTMEM_HOME, AGENTMEM_DB or AGENTMEM_INDEX_DIR instead")
    return None


def _expected(settings: Any) -> list[tuple[Path, bool]]:
    """The files and folders agentmem opens as its own, and whether agentmem chose the name (in its home) rather
    than the user (AGENTMEM_DB, AGENTMEM_INDEX_DIR, which may be links the user made)."""
    home, database, index = settings.home, settings.database, settings.fulltext_dir
    logs = settings.log_path.parent
    paths = [(database, database.parent == home), (index, index.parent == home), (logs, True),
             (settings.log_path, True), (home / "spool", True), (home / MARKER, True)]
    for end in ("-wal", "-shm", ".audit-key", ".audit-head"):
        paths.append((Path(f"{database}{end}"), True))
    return paths


def adopt_legacy_home(path: Path) -> bool:
    """An unmarked folder made by an agentmem from before markers: it holds the database and one of
    fulltext/logs/spool, and nothing but the names agentmem writes in a home. Such a folder gets the marker
    now (and returns True); any other folder is left alone (False)."""
    try:
        names = set(os.listdir(path))
    except OSError:
        return False
    if "agentmem.db" not in names or not names & set(_HOME_ONLY) or not names <= HOME_NAMES:
        return False
    if not _made_before_stamps(path / "agentmem.db"):  # a folder of the user's that this agentmem filled
        return False
    try:
        write_marker(path)
    except OSError:
        return False
    return True


def _made_before_stamps(database: Path) -> bool:
    """Whether the database carries no SQLite application_id: made by an agentmem from before it stamped its
    databases (db/ownership.py). Read only; a file that cannot be read is not taken as one."""
    # the SQLite every connection of this process opens (db/connection.py): another copy of the library in the same
    # process takes the -shm file of a database in WAL mode as unused (a process's locks do not exclude each other)
    # and truncates it under the connections that have it mapped, whose next read dies of SIGBUS
    import sqlean as sqlite3  # not at the top: only an unmarked home comes here

    try:
        conn = sqlite3.connect(f"{database.absolute().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return False
    try:
        return conn.execute("PRAGMA application_id").fetchone()[0] == 0
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def _home_folder(path: Path) -> bool:
    """logs/ and spool/ inside a home agentmem owns are agentmem's too (they carry no marker of their own)."""
    return path.name in ("logs", "spool") and is_owned(path.parent)


def written_here(folder: Path, ours: Callable[[str], bool]) -> tuple[list[Path], list[str]]:
    """What agentmem wrote in `folder`, file by file, and the names of the rest (left alone).

    A file is agentmem's when `ours` accepts its name and it is a regular file of this user (not a link, not a
    folder); the marker is neither (it goes with its folder)."""
    mine: list[Path] = []
    others: list[str] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return [], []
    for entry in entries:
        if entry.name == MARKER:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if ours(entry.name) and stat.S_ISREG(st.st_mode) and st.st_uid == current_uid():
            mine.append(Path(entry.path))
        else:
            others.append(entry.name)
    return sorted(mine), sorted(others)


def current_uid() -> int:
    return os.geteuid() if hasattr(os, "geteuid") else 0


def make_private(path: Path) -> None:
    """Make a database file 0600 if it exists and is this user's (the database and its WAL/SHM companions)."""
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            st = candidate.stat()
            if stat.S_IMODE(st.st_mode) != 0o600 and st.st_uid == current_uid():
                os.chmod(candidate, 0o600)
        except FileNotFoundError:
            pass


def why_unwritable(path: Path) -> str | None:
    """None when this user may write `path` (an existing file or folder); else the cause, as a person would fix it:
    "is on a read-only filesystem" (no chmod helps: remount it, or use another place) or "is not writable by this
    user" (a permission)."""
    if os.access(path, os.W_OK):
        return None
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return "is on a read-only filesystem"
    except (OSError, AttributeError):  # no statvfs on Windows
        pass
    return "is not writable by this user"


def foreign_writer(st: os.stat_result) -> str | None:
    """Why a file with this stat could have been written by someone other than this user (None: it could not):
    it is owned by another user, or group or others may write it."""
    if os.name == "nt":  # no POSIX modes: Windows ACLs are not checked
        return None
    if st.st_uid != os.geteuid():
        return f"it is owned by another user (uid {st.st_uid})"
    if st.st_mode & 0o022:
        return f"group or others may write it (mode {oct(stat.S_IMODE(st.st_mode))})"
    return None


def check_private_file(path: Path) -> str | None:
    """None when `path` may be trusted (only this user can have written it), else what is wrong with it and how
    to fix it."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    why = foreign_writer(st)
    if why is None:
        return None
    chown = "" if st.st_uid == os.geteuid() else f" and `chown {os.geteuid()} {path}`"
    return (f"{path} is not private: {why}, so anyone could have put what it says there. Check its content, "
            f"then run `chmod 600 {path}`{chown}")


def listen_private_socket(path: Path, backlog: int) -> tuple[socket.socket, tuple[int, int]]:
    """A Unix socket listening at `path`, 0600 from the moment it exists (umask), and its (inode, device) to
    notice later that it was removed or replaced. A socket already there is unlinked first: the caller holds
    the home's lock, so it was left by a process that died."""
    import socket  # noqa: F811  (not at the top: hooks import this module and need no socket)

    try:
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    st = os.stat(path)
    listener.listen(backlog)
    listener.settimeout(1.0)
    return listener, (st.st_ino, st.st_dev)

