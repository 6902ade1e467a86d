#!/usr/bin/env bash
# A new user's first hour, as a script (issue 21): in a fresh temporary HOME and a fresh clone, follow the
# README's set-up commands as written, install into Claude Code and Cursor, run each command the README
# shows once, provoke the mistakes a newcomer makes, and fail on any traceback, any stderr line nobody
# expects, or a README command that does not work. Then the other install routes (issue 37), each in a clean
# HOME: the wheel through pipx and through `uv tool`, and the Claude Code plugin through the real `claude` CLI
# with agentmem nowhere on the PATH; and the failures a hook must not keep to itself (a corrupt config.toml).
# What those routes need (pipx, uv, build, the claude CLI) is installed from PyPI and npm into the work folder.
#
# Usage: scripts/newcomer.sh            (from a checkout; uses ../shared/models when it is there, else
#                                        HF_HUB_OFFLINE=1 so that nothing reaches a model hub)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/agentmem-newcomer.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"' EXIT
failures=0

export HOME="$work/home" XDG_CACHE_HOME="$work/home/.cache" XDG_DATA_HOME="$work/home/.local/share" \
  XDG_CONFIG_HOME="$work/home/.config"
export PIP_DISABLE_PIP_VERSION_CHECK=1
mkdir -p "$HOME"
base_path=$PATH  # before the checkout's venv joins it: the plugin route runs without any agentmem on the PATH
# uv uses its own certificate roots: give it the system's, as pip and npm are on this machine (a TLS proxy's CA)
[ -n "${SSL_CERT_FILE:-}" ] || [ ! -f /etc/ssl/certs/ca-certificates.crt ] ||
  export SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
unset AGENTMEM_HOME AGENTMEM_CONFIG AGENTMEM_DB AGENTMEM_INDEX_DIR AGENTMEM_LLM
model="$repo/../shared/models/all-MiniLM-L6-v2-onnx-int8"
if [ -d "$model" ]; then
  export AGENTMEM_EMBED_MODEL_PATH=$(cd "$model" && pwd)
else
  export HF_HUB_OFFLINE=1
fi

# Lines a command may print on stderr: progress (bars on a terminal, plain lines here), export's count, search notes.
expected_stderr='^((bm25|vectors|pieces|words|sessions)( +\[[#.]+\] |: )[0-9,]+/[0-9,]+|exported [0-9]+ records|note: .*)$'

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# check NAME EXPECTED_RC CMD...: run CMD; its exit code must be EXPECTED_RC (any: "-"), no traceback, and every
# stderr line expected.
check() {
  local name=$1 want=$2; shift 2
  local out="$work/out" err="$work/err" rc=0
  "$@" >"$out" 2>"$err" </dev/null || rc=$?
  tr '\r' '\n' <"$err" | sed '/^$/d' >"$err.lines"
  if [ "$want" != "-" ] && [ "$rc" != "$want" ]; then
    fail "$name: exit $rc, expected $want"; sed 's/^/    /' "$err" >&2
  elif grep -q "Traceback" "$err" "$out"; then
    fail "$name: a traceback"; sed 's/^/    /' "$err" >&2
  elif grep -Evq "$expected_stderr" "$err.lines"; then
    fail "$name: unexpected stderr"; grep -Ev "$expected_stderr" "$err.lines" | sed 's/^/    /' >&2
  else
    echo "ok   $name"
  fi
}

# mistake NAME WORDS CMD...: CMD must fail with one line "agentmem: ..." containing WORDS, and no traceback.
mistake() {
  local name=$1 words=$2; shift 2
  local err="$work/err" rc=0
  "$@" >/dev/null 2>"$err" </dev/null || rc=$?
  if [ "$rc" = 0 ]; then fail "$name: succeeded"; return; fi
  if grep -q Traceback "$err"; then fail "$name: a traceback"; sed 's/^/    /' "$err" >&2; return; fi
  if [ "$(wc -l <"$err")" != 1 ] || ! grep -q "^agentmem: .*$words" "$err"; then
    fail "$name: expected one line with '$words'"; sed 's/^/    /' "$err" >&2; return
  fi
  echo "ok   $name: $(cut -c1-100 "$err")"
}

