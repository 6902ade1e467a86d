#!/bin/sh
# Run one agentmem hook: run-hook.sh CLIENT EVENT  (e.g. run-hook.sh claude-code SessionStart), for the Claude Code
# plugin (hooks.json) and Cursor (cursor-hooks.json). The client's event JSON arrives on stdin and goes on to
# `agentmem hook`, run from $AGENTMEM_BIN, else from the plugin's own environment (setup-env.sh), else the agentmem
# on the PATH or in ~/.local/bin (pipx, uv tool). With none of them it drains stdin, has setup-env.sh make that
# environment in the background (at a session's start; the user is told there), and exits 0: a missing memory
# must never block the agent. The check costs a few file tests: no process is started before agentmem's own.

client="${1:-}"
event="${2:-}"
case $0 in */*) agentmem_root=${0%/*}/.. ;; *) agentmem_root=.. ;; esac

if [ -z "$client" ] || [ -z "$event" ]; then
    cat >/dev/null 2>&1
    # Cursor expects a JSON answer on stdout; an empty object means "carry on".
    [ "$client" = "cursor" ] && printf '{}\n'
    exit 0
fi
if [ -n "${AGENTMEM_BIN:-}" ] && [ -x "$AGENTMEM_BIN" ]; then
    exec "$AGENTMEM_BIN" hook --client "$client" "$event"
fi
. "$agentmem_root/hooks/env.sh"
if [ -f "$agentmem_env/ready" ] && [ -x "$agentmem_env/venv/bin/python" ]; then
    # what `agentmem install` writes (install.HOOK_ENTRY): the hook without the console script's start-up
    exec "$agentmem_env/venv/bin/python" -c "import sys; sys.path[:1] = [p for p in sys.path[:1] if p]; \
from agentmem_mcp.capture.hook_client import run; run()" hook --client "$client" "$event"
fi
if found="$(command -v agentmem 2>/dev/null)" && [ -n "$found" ]; then
    exec "$found" hook --client "$client" "$event"
fi
if [ -x "${HOME:-/nonexistent}/.local/bin/agentmem" ]; then
    exec "$HOME/.local/bin/agentmem" hook --client "$client" "$event"
fi
cat >/dev/null 2>&1
exec /bin/sh "$agentmem_root/hooks/setup-env.sh" --hook "$client" "$event"
