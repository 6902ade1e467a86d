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
    if stat.S_IMODE(path.stat().st_mode) != 0o700:
        os.chmod(path, 0o700)
    return True


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
    try:
        write_marker(path)
    except OSError:
        return False
    return True


def _home_folder(path: Path) -> bool:
    """logs/ and spool/ inside a home agentmem owns are agentmem's too (they carry no marker of their own)."""
    return path.name in ("logs", "spool") and is_owned(path.parent)


def make_private(path: Path) -> None:
    """Make a database file 0600 if it exists (the database and its WAL/SHM companions)."""
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            if stat.S_IMODE(candidate.stat().st_mode) != 0o600:
                os.chmod(candidate, 0o600)
        except FileNotFoundError:
            pass


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

