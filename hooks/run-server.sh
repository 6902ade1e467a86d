#!/bin/sh
# Start the agentmem MCP server for a client that loads this repository as a plugin (.mcp.json).
# Finds agentmem as run-hook.sh does: $AGENTMEM_BIN, then PATH, then ~/.local/bin (pipx / uv tool), then
# `python3 -m agentmem_mcp`. When none is there it says so on stderr (the client shows it) and exits 1.

if [ -n "${AGENTMEM_BIN:-}" ] && [ -x "$AGENTMEM_BIN" ]; then
    exec "$AGENTMEM_BIN" serve "$@"
fi
if found="$(command -v agentmem 2>/dev/null)" && [ -n "$found" ]; then
    exec "$found" serve "$@"
fi
if [ -n "${HOME:-}" ] && [ -x "$HOME/.local/bin/agentmem" ]; then
    exec "$HOME/.local/bin/agentmem" serve "$@"
fi
if command -v python3 >/dev/null 2>&1 && python3 -c \
    'import importlib.util, sys; sys.exit(importlib.util.find_spec("agentmem_mcp") is None)' \
    >/dev/null 2>&1; then
    exec python3 -m agentmem_mcp serve "$@"
fi
echo "agentmem: the agentmem command was not found. Install it (pipx install /path/to/agentmem, or" \
     "pip install it into a venv) and set AGENTMEM_BIN to its path, or put it on the PATH." >&2
exit 1
