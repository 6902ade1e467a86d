"""The team server's connection string: from `team_url` (or AGENTMEM_TEAM_URL) and, optionally, a password
file that only this user can read (0600). A password is never shown: `mask_url` and `mask` hide it in every
message, log line, doctor check and viewer page. TLS and other libpq options ride in the URL's query
(`?sslmode=verify-full&sslrootcert=...`) and are passed through unchanged."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from ..models import AgentmemError

_PASSWORD_PARAM = re.compile(r"(?i)(password=)[^&\s]*")


class TeamConfigError(AgentmemError):
    """The team settings cannot be used (a bad URL, a password file others can read)."""


def mask_url(url: str) -> str:
    """The URL with its password (in the authority or a `password=` parameter) replaced by `***`."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(an unreadable URL)"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        netloc = f"{userinfo}@{hostport}"
    query = _PASSWORD_PARAM.sub(r"\1***", parts.query)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def url_password(url: str) -> str | None:
    """The password the URL carries, if any (to be hidden from messages)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.password:
        return unquote(parts.password)
    found = _PASSWORD_PARAM.search(parts.query)
    return unquote(found.group(0).split("=", 1)[1]) if found else None


def read_password_file(path: Path) -> str:
    """The first line of a password file that only this user can read or write; TeamConfigError otherwise."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise TeamConfigError(f"team_password_file {path}: cannot read it ({exc.strerror})") from None
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO) or st.st_uid != os.geteuid():
        raise TeamConfigError(f"team_password_file {path} is readable or writable by others: run `chmod 600 "
                              f"{path}` (agentmem reads a password only from a file private to you)")
    return path.read_text(encoding="utf-8").splitlines()[0].strip() if st.st_size else ""


class TeamCredentials:
    """A resolved connection: the conninfo for psycopg, the URL as it may be shown, and the secrets to hide."""

    def __init__(self, url: str, password_file: Path | None = None) -> None:
        url = url.strip()
        if not url.startswith(("postgresql://", "postgres://")):
            raise TeamConfigError("team_url must be a postgresql:// URL")
        self.url = url
        self.shown = mask_url(url)
        self.password = read_password_file(password_file) if password_file else None
        self._secrets = [s for s in (self.password, url_password(url)) if s]

    def conninfo(self, **options: object) -> str:
        """The connection string with the password file's password and `options` added (psycopg syntax)."""
        from psycopg.conninfo import make_conninfo

        extra = {k: v for k, v in options.items() if v is not None}
        if self.password is not None:
            extra["password"] = self.password
        return make_conninfo(self.url, **extra)

    def mask(self, text: str) -> str:
        """`text` (an error message) with every secret of this connection hidden."""
        text = text.replace(self.url, self.shown)
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def endpoint(self) -> tuple[str, str | int] | None:
        """(host, port) of the first host of the URL, or (socket path, '') for a Unix socket; None when the
        URL names no host (libpq's default socket)."""
        parts = urlsplit(self.url)
        query = dict(p.split("=", 1) for p in parts.query.split("&") if "=" in p)
        host = unquote(query.get("host", "")) or (parts.hostname or "")
        port = query.get("port") or (str(parts.port) if _has_port(parts) else "5432")
        host, port = host.split(",")[0], port.split(",")[0]
        if not host:
            return None
        if host.startswith("/"):
            return (f"{host}/.s.PGSQL.{port}", "")
        return (host, int(port))


def _has_port(parts) -> bool:
    try:
        return parts.port is not None
    except ValueError:
        return False