# ui_smoke: `agentmem ui --no-browser` prints its address with the run's token; that page answers 200 (the
# token's cookie followed), then the viewer is stopped.
ui_smoke() {
  local log="$work/ui.log" url="" rc=1 i
  agentmem ui --no-browser >"$log" 2>&1 </dev/null &
  local pid=$!
  for i in $(seq 1 150); do
    url=$(grep -oE 'http://127\.0\.0\.1:[0-9]+/[^ ]*token=[^ ]*' "$log" | head -1 || true)
    [ -n "$url" ] && break
    sleep 0.2
  done
  if [ -n "$url" ] && python3 - "$url" <<'PY'
import http.cookiejar, sys, urllib.request
opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
with opener.open(sys.argv[1], timeout=20) as answer:
    sys.exit(0 if answer.status == 200 and b"agentmem" in answer.read().lower() else 1)
PY
  then rc=0; else sed 's/^/    /' "$log" >&2; fi
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  return $rc
}

echo "== a fresh clone in $work"
git clone -q "$repo" "$work/agentmem"
git -C "$work/agentmem" checkout -q "$(git -C "$repo" rev-parse HEAD)"  # this commit (CI may be detached)
cd "$work/agentmem"

echo "== the README's set-up, literally"
setup=$(grep -m1 -E '^python3 -m venv \.venv && \.venv/bin/pip install \. && \.venv/bin/agentmem serve$' README.md) \
  || { fail "the README's set-up command is gone"; exit 1; }
check "README: $setup" 0 bash -c "$setup"
install_cc=$(grep -m1 -E '^\.venv/bin/agentmem install claude-code' README.md | sed 's/ *#.*//')
install_cursor=$(grep -m1 -E '^\.venv/bin/agentmem install cursor' README.md | sed 's/ *#.*//')
[ -n "$install_cc" ] && [ -n "$install_cursor" ] || fail "the README's install commands are gone"
check "README: $install_cc" 0 bash -c "$install_cc"
check "README: $install_cursor" 0 bash -c "$install_cursor"
grep -q '"agentmem"' "$HOME/.claude.json" || fail "claude-code: no MCP server in ~/.claude.json"
grep -q 'hook --client claude-code' "$HOME/.claude/settings.json" || fail "claude-code: no hooks"
grep -q 'hook --client cursor' "$HOME/.cursor/hooks.json" || fail "cursor: no hooks"
check "install twice changes nothing" 0 .venv/bin/agentmem install claude-code

echo "== every command of the README, once (in a project)"
export PATH="$work/agentmem/.venv/bin:$PATH"
project="$work/project" && mkdir -p "$project" && git -C "$project" init -q && cd "$project"
check "save" 0 agentmem save "use pnpm, not npm: the lockfile is pnpm-lock.yaml" --type decision
check "save --global" 0 agentmem save "the user prefers short answers without preamble" --global --i-am-the-user
check "search" 0 agentmem search "how do we install dependencies"
check "search --json --all-projects --tier working" 0 agentmem search "install" --json --all-projects --tier working
id=$(agentmem search "pnpm lockfile" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["hits"][0]["id"])')
check "get --history" 0 agentmem get "$id" --history
check "forget --type --older-than-days (preview)" 0 agentmem forget --type bug --older-than-days 90
check "forget --strategy composite --dry-run" 0 agentmem forget --strategy composite --dry-run
check "list" 0 agentmem list --type decision --limit 20
check "stats" 0 agentmem stats
check "export" 0 agentmem export --out mem.jsonl
check "import" 0 agentmem import mem.jsonl --i-am-the-user
check "reindex" 0 agentmem reindex
check "doctor" - agentmem doctor
check "audit --verify" 0 agentmem audit --verify
mistake "pin from an agent's shell" "for the user to run" env CLAUDECODE=1 agentmem pin "$id"
check "pin" 0 agentmem pin "$id" --i-am-the-user
check "quarantine list" 0 agentmem quarantine list
check "ui --no-browser (its page answers, then it stops)" 0 ui_smoke
check "worker --once" 0 agentmem worker --once
check "hook (a real SessionStart)" 0 bash -c \
  "echo '{\"session_id\":\"s1\",\"cwd\":\"$project\",\"hook_event_name\":\"SessionStart\",\"source\":\"startup\"}' \
   | agentmem hook SessionStart"
