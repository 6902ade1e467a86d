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


def test_every_package_the_code_imports_is_declared():
    """A third-party module agentmem imports itself is a dependency in pyproject.toml (or its `llm` or `team`
    extra), not something another dependency happens to bring."""
    import ast
    import re
    from importlib.metadata import packages_distributions

    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    def canonical(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    declared = {canonical(re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0])
                for spec in [*project["dependencies"], *project["optional-dependencies"]["llm"],
                             *project["optional-dependencies"]["team"]]}
    imported: dict[str, str] = {}
    for path in (REPO / "agentmem_mcp").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else [])
            for name in names:
                imported.setdefault(name.split(".")[0], str(path.relative_to(REPO)))
    distributions = packages_distributions()
    undeclared = {}
    for module, where in imported.items():
        if module in sys.stdlib_module_names or module == "agentmem_mcp" or module.startswith("_"):
            continue  # the interpreter's own (e.g. _socket, _sha2), or agentmem itself
        names = {canonical(d) for d in distributions.get(module, [module])}
        if not names & declared:
            undeclared[module] = where
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"
