#!/bin/sh
# Run one agentmem hook: run-hook.sh CLIENT EVENT  (e.g. run-hook.sh claude-code SessionStart).
# The client's event JSON arrives on stdin and is passed through to `agentmem hook`.
# Finds agentmem via $AGENTMEM_BIN, then PATH, then ~/.local/bin (pipx / uv tool), then
# `python3 -m agentmem_mcp`. When none is there it drains stdin and exits 0: a missing memory
# must never block the agent.

client="${1:-}"
event="${2:-}"

give_up() {
    cat >/dev/null 2>&1
    # Cursor expects a JSON answer on stdout; an empty object means "carry on".
    [ "$client" = "cursor" ] && printf '{}\n'
    exit 0
}

[ -n "$client" ] && [ -n "$event" ] || give_up

if [ -n "${AGENTMEM_BIN:-}" ] && [ -x "$AGENTMEM_BIN" ]; then
    exec "$AGENTMEM_BIN" hook --client "$client" "$event"
fi
if found="$(command -v agentmem 2>/dev/null)" && [ -n "$found" ]; then
    exec "$found" hook --client "$client" "$event"
fi
if [ -n "${HOME:-}" ] && [ -x "$HOME/.local/bin/agentmem" ]; then
    exec "$HOME/.local/bin/agentmem" hook --client "$client" "$event"
fi
if command -v python3 >/dev/null 2>&1 && python3 -c \
    'import importlib.util, sys; sys.exit(importlib.util.find_spec("agentmem_mcp") is None)' \
    >/dev/null 2>&1; then
    exec python3 -m agentmem_mcp hook --client "$client" "$event"
fi
give_up
