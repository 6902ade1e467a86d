"""Who and where: the project identity shared across machines, this machine's id and the author's name.

A project is known on the team server by its normalised git remote URL, so that the ssh and https forms of
one repository (`git@github.com:o/r.git`, `https://github.com/o/r`) are one project on every machine. How a
directory resolves (the same rules as `project.project_for`, then the remote of that repository):

- a worktree resolves to its main repository, whose `config` holds the remotes: one identity for all worktrees;
- a submodule is a repository of its own (its `.git` file points into the superproject's `.git/modules/...`,
  whose `config` holds the submodule's remote): it has its own identity, not the superproject's;
- a monorepo subfolder is part of the repository holding it: one identity for the whole repository;
- a repository without a remote, or a folder outside git, falls back to `path:<absolute root>`: shared only
  with machines that keep it at the same path.

The remote used is `origin`, else the first remote in the config file. Pure file reads, no `git` process.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_SCP_LIKE = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>(?!/).+)$")  # git@host:owner/repo.git
_URL = re.compile(r"^(?P<scheme>[a-z][a-z0-9+.-]*)://(?:[^@/]*@)?(?P<host>[^/:]*)(?::\d+)?(?P<path>/.*)?$",
                  re.IGNORECASE)


def normalise_remote(url: str) -> str:
    """One spelling for every form of a remote URL: `host/path` in lower-case host, without scheme, user,
    password, port, trailing slash or `.git` (`git@github.com:o/r.git`, `ssh://git@github.com/o/r`,
    `https://user:token@github.com/o/r/` -> `github.com/o/r`). A local path (or `file://`) becomes
    `path:<absolute path>`. Raises ValueError for an empty URL."""
    text = url.strip()
    if not text:
        raise ValueError("empty remote URL")
    match = _URL.match(text)
    if match and match["scheme"].lower() != "file":
        host, path = match["host"].lower(), match["path"] or ""
    elif match:  # file:///srv/repo.git
        return "path:" + _clean_path(os.path.normpath(match["path"] or "/"))
    elif (scp := _SCP_LIKE.match(text)) and not os.path.isabs(text) and not text.startswith("."):
        host, path = scp["host"].lower(), "/" + scp["path"]
    else:
        return "path:" + _clean_path(os.path.abspath(os.path.expanduser(text)))
    return f"{host}/{_clean_path(path).strip('/')}"


def _clean_path(path: str) -> str:
    path = path.rstrip("/")
    return path[:-4] if path.endswith(".git") else path


def _git_dir(root: Path) -> Path | None:
    """The repository's own git directory (a submodule's or a worktree's `.git` file followed), or None."""
    marker = root / ".git"
    if marker.is_dir():
        return marker
    if marker.is_file():
        text = marker.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            gitdir = Path(text.split(":", 1)[1].strip())
            gitdir = gitdir if gitdir.is_absolute() else (root / gitdir).resolve()
            commondir = gitdir / "commondir"  # a worktree: the remotes live in the main repository's config
            if commondir.is_file():
                common = Path(commondir.read_text(encoding="utf-8", errors="replace").strip())
                return common if common.is_absolute() else (gitdir / common).resolve()
            return gitdir
    return None


_SECTION = re.compile(r'^\s*\[\s*remote\s+"(?P<name>[^"]+)"\s*\]\s*$')
_OTHER_SECTION = re.compile(r"^\s*\[")
_URL_LINE = re.compile(r"^\s*url\s*=\s*(?P<url>.+?)\s*$")


def remote_url(root: str | os.PathLike[str]) -> str | None:
    """The URL of the repository's `origin` remote (else its first remote) read from its config, or None."""
    gitdir = _git_dir(Path(root))
    if gitdir is None:
        return None
    try:
        lines = (gitdir / "config").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    remotes: dict[str, str] = {}
    current = None
    for line in lines:
        if section := _SECTION.match(line):
            current = section["name"]
        elif _OTHER_SECTION.match(line):
            current = None
        elif current and (found := _URL_LINE.match(line)) and current not in remotes:
            remotes[current] = found["url"].strip('"')
    return remotes.get("origin") or next(iter(remotes.values()), None)


def project_key(project: str | None) -> str | None:
    """The team identity of a local project id (its repository root, `project.project_for`): the normalised
    remote URL, else `path:<root>`; None for global memories (no project)."""
    if not project:
        return None
    url = remote_url(project)
    if url:
        try:
            return normalise_remote(url)
        except ValueError:
            pass
    return "path:" + os.path.abspath(project)


def default_author() -> str:
    """user@host, the author name when `team_author` is not set."""
    import getpass
    import socket

    try:
        user = getpass.getuser()
    except Exception:  # no user name in the environment or the password database
        user = "someone"
    return f"{user}@{socket.gethostname() or 'localhost'}"
