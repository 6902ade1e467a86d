"""agentmem's version: the installed package's metadata, else the version in the source tree."""

from __future__ import annotations


def package_version() -> str:
    """The installed distribution's version (`agentmem-mcp`), falling back to `agentmem_mcp.__version__`
    when the package runs from a source tree without metadata."""
    try:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("agentmem-mcp")
        except PackageNotFoundError:
            pass
    except ImportError:
        pass
    from . import __version__

    return __version__
