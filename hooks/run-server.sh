#!/bin/sh
# Start the agentmem MCP server for the Claude Code plugin (.claude-plugin/plugin.json, `mcpServers`). Runs agentmem
# as run-hook.sh does: $AGENTMEM_BIN, the plugin's own environment, the PATH, ~/.local/bin. With none of them it
# makes the environment first (setup-env.sh --wait: progress on stderr, which Claude Code keeps in its MCP log);
# if that fails it says why and what to run in one line on stderr, and exits 1.

case $0 in */*) agentmem_root=${0%/*}/.. ;; *) agentmem_root=.. ;; esac

if [ -n "${AGENTMEM_BIN:-}" ] && [ -x "$AGENTMEM_BIN" ]; then
    exec "$AGENTMEM_BIN" serve "$@"
fi
. "$agentmem_root/hooks/env.sh"
if [ -f "$agentmem_env/ready" ] && [ -x "$agentmem_env/venv/bin/agentmem" ]; then
    exec "$agentmem_env/venv/bin/agentmem" serve "$@"
fi
if found="$(command -v agentmem 2>/dev/null)" && [ -n "$found" ]; then
    exec "$found" serve "$@"
fi
if [ -x "${HOME:-/nonexistent}/.local/bin/agentmem" ]; then
    exec "$HOME/.local/bin/agentmem" serve "$@"
fi
/bin/sh "$agentmem_root/hooks/setup-env.sh" --wait </dev/null >&2 || exit 1
exec "$agentmem_env/venv/bin/agentmem" serve "$@"
