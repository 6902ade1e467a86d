"""scripts/bench_code_scan.py, run as a user runs it, on a few codes: both settings give the same ids."""

from __future__ import annotations

import json
import subprocess
import sys

from .conftest import REPO


def test_the_scan_benchmark_times_one_thread_against_the_split_and_checks_the_answers(tmp_path):
    out = tmp_path / "scan.json"
    done = subprocess.run([sys.executable, "scripts/bench_code_scan.py", "--codes", "300000", "--queries", "4",
                           "--json", str(out)], cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.read_text())
    assert len(report["cases"]) == 3
    for row in report["cases"].values():
        assert row["same ids"] == "4 of 4"
        timed = [value for value in row.values() if isinstance(value, dict)]
        assert len(timed) == 2 and all(value["p50_ms"] > 0 for value in timed)
