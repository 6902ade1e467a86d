"""The code style the project agreed on (pyproject's [tool.ruff]) is checked with the tests, so CI holds it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from .conftest import REPO


def test_ruff_is_clean():
    if importlib.util.find_spec("ruff") is None:
        if os.environ.get("CI"):
            pytest.fail("ruff is required in CI: it comes with the [test] extra")
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "agentmem_mcp", "hooks", "scripts",
                           "tests"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