mistake "import-history without a Claude Code history" "no Claude Code history" agentmem import-history claude-code
mkdir -p "$HOME/.claude/projects"
check "import-history (an empty history)" 0 agentmem import-history claude-code
mistake "import-history cursor without Cursor" "no Cursor history" agentmem import-history cursor
mkdir -p "$XDG_CONFIG_HOME/Cursor/User/globalStorage"
check "import-history cursor (no conversations)" 0 agentmem import-history cursor
check "forget by id" 0 agentmem forget "$id" --i-am-the-user
check "--version" 0 agentmem --version
check "purge --project --yes" 0 agentmem purge --project --yes --i-am-the-user
check "serve over a closed stdin" 0 agentmem serve

echo "== the mistakes a newcomer makes"
check "bare agentmem prints help" 0 agentmem
check "hook --help prints usage" 0 agentmem hook --help
: >"$work/home-file"
mistake "AGENTMEM_HOME is a file: stats" "is a file" env AGENTMEM_HOME="$work/home-file" agentmem stats
mistake "AGENTMEM_HOME is a file: serve" "cannot serve" env AGENTMEM_HOME="$work/home-file" agentmem serve
mistake "import of a missing file" "no such file" agentmem import "$work/nowhere.jsonl"
mistake "import-history --since in words" "2026-03-01" agentmem import-history claude-code --since soon
check "stats | head -1" 0 bash -c "set -o pipefail; agentmem stats | head -1"
check "search | head -1" 0 bash -c "set -o pipefail; agentmem search pnpm --all-projects | head -1"
if [ "$(id -u)" != 0 ]; then
  agentmem save "a memory in a home about to be read-only" >/dev/null
  chmod -R a-w "$XDG_DATA_HOME/agentmem"
  mistake "read-only home: search" "not writable" agentmem search pnpm
  chmod -R u+w "$XDG_DATA_HOME/agentmem"
fi
# A hook that cannot work says so to the user (Claude Code's systemMessage), and doctor shows the last failure.
told() {  # told NAME WORDS SESSION: a SessionStart hook exits 0 and its answer tells the user WORDS
  local out rc=0
  out=$(printf '{"session_id":"%s","cwd":"%s","hook_event_name":"SessionStart","source":"startup"}' "$3" "$PWD" |
        agentmem hook SessionStart 2>/dev/null) || rc=$?
  if [ "$rc" != 0 ]; then
    fail "$1: exit $rc"
  elif ! printf '%s' "$out" | python3 -c 'import json, sys; sys.exit(sys.argv[1] not in json.load(sys.stdin)["systemMessage"])' "$2"; then
    fail "$1: the user is not told '$2': $out"
  else
    echo "ok   $1: $(printf '%s' "$out" | cut -c1-110)"
  fi
}
printf 'max_output_chars = = 12000\n' >"$XDG_DATA_HOME/agentmem/config.toml"
chmod 600 "$XDG_DATA_HOME/agentmem/config.toml"
told "a corrupt config.toml: the hook tells the user" "config.toml" s-config
mistake "doctor with a corrupt config.toml" "Fix or remove the file" agentmem doctor
rm "$XDG_DATA_HOME/agentmem/config.toml"
check "doctor shows the hooks' last failure" 0 bash -c "agentmem doctor | grep -q 'config.toml'"
mkdir -p "$work/offline-cache"
offline_search() {
  env -u AGENTMEM_EMBED_MODEL_PATH HF_HUB_OFFLINE=1 XDG_CACHE_HOME="$work/offline-cache" agentmem search pnpm
}
started=$(date +%s)
check "offline without a model: search (a note, at once)" 0 offline_search
[ $(( $(date +%s) - started )) -lt 20 ] || fail "offline search took more than 20 s"

