#!/bin/sh
# agentmem's own Python environment for the Claude Code plugin, made with uv from this checkout: once per agentmem
# version, in ${XDG_DATA_HOME:-~/.local/share}/agentmem-env/<version>/venv (docs/install.md, "The Claude Code plugin").
#
#   sh hooks/setup-env.sh          make it now and wait, showing uv's output (what a failure message says to run)
#   sh hooks/setup-env.sh --wait   the same for run-server.sh: progress and the outcome on stderr, exit 1 on failure
#   sh hooks/setup-env.sh --hook CLIENT EVENT
#                                  for run-hook.sh: at a session's start, start making it in the background (unless
#                                  that runs already) and answer the hook with a message telling the user so, or why
#                                  the last try failed; at any other event, only the answer the client expects
#
# One setup runs at a time, in the background (the folder `lock` holds its pid), its output in `setup.log`. It ends
# with the file `ready`, or with `failed`: one line saying why and what to run, kept until a try succeeds. Each
# session's start (and each start of the MCP server) tries again.
#
# uv comes from the PATH, ~/.local/bin or ~/.cargo/bin (where uv's own installer puts it); without one, agentmem
# installs uv for itself alone into agentmem-env/uv (`python3 -m venv`, then pip). Never `pip install --user uv`:
# most systems' Pythons refuse it (PEP 668, "externally-managed-environment"), and it would change the user's Python.

set -u
mode=${1:-}
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
agentmem_root=$(cd "$here/.." && pwd) || exit 1
. "$agentmem_root/hooks/env.sh"
lock=$agentmem_env/lock
log=$agentmem_env/setup.log
uv_help="https://docs.astral.sh/uv/getting-started/installation/"
retry="run: sh $agentmem_root/hooks/setup-env.sh"
lacking=
for tool in cat cp cut date find grep head mkdir mktemp rm sed sleep tail tr wc; do
    command -v "$tool" >/dev/null 2>&1 || lacking="$lacking $tool"
done
[ -z "$lacking" ] || lacking="agentmem: cannot set up its environment: the PATH ($PATH) lacks the command(s)$lacking"

running() {  # a setup holds the lock; a lock whose process is gone is removed
    [ -d "$lock" ] || return 1
    pid=$(cat "$lock/pid" 2>/dev/null) || pid=
    if [ -n "$pid" ]; then
        kill -0 "$pid" 2>/dev/null && return 0
    elif [ -z "$(find "$lock" -maxdepth 0 -mmin +1 2>/dev/null)" ]; then
        return 0  # taken a moment ago: the setup writes its pid as it starts
    fi
    rm -rf "$lock"
    return 1
}

start() {  # start a setup in the background, unless one runs; false when the folder cannot be made
    mkdir -p "$agentmem_env" 2>/dev/null || return 1
    running && return 0
    mkdir "$lock" 2>/dev/null || return 0  # another process took it just now
    if command -v setsid >/dev/null 2>&1; then  # its own session: it outlives a client that stops the hook
        setsid sh "$0" --run </dev/null >"$log" 2>&1 &
    else
        nohup sh "$0" --run </dev/null >"$log" 2>&1 &
    fi
    return 0
}

cannot_create() {
    printf 'agentmem: cannot create %s for its environment: make %s writable (or set XDG_DATA_HOME), then %s\n' \
        "$agentmem_env" "$agentmem_envs" "$retry"
}

last_error() {  # the line of the log that says what went wrong (uv's deepest cause), shortened
    line=$(grep -E '^[[:space:]]*(error:|cause:|×|╰─▶)' "$log" 2>/dev/null | tail -n 1)
    [ -n "$line" ] || line=$(grep -E 'error|[Ff]ailed|[Nn]o such|[Nn]ot found' "$log" 2>/dev/null | tail -n 1)
    [ -n "$line" ] || line=$(grep -v '^[[:space:]]*$' "$log" 2>/dev/null | tail -n 1)
    printf '%s' "$line" | tr -d '\r' | sed 's/^[[:space:]]*//' | cut -c1-200
}

