"""The load and fault scripts at a reduced size, run as a user runs them (full size: docs/reliability.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO


def run_script(name: str, model_path: Path, out: Path, *args: str) -> dict:
    done = subprocess.run([sys.executable, f"scripts/{name}", "--model-path", str(model_path), "--json", str(out),
                           *args], cwd=REPO, capture_output=True, text=True, timeout=540, check=False)
    assert done.returncode == 0, f"{name} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return json.loads(out.read_text())


@pytest.mark.slow
@pytest.mark.long(35)
def test_stress_loses_nothing_and_surfaces_no_error(model_path, tmp_path):
    report = run_script("stress.py", model_path, tmp_path / "stress.json", "--events", "240")
    checks = report["checks"]
    assert checks["events"]["sent"] == 240 and checks["events"]["lost"] == checks["events"]["duplicated"] == 0
    assert checks["worker"]["missing"] == checks["worker"]["twice"] == 0
    assert checks["saves"]["saved"] > 0 and not checks["saves"]["bad"]
    assert checks["hooks"]["problems"] == 0 and checks["tools"]["errors"] == 0
    assert not checks["network"]["listeners"] and checks["final"]["audit_ok"] and not checks["final"]["mode_problems"]
    assert report["hook_post_tool_use"]["n"] == 240 and report["throughput"]["events_per_s"] > 0


# The fault scenarios in three runs of the script (~45-55 s each here), so that the test processes share them.
FAULT_GROUPS = (("kill9-save", "kill9-index-commit", "kill9-worker-batch", "stale-lease"),
                ("index-deleted", "segment-corrupted", "term-dict-corrupted", "disk-full"),
                ("db-locked", "kill9-shared-save"))


def test_the_fault_groups_hold_every_scenario_once():
    sys.path.insert(0, str(REPO / "scripts"))
    import faults

    assert sorted(name for group in FAULT_GROUPS for name in group) == sorted(faults.SCENARIOS)


@pytest.mark.slow
@pytest.mark.long(50)
@pytest.mark.parametrize("group", FAULT_GROUPS, ids=lambda group: group[0])
def test_every_fault_scenario_recovers(model_path, tmp_path, group):
    report = run_script("faults.py", model_path, tmp_path / "faults.json", "--observations", "30", "--only", *group)
    status = {r["scenario"]: r["status"] for r in report["scenarios"]}
    assert sorted(status) == sorted(group)
    allowed_skips = set() if os.geteuid() == 0 else {"disk-full"}  # a tmpfs needs root to mount
    assert {name for name, s in status.items() if s != "PASS"} <= allowed_skips, report
    assert all(r["recovery_s"] is not None for r in report["scenarios"] if r["status"] == "PASS")
