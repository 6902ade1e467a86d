"""What machine a benchmark ran on, for the headers of every script's report."""

from __future__ import annotations

import os
import platform
from pathlib import Path


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