echo "== uninstall"
cd "$work/agentmem"
check "uninstall claude-code" 0 .venv/bin/agentmem uninstall claude-code
check "uninstall cursor" 0 .venv/bin/agentmem uninstall cursor
check "purge --yes" 0 .venv/bin/agentmem purge --yes --i-am-the-user

# quiet NAME CMD...: CMD exits 0 without a traceback; its output (an installer's chatter) shown only on failure
quiet() {
  local name=$1 rc=0; shift
  "$@" >"$work/quiet.log" 2>&1 </dev/null || rc=$?
  if [ "$rc" != 0 ] || grep -q Traceback "$work/quiet.log"; then
    fail "$name: exit $rc"; tail -n 25 "$work/quiet.log" | sed 's/^/    /' >&2; return 1
  fi
  echo "ok   $name"
}
# in_home DIR CMD...: CMD in a clean HOME of its own (the pip and uv caches stay shared: they only save downloads)
in_home() {
  local dir=$1; shift
  mkdir -p "$dir"
  env HOME="$dir" XDG_DATA_HOME="$dir/.local/share" XDG_CONFIG_HOME="$dir/.config" "$@"
}
export UV_CACHE_DIR="$XDG_CACHE_HOME/uv"
start_event() { printf '{"session_id":"%s","cwd":"%s","hook_event_name":"SessionStart","source":"startup"}' "$1" "$2"; }
sessions() {  # sessions HOME AGENTMEM [PATH]: how many sessions that install's store holds
  in_home "$1" env PATH="${3:-$PATH}" "$2" stats --all-projects --json 2>/dev/null |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["sessions"])'
}

echo "== the wheel, through pipx and uv tool (each in a clean HOME)"
tools="$work/tools"
quiet "the tools: pipx, uv and build from PyPI" bash -c \
  "python3 -m venv '$tools' && '$tools/bin/pip' install -q pipx uv build"
quiet "python -m build (wheel and sdist)" "$tools/bin/python" -m build --outdir "$work/dist" "$work/agentmem"
wheel=$(ls "$work/dist"/agentmem_mcp-*.whl 2>/dev/null | head -1)
ls "$work/dist"/agentmem_mcp-*.tar.gz >/dev/null 2>&1 || fail "python -m build made no sdist"
for route in pipx uv; do
  h="$work/home-$route"
  if [ "$route" = pipx ]; then
    quiet "pipx install the wheel" in_home "$h" "$tools/bin/pipx" install "$wheel"
  else
    quiet "uv tool install the wheel" in_home "$h" "$tools/bin/uv" tool install "$wheel"
  fi
  am="$h/.local/bin/agentmem"
  check "$route: agentmem --version" 0 in_home "$h" "$am" --version
  check "$route: agentmem install claude-code" 0 in_home "$h" "$am" install claude-code
  hook_cmd=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["hooks"]["SessionStart"][0]["hooks"][0]["command"])' \
             "$h/.claude/settings.json" 2>/dev/null) || fail "$route: no SessionStart hook in settings.json"
  case $hook_cmd in "$h/.local/"*) ;; *) fail "$route: the hook does not run the $route install: $hook_cmd" ;; esac
  check "$route: the installed SessionStart hook, as Claude Code runs it" 0 in_home "$h" bash -c \
    "$(declare -f start_event); start_event s-$route '$project' | $hook_cmd | grep -q hookSpecificOutput"
  [ "$(sessions "$h" "$am")" = 1 ] || fail "$route: the hook's session is not stored"
  mistake "$route: team_url without the [team] extra" "agentmem-mcp\[team\]" \
    in_home "$h" env AGENTMEM_TEAM_URL=postgresql://me@127.0.0.1:9/team "$am" team status