# --- the setup itself (--run, in the background, output in setup.log) -------------------------------------------

fail() {  # what went wrong and what to run, in one line; the next try starts over
    printf 'agentmem: cannot set up its environment in %s: %s\n' "$agentmem_env" "$*" >"$agentmem_env/failed"
    cat "$agentmem_env/failed"
    exit 1
}

find_uv() {
    for uv in "$(command -v uv 2>/dev/null)" "${HOME:-/nonexistent}/.local/bin/uv" "${HOME:-/nonexistent}/.cargo/bin/uv" \
              "$agentmem_envs/uv/bin/uv"; do
        if [ -n "$uv" ] && [ -x "$uv" ]; then
            printf '%s\n' "$uv"
            return 0
        fi
    done
    return 1
}

install_uv() {  # uv for agentmem alone, in agentmem-env/uv
    python=$(command -v python3 2>/dev/null) || { echo "python3: not found"; return 1; }
    echo "uv not found: installing it for agentmem alone into $agentmem_envs/uv ($python -m venv, then pip)"
    rm -rf "$agentmem_envs/uv"
    "$python" -m venv "$agentmem_envs/uv" &&
        "$agentmem_envs/uv/bin/python" -m pip install --quiet --disable-pip-version-check uv &&
        [ -x "$agentmem_envs/uv/bin/uv" ]
}

run() {
    trap 'rm -rf "$lock"' EXIT
    trap 'exit 1' HUP INT TERM
    printf '%s\n' "$$" >"$lock/pid"
    [ -f "$agentmem_envs/.agentmem-owned" ] ||
        printf 'This folder was created by agentmem, which may change or delete what it created here.\n' \
            >"$agentmem_envs/.agentmem-owned"
    echo "agentmem $agentmem_version: setting up $agentmem_env/venv from $agentmem_root ($(date))"
    rm -f "$agentmem_env/ready"
    uv=$(find_uv) || { install_uv && uv=$agentmem_envs/uv/bin/uv; } ||
        fail "uv is not installed, and python3 could not install it for agentmem ($(last_error)). Install uv" \
             "($uv_help) and start a new session, or run: pipx install $agentmem_root"
    echo "uv: $uv ($("$uv" --version 2>&1))"
    rm -rf "$agentmem_env/venv"
    "$uv" venv --python '>=3.10' "$agentmem_env/venv" ||
        fail "uv found no Python 3.10 or newer and could not get one ($(last_error)). Install Python 3.10+, then $retry"
    src=$(mktemp -d "${TMPDIR:-/tmp}/agentmem-src.XXXXXX") || fail "cannot make a temporary folder"
    # a copy: building in the plugin's folder would write build/ and *.egg-info/ there
    if cp -R "$agentmem_root/pyproject.toml" "$agentmem_root/README.md" "$agentmem_root/LICENSE" \
            "$agentmem_root/agentmem_mcp" "$src/"; then
        "$uv" pip install --python "$agentmem_env/venv/bin/python" "$src"
        installed=$?
    else
        installed=copy
    fi
    rm -rf "$src"
    [ "$installed" != copy ] || fail "cannot copy agentmem's sources from $agentmem_root ($(last_error))"
    [ "$installed" = 0 ] || fail "uv could not install agentmem ($(last_error)). Check the network or the package" \
                                 "index (uv reads UV_INDEX_URL, not pip.conf), then $retry"
    "$agentmem_env/venv/bin/agentmem" --version ||
        fail "the new environment does not run agentmem ($(last_error)); $retry"
    printf '%s\n' "$agentmem_env/venv/bin/agentmem" >"$agentmem_env/ready"
    rm -f "$agentmem_env/failed"
    echo "agentmem: ready ($(date))"
}

# --- what the wrappers and the user call ----------------------------------------------------------------------

