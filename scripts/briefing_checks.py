"""The mechanical part of judging a briefing's lines against the sessions it came from (docs/evaluation.md,
"Judging a briefing"): each rule a line can break that a script can check, and the share of the briefing's tokens on
lines that break none.

    python scripts/briefing_checks.py EVAL.json [--spec SPEC.json]    # EVAL.json: eval_coding.py --json's output

Checked per line (a flag names the rule; `misleading` ones state something false):
- cut: a sentence or a name cut off ("…");
- duplicate: the same statement twice in one briefing;
- narration: the agent telling what it is about to do ("Let me …", "I'll …", "Now I …");
- question-as-rule: a question shown as a standing instruction or decision;
- help-run: a "How to build, test and run" command that is a --help / --version run;
- outside-path: a path outside the project shown as one of its files;
- never-ran (misleading): a command shown as how to build or test that no session ran in that form;
- passed-but-failed (misleading): a command shown with "last run passed" whose last run in the transcripts failed;
- still-failing-but-fixed (misleading): "still failing" for a command a later session ran successfully.
What needs a reader (a stale state shown as current, a wrong lesson, noise that breaks no rule above) is judged
by reading, recorded in docs/evaluation.md.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SPEC = REPO / "../shared/eval/coding/spec.json"
MISLEADING = ("never-ran", "passed-but-failed", "still-failing-but-fixed")
_NARRATION = re.compile(r"(?:^|[.!?] )(?:Let me|Now let me|I'll|I will|Now I|I'm going to)\b")
_COMMAND_LINE = re.compile(r"^- [^:]+: `([^`]+)`(?: — (.*))?")
_STILL = re.compile(r"still failing[^`]*`([^`]+)`", re.IGNORECASE)


def tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def sections(briefing: str) -> list[tuple[str, str]]:
    """(section, line) of every content line of a briefing."""
    out, section = [], ""
    for line in briefing.split("\n"):
        if line.startswith("## "):
            section = line[3:]
        elif line.startswith("- ") or line.startswith("  "):
            out.append((section, line))
    return out


def bash_runs(paths: list[Path]) -> list[tuple[int, str, bool]]:
    """(session number, command, failed) of every Bash call of the sessions, in order."""
    runs = []
    for number, path in enumerate(paths):
        pending: dict[str, str] = {}
        for raw in path.read_text(encoding="utf-8", errors="replace").split("\n"):
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(record, dict) or record.get("isSidechain"):
                continue
            content = (record.get("message") or {}).get("content")
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use" and block.get("name") in ("Bash", "Shell"):
                    pending[block.get("id")] = str((block.get("input") or {}).get("command", ""))
                elif block.get("type") == "tool_result" and block.get("tool_use_id") in pending:
                    runs.append((number, pending.pop(block["tool_use_id"]), bool(block.get("is_error"))))
    return runs


def _ran(form: str, runs: list[tuple[int, str, bool]]) -> list[tuple[int, str, bool]]:
    """The runs whose command holds every word of `form` in order (placeholders like <file> match anything)."""
    words = [w for w in form.split() if not (w.startswith("<") and w.endswith(">"))]
    pattern = re.compile(r".*?".join(re.escape(w) for w in words), re.DOTALL)
    return [r for r in runs if pattern.search(r[1])]


def check(briefing: str, runs: list[tuple[int, str, bool]], project_root: str | None) -> list[dict[str, Any]]:
    """Every line of a briefing with the rules it breaks."""
    out, seen = [], set()
    for section, line in sections(briefing):
        flags = []
        body = re.sub(r"\s*\((?:you said|learned|saved|from a session|imported)[^)]*\)$", "", line)
        if "…" in line:
            flags.append("cut")
        statement = body.strip("- ").lower()
        if statement in seen:
            flags.append("duplicate")
        seen.add(statement)
        if _NARRATION.search(line):
            flags.append("narration")
        if section in ("The user's standing instructions", "Decisions") and re.search(r'said: "[^"]*\?"', line):
            flags.append("question-as-rule")
        if project_root and project_root in line:
            flags.append("outside-path")
        elif re.search(r"(?<![\w.])(?:/Users/|/home/|~/)\S+", line) and section != "Where the last session left off":
            flags.append("outside-path")
        command = _COMMAND_LINE.match(line) if section == "How to build, test and run" else None
        if command:
            form = re.sub(r"^cd \S+ && ", "", command.group(1))
            if re.search(r"(?:^|\s)(?:--help|-h|--version|help)(?:\s|$)", form):
                flags.append("help-run")
            matching = _ran(form, runs)
            if not matching:
                flags.append("never-ran")
            elif "last run passed" in (command.group(2) or "") and matching[-1][2]:
                flags.append("passed-but-failed")
        for failing in _STILL.findall(line):
            later = [r for r in _ran(failing, runs) if not r[2]]
            last_failed = [r for r in _ran(failing, runs) if r[2]]
            if later and last_failed and later[-1][0] > last_failed[-1][0]:
                flags.append("still-failing-but-fixed")
        out.append({"section": section, "line": line, "tokens": tokens(line), "flags": flags})
    return out


def judge(payload: dict[str, Any], spec_path: Path) -> dict[str, Any]:
    """Per project: lines, flagged lines, the share of the briefing's line tokens on unflagged lines, misleading."""
    spec = {p["name"]: p for p in json.loads(spec_path.read_text(encoding="utf-8"))["projects"]}
    result = {}
    for project in payload["projects"]:
        sessions = [spec_path.parent / s for s in spec[project["name"]]["sessions"]]
        lines = check(project["briefing"], bash_runs(sessions), project.get("project"))
        total = sum(line["tokens"] for line in lines) or 1
        clean = sum(line["tokens"] for line in lines if not line["flags"])
        result[project["name"]] = {
            "lines": len(lines), "flagged": sum(bool(line["flags"]) for line in lines),
            "clean_token_share": round(100 * clean / total, 1),
            "misleading": sum(any(f in MISLEADING for f in line["flags"]) for line in lines),
            "by_flag": _count([f for line in lines for f in line["flags"]]),
            "flagged_lines": [{k: line[k] for k in ("section", "line", "flags")} for line in lines if line["flags"]]}
    return result


