"""The files a memory is anchored to, checked against the working tree before it is shown.

A memory keeps the project files it names (relative to the project's root; absolute when they are in another
worktree) and the commit checked out where they were seen (`head_commit`, memories.anchor_commit).
`missing_files` tells which of them are gone from the working tree the agent is in, so a memory about deleted
or renamed code is marked stale or left out instead of sending the agent to it. Pure file lookups (a stat per
file, a few small reads for the commit), cheap enough for the hooks.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from ..project import worktree_root


def relative(path: str, *roots: str | None) -> str:
    """A path as the project sees it: relative to the first root (working tree, project root) holding it, or
    to the worktree it lies in."""
    for root in roots:
        if root and path.startswith(root.rstrip("/") + "/"):
            return path[len(root.rstrip("/")) + 1:]
    if path.startswith("/"):
        base = worktree_root(os.path.dirname(path))
        if base and base != "/" and path.startswith(base + "/"):
            return path[len(base) + 1:]
    return path


_SHA = re.compile(r"^[0-9a-f]{40}$")


def head_commit(tree: str | None) -> str | None:
    """The commit checked out in the working tree `tree` (its full hash), read from its git files (a worktree's
    `.git` file, loose and packed refs); None when it is not a git checkout or has no commit yet."""
    if not tree:
        return None
    try:
        marker = os.path.join(tree, ".git")
        git_dir = marker
        if os.path.isfile(marker):
            with open(marker, encoding="utf-8") as handle:
                line = handle.read(4096).strip()
            if not line.startswith("gitdir:"):
                return None
            git_dir = os.path.join(tree, line.removeprefix("gitdir:").strip())
        with open(os.path.join(git_dir, "HEAD"), encoding="utf-8") as handle:
            head = handle.read(4096).strip()
        if _SHA.match(head):
            return head
        ref = head.removeprefix("ref:").strip()
        common = git_dir
        if os.path.isfile(os.path.join(git_dir, "commondir")):
            with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as handle:
                common = os.path.join(git_dir, handle.read(4096).strip())
        for base in dict.fromkeys((git_dir, common)):
            loose = os.path.join(base, ref)
            if os.path.isfile(loose):
                with open(loose, encoding="utf-8") as handle:
                    sha = handle.read(100).strip()
                return sha if _SHA.match(sha) else None
        with open(os.path.join(common, "packed-refs"), encoding="utf-8") as handle:
            for line in handle:
                sha, _, name = line.strip().partition(" ")
                if name == ref and _SHA.match(sha):
                    return sha
    except (OSError, ValueError):
        return None
    return None


def stale_note(gone: list[str], commit: str | None, limit: int = 3) -> str:
    """"stale: a.py no longer exists (named at 1a2b3c4)": what a memory whose files are gone is marked with."""
    if not gone:
        return ""
    at = f" (named at {commit[:7]})" if commit else ""
    return f"stale: {', '.join(gone[:limit])} no longer exist{'s' if len(gone) == 1 else ''}{at}"


def missing_files(row: Any, tree: str | None, project: str | None = None) -> list[str]:
    """The files a memory names that are gone, for an agent working in `tree` of `project`.

    A relative path (to the project's root) is there when it exists in the working tree or the project's root.
    An absolute path (a file of another worktree, or outside the project) is gone when it does not exist while
    its worktree still does; when that worktree was removed, the file counts as there if the working tree has
    it at the same place inside it.
    """
    roots = [r.rstrip("/") for r in dict.fromkeys((tree, project)) if r]
    if not roots or not row["files"]:
        return []
    try:
        files = json.loads(row["files"])
    except ValueError:
        return []
    gone = []
    for path in files if isinstance(files, list) else []:
        if not isinstance(path, str) or not path or "://" in path or path.startswith("~"):
            continue
        if not path.startswith("/"):
            if not any(os.path.exists(f"{root}/{path}") for root in roots):
                gone.append(path)
        elif not os.path.exists(path) and not _elsewhere(path, roots):
            gone.append(relative(path, tree, project))
    return gone


def _elsewhere(path: str, roots: list[str]) -> bool:
    """Whether a missing absolute path still lives on in a working tree: its own worktree is gone and the
    working tree holds the same relative path."""
    if any(path.startswith(root + "/") for root in roots):
        return False
    parts = path.strip("/").split("/")
    for depth in range(len(parts) - 1, 0, -1):
        if os.path.isdir("/" + "/".join(parts[:depth])):
            base = "/" + "/".join(parts[:depth])
            if os.path.exists(base + "/.git") or worktree_of(base):
                return False  # its worktree is still there: the file was deleted in it
            break
    return any(os.path.exists(f"{root}/{'/'.join(parts[-k:])}") for root in roots for k in range(2, min(6, len(parts))))


def worktree_of(directory: str) -> bool:
    return worktree_root(directory) is not None


class FreshRows:
    """Rows whose files are all still there, checked lazily (a briefing shows a few dozen of hundreds)."""

    def __init__(self, rows: list[Any], tree: str | None, project: str | None) -> None:
        self.rows, self.tree, self.project = rows, tree, project
        self.verdicts: dict[str, bool] = {}

    def ok(self, row: Any) -> bool:
        if row["id"] not in self.verdicts:
            self.verdicts[row["id"]] = not missing_files(row, self.tree, self.project)
        return self.verdicts[row["id"]]

    def where(self, keep: Any, limit: int, order: Any = None) -> list[Any]:
        """Up to `limit` rows that `keep` accepts and whose files are all there, in `order` (default: as given)."""
        rows = sorted(self.rows, key=order) if order else self.rows
        out = []
        for row in rows:
            if len(out) >= limit:
                break
            if keep(row) and self.ok(row):
                out.append(row)
        return out
