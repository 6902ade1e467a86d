"""What a NEW coding session is told: real Claude Code sessions replayed through agentmem's hooks, then probes.

    python scripts/eval_coding.py [--spec SPEC.json] [--project NAME] [--json FIGURES.json] [--keep-home DIR]
                                  [--show-briefing] [--in-process]

One run: a fresh temporary AGENTMEM_HOME shared by every project; for each project of spec.json (README.md beside
it describes the format) a fresh git directory, into which its sessions are replayed in order through the real
hook command (coding_replay.py); then `agentmem worker --once` until nothing is left. Then, per project, a new
session: its SessionStart answer is the **briefing**; for each probe, **search@5** is the title and snippet of the
top 5 hits of `agentmem search "<q>" --json` run in the project's directory, and **prompt** is what a
UserPromptSubmit of `<q>` injects. A probe is answered in a channel when one of its `any` strings appears in it
(case-insensitive substring: a floor, not a grade).

Also reported: the share of irrelevant prompts that inject nothing; the contradiction checks whose `wrong` strings
appear in any channel; the tokens (~chars/4) of the briefing and of each injection; the supersede probes
(scripts/data/supersede_pairs.json: same-subject updates superseded, different subjects kept apart); staleness
(files the memories name deleted or renamed after the replay: the share of those memories the product then
marks stale, see `coding_checks.marked_stale`); and two baselines scored on the same probes: no memory at all,
and the last 30 raw observations of the project as a naive tool would inject them at session start (briefing
channel).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from coding_checks import share, staleness, supersede_probes
from coding_replay import Agentmem, ReplayDir, new_session, replay_session
from coding_report import NAMED_KINDS, print_misses, print_report
from eval_common import DEFAULT_MODEL_PATH, write_json
from harness import REPO, describe_machine

DEFAULT_SPEC = REPO / "../shared/eval/coding/spec.json"
PAIRS = Path(__file__).resolve().parent / "data" / "supersede_pairs.json"
SEARCH_K = 5
RAW_LAST = 30
CHANNELS = ("briefing", "search", "prompt")
SNIPPET = 160


# scoring (pure) ----------------------------------------------------------------------------------

def tokens(text: str) -> int:
    """~chars/4, as the product's budgets count."""
    return math.ceil(len(text) / 4)


def first_match(text: str, strings: list[str]) -> str | None:
    """The first of `strings` that occurs in `text`, case-insensitively (None if none does)."""
    lowered = text.lower()
    return next((s for s in strings if s.lower() in lowered), None)