wait_done() {  # until no setup runs; true when the environment is ready. show=1: print the log as it grows
    shown=0
    while running; do
        [ "${show:-}" = 1 ] && shown=$(show_log "$shown")
        sleep 1
    done
    [ "${show:-}" = 1 ] && show_log "$shown" >/dev/null
    [ -f "$agentmem_env/ready" ]
}

show_log() {  # print the log's lines after the first $1 (to stderr); echo how many there are now
    total=$(wc -l <"$log" 2>/dev/null | tr -d ' ') || total=0
    [ "${total:-0}" -gt "$1" ] && tail -n "+$(($1 + 1))" "$log" | head -n "$((total - $1))" >&2
    echo "${total:-0}"
}

json_string() {  # $1 (one line) as a JSON string, with builtins only
    rest=$1 out=
    while [ -n "$rest" ]; do
        c=${rest%"${rest#?}"}
        rest=${rest#?}
        case $c in
            '\' | '"') out="$out\\$c" ;;
            *) out="$out$c" ;;
        esac
    done
    printf '"%s"' "$out"
}

hook_answer() {  # the answer a hook prints while agentmem is not set up: $1 client, $2 event, $3 message or ""
    if [ "$1" = cursor ]; then
        case $2 in
            beforeSubmitPrompt) printf '{"continue": true}\n' ;;
            sessionStart) if [ -n "$3" ]; then printf '{"additional_context": %s}\n' "$(json_string "$3")"
                          else printf '{}\n'; fi ;;
            *) printf '{}\n' ;;
        esac
    elif [ -n "$3" ]; then
        printf '{"systemMessage": %s}\n' "$(json_string "$3")"
    fi
}

case $mode in
    --run)
        run
        ;;
    --hook)
        client=${2:-} event=${3:-} message=
        case "$client:$event" in
            claude-code:SessionStart | codex:SessionStart | gemini:SessionStart | cursor:sessionStart)
                if [ -n "$lacking" ]; then
                    message=$lacking
                elif [ ! -f "$agentmem_env/ready" ]; then
                    if ! start; then
                        message=$(cannot_create)
                    else
                        n=0
                        while running && [ "$n" -lt 10 ]; do  # a failure that comes at once (no uv) is told now
                            sleep 0.1
                            n=$((n + 1))
                        done
                        if [ -f "$agentmem_env/failed" ]; then
                            message=$(cat "$agentmem_env/failed")
                        elif [ ! -f "$agentmem_env/ready" ]; then
                            message="agentmem: setting up its environment with uv in $agentmem_env (first use of"
                            message="$message agentmem $agentmem_version, about a minute; log: $log). Memory capture"
                            message="$message starts when it is ready; the memory tools may need a new session."
                        fi
                    fi
                fi
                ;;
        esac
        hook_answer "$client" "$event" "$message"
        exit 0
        ;;
    --wait | "")
        if [ -f "$agentmem_env/ready" ] && [ -x "$agentmem_env/venv/bin/agentmem" ]; then
            [ -z "$mode" ] && echo "agentmem's environment is ready: $agentmem_env/venv (delete it to make it again)"
            exit 0
        fi
        [ -z "$lacking" ] || { echo "$lacking" >&2; exit 1; }
        start || { cannot_create >&2; exit 1; }
        echo "agentmem: setting up its environment with uv in $agentmem_env (first start of agentmem" \
             "$agentmem_version; about a minute) ..." >&2
        show=; [ -z "$mode" ] && show=1
        if wait_done; then
            echo "agentmem: environment ready" >&2
            exit 0
        fi
        if [ -f "$agentmem_env/failed" ]; then
            cat "$agentmem_env/failed" >&2
        else
            echo "agentmem: the setup stopped before it finished (see $log); $retry" >&2
        fi
        exit 1
        ;;
    *)
        echo "usage: sh $0 [--wait | --hook CLIENT EVENT]" >&2
        exit 2
        ;;
esac
