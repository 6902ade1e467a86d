"""What every script shares: this checkout's package first on the import path, the embedding model's folder, the
environment of the agentmem processes a run starts in its scratch home, timing figures (medians, percentiles,
CPU), the machine line of every report, JSON output and plain tables.

A script imports it before anything of agentmem_mcp, so that it measures this checkout, not an installed copy."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_MODEL = SHARED / "models" / "all-MiniLM-L6-v2-onnx-int8"

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # this checkout's package, not the installed one


# -- the model and the environment ---------------------------------------------------------------------

def default_model() -> Path:
    """The embedding model's folder, as an absolute path (processes a run starts work in other directories):
    AGENTMEM_EMBED_MODEL_PATH when set, else ../shared/models/... beside the repository. Scripts take it as the
    default of their --model / --model-path argument."""
    return Path(os.environ.get("AGENTMEM_EMBED_MODEL_PATH") or DEFAULT_MODEL).absolute()


def clean_env(*, drop: Sequence[str] = (), **extra: str) -> dict[str, str]:
    """This process's environment without any AGENTMEM_ variable (nor the names in `drop`), plus `extra`: what
    an agentmem process of a run sees, so that the user's own settings never leak into a measurement."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_") and k not in drop}
    env.update(extra)
    return env


def agentmem_bin() -> Path:
    """The `agentmem` command installed beside this Python."""
    script = Path(sys.executable).with_name("agentmem")
    if not script.exists():
        raise SystemExit(f"the agentmem command is not installed beside {sys.executable}: pip install -e .")
    return script


def base_env(home: Path, model_path: Path, **extra: str) -> dict[str, str]:
    """The environment of every agentmem process of a run: only this run's home and model."""
    return clean_env(AGENTMEM_HOME=str(home), AGENTMEM_EMBED_MODEL_PATH=str(model_path),
                     AGENTMEM_BIN=str(agentmem_bin()), **extra)


@contextlib.contextmanager
def scratch_dir(prefix: str = "agentmem-", keep: Path | None = None) -> Iterator[Path]:
    """A temporary directory for a run's homes, removed afterwards; `keep` (a directory given by the user)
    is used as it is and left in place."""
    if keep is not None:
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix=prefix, ignore_cleanup_errors=True) as tmp:
        yield Path(tmp)


# -- timing ----------------------------------------------------------------------------------------------

def percentile(values: Sequence[float], q: float) -> float:
    """The value at rank round(q * (n - 1)) of the sorted values (q from 0 to 1); 0.0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def rank_percentile(values: Sequence[float], q: float) -> float:
    """The value at rank int(q * n) of the sorted values (q from 0 to 1): the rule of the scan benchmarks."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(values: Sequence[float], digits: int = 2, with_max: bool = True) -> dict[str, float]:
    """n, median and p95 of timings in milliseconds (and their maximum), rounded to `digits`."""
    figures = {"n": len(values), "p50_ms": round(statistics.median(values), digits),
               "p95_ms": round(percentile(values, 0.95), digits)}
    if with_max:
        figures["max_ms"] = round(max(values), digits)
    return figures


def latency(values: Sequence[float]) -> dict[str, float]:
    """n, p50, p95 and maximum (nearest rank) of timings in milliseconds, to 0.1 ms."""
    return {"n": len(values), "p50_ms": round(percentile(values, 0.5), 1), "p95_ms": round(percentile(values, 0.95), 1),
            "max_ms": round(max(values), 1) if values else 0.0}


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def rss_mb(pid: int | str = "self") -> float:
    """A process's resident memory (VmRSS) in MB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1]) / 1024


# -- the machine -----------------------------------------------------------------------------------------

def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average() -> tuple[float, float, float] | None:
    return os.getloadavg() if hasattr(os, "getloadavg") else None


def describe_machine() -> str:
    """One line: cores, CPU model, Python, OS and the load average right now."""
    load = load_average()
    load_text = ", load average {:.2f} {:.2f} {:.2f}".format(*load) if load else ""
    return (f"{os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, "
            f"{platform.system()}{load_text}")


def utc_now() -> str:
    """The date and time of a report's header, e.g. 2026-12-03 15:51 UTC."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


# -- output ----------------------------------------------------------------------------------------------

def write_json(path: Path | None, payload: Any) -> None:
    """The report as indented JSON at `path` (its folder made), nothing when no path was given."""
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")


def fmt(value: Any, percent: bool = True) -> str:
    """A table cell: a share as a percentage with one decimal (or a float to three), '-' for none."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value * 100:.1f}" if percent else f"{value:.3f}"
    return str(value)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A plain-text table: the first column left-aligned, the others right-aligned, a rule under the header."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
        if n == 0:
            print("  ".join("-" * w for w in widths))