done

echo "== the Claude Code plugin, agentmem nowhere on the PATH (the real claude CLI, a clean HOME)"
if ! command -v npm >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  quiet "apt-get install npm" bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm"
fi
h="$work/home-plugin"
plugin_path="$work/npm/node_modules/.bin:$work/uv-only:$base_path"
mkdir -p "$work/uv-only" && ln -s "$tools/bin/uv" "$work/uv-only/uv"
if ! quiet "npm install @anthropic-ai/claude-code" npm install --prefix "$work/npm" --no-fund --no-audit \
     @anthropic-ai/claude-code; then
  :
elif in_home "$h" env PATH="$plugin_path" bash -c 'command -v agentmem' >/dev/null; then
  fail "plugin: agentmem is on the PATH already ($(PATH=$plugin_path command -v agentmem))"
else
  plugin() { in_home "$h" env PATH="$plugin_path" "$@"; }
  src="$work/plugin-src"  # a clone as a marketplace gets it (Claude Code copies the folder: no .venv in it)
  git clone -q "$repo" "$src" && git -C "$src" checkout -q "$(git -C "$repo" rev-parse HEAD)"
  quiet "claude plugin validate" plugin claude plugin validate "$src"
  quiet "claude plugin marketplace add (the checkout)" plugin claude plugin marketplace add "$src"
  quiet "claude plugin install agentmem@agentmem" plugin claude plugin install agentmem@agentmem
  started=$(date +%s)
  (cd "$project" && plugin claude mcp list) >"$work/mcp.out" 2>&1 || true
  if grep -q "plugin:agentmem:agentmem.*Connected" "$work/mcp.out"; then
    echo "ok   claude mcp list: the plugin's server connected (its environment made by uv in $(( $(date +%s) - started )) s)"
  else
    fail "claude mcp list: the plugin's server did not connect"; sed 's/^/    /' "$work/mcp.out" >&2
    cat "$h/.local/share/agentmem-env"/*/setup.log 2>/dev/null | tail -n 20 | sed 's/^/    /' >&2
  fi
  root=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["plugins"]["agentmem@agentmem"][0]["installPath"])' \
         "$h/.claude/plugins/installed_plugins.json")
  env_am=$(ls "$h/.local/share/agentmem-env"/*/venv/bin/agentmem 2>/dev/null | head -1)
  [ -n "$env_am" ] && [ "$(sessions "$h" "$env_am" "$plugin_path")" = 0 ] ||
    fail "plugin: no environment was made, or claude mcp list left a session behind"
  printf '{"session_id":"s-plugin","cwd":"%s","hook_event_name":"UserPromptSubmit","prompt":"run the tests"}' \
    "$project" >"$work/prompt.json"
  check "plugin: a UserPromptSubmit hook, as Claude Code runs it" 0 plugin env CLAUDE_PLUGIN_ROOT="$root" \
    sh -c 'sh "$CLAUDE_PLUGIN_ROOT/hooks/run-hook.sh" claude-code UserPromptSubmit <"$1"' _ "$work/prompt.json"
  [ -n "$env_am" ] && [ "$(sessions "$h" "$env_am" "$plugin_path")" = 1 ] || fail "plugin: the hook's event is not stored"
  (cd "$src" && plugin claude mcp list) >"$work/mcp.out" 2>&1 || true
  if grep -q "CLAUDE_PLUGIN_ROOT\|Project config\|multiple scopes" "$work/mcp.out"; then
    fail "claude mcp list inside the checkout takes the plugin's files for the project's"; sed 's/^/    /' "$work/mcp.out" >&2
  else
    echo "ok   claude mcp list inside the checkout: only the plugin's server"
  fi
fi

if [ "$failures" != 0 ]; then
  echo "newcomer: $failures problems" >&2
  exit 1
fi
echo "newcomer: all good"