def around(text: str, needle: str, width: int = SNIPPET) -> str:
    """The piece of `text` around the first occurrence of `needle`, on one line."""
    at = text.lower().find(needle.lower())
    if at < 0:
        return ""
    start = max(0, at - width // 2)
    piece = text[start:at + len(needle) + width // 2]
    return ("…" if start else "") + " ".join(piece.split()) + ("…" if at + len(needle) + width // 2 < len(text) else "")


def hits_text(hits: list[dict[str, Any]], k: int = SEARCH_K) -> str:
    """What search@k shows: title and snippet of the top k hits."""
    return "\n".join(f"{h.get('title', '')}\n{h.get('snippet', '')}" for h in hits[:k])


def score_channels(texts: dict[str, str], strings: list[str]) -> dict[str, dict[str, Any]]:
    """Per channel: whether one of `strings` appears, which, and the text around it."""
    out = {}
    for channel, text in texts.items():
        found = first_match(text, strings)
        out[channel] = {"answered": found is not None, "match": found, "snippet": around(text, found) if found else ""}
    return out


def raw_observations_text(rows: list[dict[str, Any]]) -> str:
    """The last observations as a naive tool would inject them: the prompt, the command, else the title, one line
    each, oldest first (`rows` newest first, as read)."""
    lines = []
    for row in reversed(rows):
        command = None
        if row.get("input"):
            try:
                command = json.loads(row["input"]).get("command")
            except (ValueError, AttributeError):
                command = None
        if row.get("prompt"):
            text = f"prompt: {row['prompt']}"
        elif isinstance(command, str) and command.strip():
            text = f"$ {command}"
        else:
            text = row.get("title") or f"{row.get('event')} {row.get('tool') or ''}".strip()
        lines.append("- " + " ".join(text.split())[:300])
    return "\n".join(lines)


# aggregation -------------------------------------------------------------------------------------

SYSTEMS = {"agentmem": (*CHANNELS, "any"), "raw_last_30": ("briefing",), "no_memory": (*CHANNELS, "any")}


def spread(by_project: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per channel: the median project, the worst (and which), the best, and the projects under 60%."""
    out = {}
    for key in ("agentmem.briefing", "agentmem.search", "agentmem.prompt", "agentmem.any"):
        values = {name: g[key] for name, g in by_project.items() if g[key] is not None}
        worst = min(values, key=values.get) if values else ""
        out[key] = {"median": statistics.median(values.values()) if values else 0.0,
                    "worst": values.get(worst, 0.0), "worst_project": worst,
                    "best": max(values.values(), default=0.0),
                    "under_60": sorted(name for name, v in values.items() if v is not None and v < 0.6)}
    return out


def aggregate(projects: list[dict[str, Any]]) -> dict[str, Any]:
    """Answer shares per system and channel: overall, per project, per probe kind; irrelevant, contradictions,
    tokens."""
    probes = [(p["name"], probe) for p in projects for probe in p["probes"]]

    def shares(selected: list[dict[str, Any]]) -> dict[str, Any]:
        return {"n": len(selected), **{f"{system}.{channel}": share([s["channels"][system][channel]["answered"]
                                                                     for s in selected])
                                       for system, channels in SYSTEMS.items() for channel in channels}}

    kinds = sorted({probe["kind"] for _, probe in probes})
    injections = [t for p in projects for t in p["prompt_tokens"]]
    irrelevant = [i for p in projects for i in p["irrelevant"]]
    contradictions = [c for p in projects for c in p["contradictions"]]
    by_project = {p["name"]: shares(p["probes"]) for p in projects}
    return {
        "overall": shares([probe for _, probe in probes]),
        "by_project": by_project,
        "spread": spread(by_project),
        "by_kind": {kind: shares([probe for _, probe in probes if probe["kind"] == kind]) for kind in kinds},
        # the prompt target: probes that name a file, a command or an error
        "named": shares([probe for _, probe in probes if probe["kind"] in NAMED_KINDS]),
        "irrelevant_silent": {system: share([i["silent"][system] for i in irrelevant]) for system in
                              ("agentmem", "no_memory")},
        "irrelevant_count": len(irrelevant),
        "contradictions": {system: sum(bool(c["wrong_in"][system]) for c in contradictions)
                           for system in SYSTEMS},
        "contradiction_checks": len(contradictions),
        "tokens": {"briefing": {p["name"]: p["briefing_tokens"] for p in projects},
                   "raw_last_30": {p["name"]: tokens(p["raw_text"]) for p in projects},
                   "injection_median": statistics.median(injections) if injections else 0,
                   "injection_max": max(injections, default=0),
                   "injections": len(injections),
                   "injections_empty": sum(1 for t in injections if t == 0)},
    }


# the run -----------------------------------------------------------------------------------------

def evaluate_project(product: Agentmem, spec: dict[str, Any], replay: ReplayDir, work: Path,
                     show_briefing: bool) -> dict[str, Any]:
    """The new session's three channels for every probe, irrelevant prompt and contradiction check."""
    project = replay.project_id()
    raw_rows = product.rows("SELECT event, tool, input, prompt, title FROM observations WHERE project IS ? "
                         "ORDER BY id DESC LIMIT ?", [project, RAW_LAST])
    raw_text = raw_observations_text(raw_rows)
    briefing, prompt = new_session(product, replay.root, work / "transcripts")
    if show_briefing:
        print(f"\n## Briefing of {spec['name']} ({tokens(briefing)} tokens)\n{briefing or '(empty)'}")
    probes, prompt_tokens = [], []

    def channels(q: str) -> dict[str, str]:
        hits = product.search(q, replay.root)
        injected = prompt(q)
        prompt_tokens.append(tokens(injected))
        return {"briefing": briefing, "search": hits_text(hits), "prompt": injected}

    for probe in spec["probes"]:
        texts = channels(probe["q"])
        scored = {"agentmem": score_channels(texts, probe["any"]),
                  "raw_last_30": score_channels({"briefing": raw_text}, probe["any"]),
                  "no_memory": score_channels({c: "" for c in CHANNELS}, probe["any"])}
        for system in ("agentmem", "no_memory"):
            found = next((scored[system][c] for c in CHANNELS if scored[system][c]["answered"]), None)
            scored[system]["any"] = found or {"answered": False, "match": None, "snippet": ""}
        probes.append({"q": probe["q"], "kind": probe["kind"], "any": probe["any"],
                       "answered_in": [c for c in CHANNELS if scored["agentmem"][c]["answered"]], "channels": scored})
    irrelevant = []
    for q in spec.get("irrelevant", []):
        injected = prompt(q)
        prompt_tokens.append(tokens(injected))
        irrelevant.append({"q": q, "silent": {"agentmem": not injected.strip(), "no_memory": True},
                           "injected": injected[:500]})
    contradictions = []
    for check in spec.get("contradictions", []):
        texts = channels(check["q"])
        wrong = {"agentmem": [c for c in CHANNELS if first_match(texts[c], check["wrong"])],
                 "raw_last_30": ["briefing"] if first_match(raw_text, check["wrong"]) else [],
                 "no_memory": []}
        contradictions.append({"q": check["q"], "wrong": check["wrong"], "wrong_in": wrong,
                               "snippets": {c: around(texts[c], first_match(texts[c], check["wrong"]) or "")
                                            for c in wrong["agentmem"]}})
    return {"name": spec["name"], "project": project, "briefing": briefing, "briefing_tokens": tokens(briefing),
            "raw_text": raw_text, "probes": probes, "irrelevant": irrelevant, "contradictions": contradictions,
            "prompt_tokens": prompt_tokens}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", type=Path, default=DEFAULT_SPEC, help="the probes (default: %(default)s)")
    parser.add_argument("--project", action="append", default=[], metavar="NAME",
                        help="evaluate only this project of the spec (repeatable)")
    parser.add_argument("--json", type=Path, default=None, help="write every figure and probe as JSON")
    parser.add_argument("--keep-home", type=Path, default=None, metavar="DIR",
                        help="run in DIR (home in DIR/home, replay directories in DIR/projects) and keep it")
    parser.add_argument("--show-briefing", action="store_true", help="print each project's briefing")
    parser.add_argument("--in-process", action="store_true",
                        help="call the hook, worker and search entry points in this process instead of running the "
                             "agentmem command (faster, less faithful)")
    parser.add_argument("--model-path", type=Path, default=DEFAULT_MODEL_PATH,
                        help="folder of the all-MiniLM-L6-v2 ONNX model (default: ../shared/models/...)")
    parser.add_argument("--pairs", type=Path, default=PAIRS, help="supersede probe pairs (default: %(default)s)")
    parser.add_argument("--hold-out", action="append", default=[], metavar="NAME",
                        help="report this project's figures apart from the others' (repeatable): the projects a "
                             "change was not written for")
    return parser.parse_args(argv)


def load_spec(path: Path, names: list[str]) -> list[dict[str, Any]]:
    if not path.is_file():
        raise SystemExit(f"no probe file at {path}: pass --spec PATH (../shared/eval/coding/spec.json)")
    projects = json.loads(path.read_text(encoding="utf-8")).get("projects")
    if not isinstance(projects, list) or not projects:
        raise SystemExit(f"{path} has no projects (see the README.md beside it for the format)")
    unknown = set(names) - {p["name"] for p in projects}
    if unknown:
        raise SystemExit(f"no project {', '.join(sorted(unknown))} in {path}; it has "
                         f"{', '.join(p['name'] for p in projects)}")
    return [p for p in projects if not names or p["name"] in names]


_HELD: list[Any] = []  # the lock on the fixed directory, held for the run


def _work_dir() -> Path:
    """Where a run replays its projects: one fixed directory, so that the paths the sessions' tool outputs hold (and
    so the memories' words and vectors) are the same in every run; a new temporary one while another run holds it,
    or when the fixed one holds files this script did not make."""
    import fcntl

    fixed = Path(tempfile.gettempdir()) / "agentmem-eval-coding"
    marker = fixed / ".agentmem-eval-coding"
    lock = open(f"{fixed}.lock", "a")  # noqa: SIM115 - held open until the process ends
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        busy = None
    except OSError:
        busy = "another run holds it"
    if busy is None and fixed.exists() and not marker.exists() and any(fixed.iterdir()):
        busy = "it holds files this script did not make"
    if busy:
        lock.close()
        work = Path(tempfile.mkdtemp(prefix="agentmem-eval-coding-"))
        print(f"note: {fixed}: {busy}; replaying in {work} (paths in the memories differ from a usual run's, which "
              "can move a tie between two memories)")
        return work
    _HELD.append(lock)
    shutil.rmtree(fixed, ignore_errors=True)  # left by a run that did not end
    fixed.mkdir(mode=0o700)
    marker.touch()
    return fixed


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    began = time.perf_counter()
    spec_path = args.spec.resolve()
    projects = load_spec(spec_path, args.project)
    now = dt.datetime.now(dt.timezone.utc)
    print(f"# Coding sessions: what a new session is told ({len(projects)} projects, "
          f"{sum(len(p['probes']) for p in projects)} probes)")
    print(f"date: {now.isoformat(timespec='seconds')}   machine: {describe_machine()}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}   mode: "
          f"{'in-process' if args.in_process else 'agentmem command (hooks via hooks/run-hook.sh)'}")
    if args.keep_home:
        work = args.keep_home.resolve()
        if work.exists() and any(work.iterdir()):
            raise SystemExit(f"--keep-home {work} is not empty: give a new or empty directory")
        work.mkdir(parents=True, exist_ok=True)
    else:
        work = _work_dir()
    product = Agentmem(work / "home", args.model_path.resolve(), in_process=args.in_process)
    try:
        replays, sessions = [], []
        for spec in projects:
            replay = ReplayDir.create(work / "projects", spec["name"])
            seen: set[str] = set()
            for relative in spec["sessions"]:
                done = replay_session(product, replay, spec_path.parent / relative, work / "transcripts", seen)
                sessions.append({"project": spec["name"], "file": relative, "session_id": done.session_id,
                                 "events": dict(done.events), "seconds": round(done.seconds, 1)})
                print(f"  replayed {spec['name']}/{Path(relative).name}: {sum(done.events.values())} events in "
                      f"{done.seconds:.0f} s", file=sys.stderr, flush=True)
            replays.append(replay)
        replay_seconds = time.perf_counter() - began
        worker_began = time.perf_counter()
        worker_reports = product.worker()
        worker_seconds = time.perf_counter() - worker_began
        print(f"  worker: {' | '.join(worker_reports)} ({worker_seconds:.0f} s)", file=sys.stderr, flush=True)

        probe_began = time.perf_counter()
        results = [evaluate_project(product, spec, replay, work, args.show_briefing)
                   for spec, replay in zip(projects, replays)]
        probe_seconds = time.perf_counter() - probe_began
        stale = [staleness(product, replay, work, result["briefing"]) for replay, result in zip(replays, results)]
        supersede = supersede_probes(product, args.pairs)
    finally:
        product.close()
        if not args.keep_home:
            shutil.rmtree(work, ignore_errors=True)
    judged = [m for s in stale for m in s["memories"] if m["shown"]]
    staleness_figures = {"memories_naming": sum(s["memories_naming"] for s in stale), "shown_before": len(judged),
                         "marked_stale": sum(m["stale"] for m in judged), "share": share([m["stale"] for m in judged]),
                         "by_project": {r["name"]: s for r, s in zip(results, stale)}}
    summary = aggregate(results)
    if args.hold_out:
        held = [r for r in results if r["name"] in args.hold_out]
        rest = [r for r in results if r["name"] not in args.hold_out]
        summary["held_out"] = {"names": [r["name"] for r in held],
                               "shares": aggregate(held)["overall"] if held else {},
                               "others": aggregate(rest)["overall"] if rest else {}}
    from briefing_checks import judge

    summary["precision"] = judge({"projects": results}, spec_path)
    events = sum(sum(s["events"].values()) for s in sessions)
    timing = {"replay_seconds": replay_seconds, "worker_seconds": worker_seconds, "probe_seconds": probe_seconds,
              "wall_seconds": time.perf_counter() - began, "events": events,
              "hook_p50_ms": statistics.median(product.hook_ms) if product.hook_ms else 0.0,
              "hook_max_ms": max(product.hook_ms, default=0.0),
              "search_p50_ms": statistics.median(product.search_ms) if product.search_ms else 0.0,
              "hook_problems": dict(product.problems), "hook_problem_examples": product.examples,
              "worker_reports": worker_reports}
    print_report(summary, staleness_figures, supersede, timing)
    print_misses(results)
    payload = {"evaluation": "coding", "spec": str(spec_path), "date": now.isoformat(timespec="seconds"),
               "machine": describe_machine(), "command": sys.argv, "mode": "in-process" if args.in_process else
               "command", "summary": summary, "staleness": staleness_figures, "supersede": supersede,
               "timing": timing, "sessions": sessions,
               "projects": [{k: v for k, v in r.items()} for r in results]}
    write_json(args.json, payload)
    if args.keep_home:
        print(f"kept the home and the replay directories in {work}")
    return payload


if __name__ == "__main__":
    main()
