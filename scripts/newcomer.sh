#!/usr/bin/env bash
# A new user's first hour, as a script (issue 21): in a fresh temporary HOME and a fresh clone, follow the
# README's set-up commands as written, install into Claude Code and Cursor, run each command the README
# shows once, provoke the mistakes a newcomer makes, and fail on any traceback, any stderr line nobody
# expects, or a README command that does not work.
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
check "save --global" 0 agentmem save "the user prefers short answers without preamble" --global
check "search" 0 agentmem search "how do we install dependencies"
check "search --json --all-projects --tier working" 0 agentmem search "install" --json --all-projects --tier working
id=$(agentmem search "pnpm lockfile" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["hits"][0]["id"])')
check "get --history" 0 agentmem get "$id" --history
check "forget --type --older-than-days (preview)" 0 agentmem forget --type bug --older-than-days 90
check "forget --strategy composite --dry-run" 0 agentmem forget --strategy composite --dry-run
check "list" 0 agentmem list --type decision --limit 20
check "stats" 0 agentmem stats
check "export" 0 agentmem export --out mem.jsonl
check "import" 0 agentmem import mem.jsonl
check "reindex" 0 agentmem reindex
check "doctor" - agentmem doctor
check "audit --verify" 0 agentmem audit --verify
check "pin" 0 agentmem pin "$id"
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
check "forget by id" 0 agentmem forget "$id"
check "--version" 0 agentmem --version
check "purge --project --yes" 0 agentmem purge --project --yes
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
check "purge --yes" 0 .venv/bin/agentmem purge --yes

if [ "$failures" != 0 ]; then
  echo "newcomer: $failures problems" >&2
  exit 1
fi
echo "newcomer: all good"