def _count(flags: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for flag in flags:
        counts[flag] = counts.get(flag, 0) + 1
    return counts


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("eval_json", type=Path, help="the --json output of scripts/eval_coding.py")
    parser.add_argument("--spec", type=Path, default=DEFAULT_SPEC, help="the probes (default: %(default)s)")
    parser.add_argument("--show", action="store_true", help="print every flagged line")
    args = parser.parse_args(argv)
    if not args.eval_json.is_file():
        raise SystemExit(f"no eval output at {args.eval_json}: run scripts/eval_coding.py --json PATH first")
    if not args.spec.is_file():
        raise SystemExit(f"no probe file at {args.spec}: pass --spec PATH (../shared/eval/coding/spec.json)")
    result = judge(json.loads(args.eval_json.read_text(encoding="utf-8")), args.spec.resolve())
    print(f"{'project':<18} {'lines':>5} {'flagged':>7} {'clean tokens %':>14} {'misleading':>10}  flags")
    for name, r in result.items():
        print(f"{name:<18} {r['lines']:>5} {r['flagged']:>7} {r['clean_token_share']:>14} {r['misleading']:>10}  "
              + ", ".join(f"{k} {v}" for k, v in sorted(r["by_flag"].items())))
        if args.show:
            for line in r["flagged_lines"]:
                print(f"    [{', '.join(line['flags'])}] {line['section']}: {line['line'][:200]}")
    return result


if __name__ == "__main__":
    sys.exit(0 if main() is not None else 1)
