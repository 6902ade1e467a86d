"""The `agentmem` command (app.py): its commands, what they share, what they print, and the user-only gate.

`main` forwards to `app.main`, importing nothing until it is called: the console script of an install made before
the command moved here reads `from agentmem_mcp.cli import main`."""


def main(argv: list[str] | None = None) -> int:
    """`agentmem_mcp.cli.app.main`, for console scripts that name `agentmem_mcp.cli:main`."""
    from .app import main as run

    return run(argv)
