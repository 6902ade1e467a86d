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
(files the memories name deleted or renamed after the replay: the share of those memories the product then marks
stale, see `marked_stale`); and two baselines scored on the same probes: no memory at all, and the last 30 raw
observations of the project as a naive tool would inject them at session start (briefing channel).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from coding_replay import Agentmem, ReplayDir, new_session, replay_session  # noqa: E402
from eval_common import DEFAULT_MODEL_PATH, fmt, print_table, write_json  # noqa: E402
from machine import describe_machine  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SPEC = REPO / "../shared/eval/coding/spec.json"
PAIRS = Path(__file__).resolve().parent / "data" / "supersede_pairs.json"
SEARCH_K = 5
RAW_LAST = 30
CHANNELS = ("briefing", "search", "prompt")
SNIPPET = 160
DELETE_FILES = 3  # per project: the files most memories name are deleted, the next one renamed
RENAME_FILES = 1


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


def share(values: list[bool]) -> float | None:
    return sum(values) / len(values) if values else None


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


STALE_MARKER = re.compile(r"\b(stale|outdated|no longer exists?|(?:file|path) (?:is )?missing|was deleted|was renamed|"
                          r"was moved|not found on disk)\b", re.IGNORECASE)


def marked_stale(before: str | None, after: str | None) -> bool | None:
    """Whether what a channel shows of one memory changed to say its file is gone: shown before the deletion and
    left out after it, or shown after with a stale marker its text did not have before. None when the channel did
    not show the memory before (nothing to judge). The marker is a guess at what the product will print: adapt
    STALE_MARKER when it says staleness its own way."""
    if before is None:
        return None
    if after is None:
        return True
    return bool(STALE_MARKER.search(after)) and not STALE_MARKER.search(before)


def briefing_line(briefing: str, memory: dict[str, Any]) -> str | None:
    """The briefing line that shows `memory`: the one naming its id, else one holding the start of its title."""
    lines = briefing.splitlines()
    found = next((line for line in lines if memory["id"] in line), None)
    title = (memory.get("title") or "").rstrip("…")[:40]
    if found is None and len(title) >= 12:
        found = next((line for line in lines if title in line), None)
    return found


def hit_view(hits: list[dict[str, Any]], memory_id: str, k: int = SEARCH_K) -> str | None:
    hit = next((h for h in hits[:k] if h.get("id") == memory_id), None)
    return json.dumps(hit, ensure_ascii=False) if hit is not None else None


# aggregation -------------------------------------------------------------------------------------

SYSTEMS = {"agentmem": (*CHANNELS, "any"), "raw_last_30": ("briefing",), "no_memory": (*CHANNELS, "any")}


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
    return {
        "overall": shares([probe for _, probe in probes]),
        "by_project": {p["name"]: shares(p["probes"]) for p in projects},
        "by_kind": {kind: shares([probe for _, probe in probes if probe["kind"] == kind]) for kind in kinds},
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

def read_rows(product: Agentmem, sql: str, args: list[Any]) -> list[dict[str, Any]]:
    from agentmem_mcp.db.connection import connect

    conn = connect(product.settings().database, load_vec=False)
    try:
        return [dict(row) for row in conn.execute(sql, args)]
    finally:
        conn.close()


def project_id(replay: ReplayDir) -> str:
    from agentmem_mcp.project import project_for

    return project_for(replay.root) or str(replay.root)


def evaluate_project(product: Agentmem, spec: dict[str, Any], replay: ReplayDir, work: Path,
                     show_briefing: bool) -> dict[str, Any]:
    """The new session's three channels for every probe, irrelevant prompt and contradiction check."""
    project = project_id(replay)
    raw_rows = read_rows(product, "SELECT event, tool, input, prompt, title FROM observations WHERE project IS ? "
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


def memories_naming(product: Agentmem, project: str, path: Path, root: Path) -> list[dict[str, Any]]:
    """Latest memories of the project (not the working tier: raw events) whose files, title or text name `path`."""
    relative = str(path.relative_to(root))
    rows = read_rows(product, "SELECT id, tier, type, title, content, files FROM memories WHERE is_latest = 1 AND "
                     "project IS ? AND tier != 'working'", [project])
    return [r for r in rows if str(path) in r["files"] or relative in r["files"]
            or relative in r["content"] or relative in r["title"]]


def staleness(product: Agentmem, replay: ReplayDir, work: Path, before_briefing: str) -> dict[str, Any]:
    """Delete the files most memories name (and rename one more), then look at what a new session is shown."""
    project = project_id(replay)
    named = []
    for path in sorted(p for p in replay.written if p.is_file()):
        root = max((r for r in replay.mapping.values() if r == path or r in path.parents), key=lambda r: len(r.parts))
        memories = memories_naming(product, project, path, root)
        if memories:
            named.append((len(memories), str(path), path, root, memories))
    named.sort(key=lambda item: (-item[0], item[1]))
    chosen = named[:DELETE_FILES + RENAME_FILES]
    before = {}
    for _, _, path, root, _ in chosen:
        before[path] = product.search(str(path.relative_to(root)), replay.root)
    changes = []
    for n, (_, _, path, root, memories) in enumerate(chosen):
        if n < DELETE_FILES:
            path.unlink()
            changes.append({"file": str(path.relative_to(root)), "change": "deleted", "memories": memories})
        else:
            target = path.with_name(f"{path.stem}_renamed{path.suffix}")
            path.rename(target)
            changes.append({"file": str(path.relative_to(root)), "change": f"renamed to {target.name}",
                            "memories": memories})
    after_briefing, _ = new_session(product, replay.root, work / "transcripts")
    judged = []
    for (_, _, path, root, _), change in zip(chosen, changes):
        after = product.search(str(path.relative_to(root)), replay.root)
        for memory in change["memories"]:
            verdicts = {"briefing": marked_stale(briefing_line(before_briefing, memory),
                                                 briefing_line(after_briefing, memory)),
                        "search": marked_stale(hit_view(before[path], memory["id"]), hit_view(after, memory["id"]))}
            shown = [v for v in verdicts.values() if v is not None]
            judged.append({"file": change["file"], "change": change["change"], "memory": memory["id"],
                           "tier": memory["tier"], "type": memory["type"], "title": memory["title"][:120],
                           "verdicts": verdicts, "shown": bool(shown), "stale": any(shown)})
    for change in changes:
        change["memories"] = [m["id"] for m in change["memories"]]
    shown = [j for j in judged if j["shown"]]
    return {"changes": changes, "memories": judged, "memories_naming": len(judged), "shown_before": len(shown),
            "marked_stale": sum(j["stale"] for j in shown), "share": share([j["stale"] for j in shown])}


def supersede_probes(product: Agentmem, pairs_path: Path) -> dict[str, Any]:
    """Save each pair in order, each pair in a fresh project of a fresh home, through the Store API."""
    from agentmem_mcp.config import load_settings
    from agentmem_mcp.store import Store

    pairs = json.loads(pairs_path.read_text(encoding="utf-8"))
    home = Path(tempfile.mkdtemp(prefix="agentmem-supersede-"))
    results: dict[str, list[dict[str, Any]]] = {"same": [], "different": []}
    try:
        settings = load_settings(env={}, home=home, embed_model_path=product.model_path)
        with Store.open(settings, project=None, embedder=product.embedder(), sync_index=True) as store:
            for kind in ("same", "different"):
                for n, (old, new) in enumerate(pairs[kind]):
                    project = f"/supersede/{kind}/{n}"
                    first = store.save(old, project=project)
                    second = store.save(new, project=project)
                    replaced = second.action == "superseded" and second.supersedes == first.id
                    still = store.get(first.id).is_latest
                    results[kind].append({"old": old, "new": new, "action": second.action, "reason": second.reason,
                                          "superseded": replaced and not still})
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return {"pairs": results,
            "same_superseded": share([r["superseded"] for r in results["same"]]),
            "different_kept_apart": share([not r["superseded"] and r["action"] == "created"
                                           for r in results["different"]]),
            "counts": {k: len(v) for k, v in results.items()}}


# reporting ---------------------------------------------------------------------------------------

def print_report(summary: dict[str, Any], staleness_figures: dict[str, Any], supersede: dict[str, Any],
                 timing: dict[str, Any]) -> None:
    columns = [("agentmem.briefing", "briefing"), ("agentmem.search", "search@5"), ("agentmem.prompt", "prompt"),
               ("agentmem.any", "any"), ("raw_last_30.briefing", "raw-30 brief"), ("no_memory.any", "no memory")]

    def rows(groups: dict[str, dict[str, Any]]) -> list[list[Any]]:
        return [[name, g["n"], *(fmt(g[key]) for key, _ in columns)] for name, g in groups.items()]

    print("\n## Probes answered (% of probes; a channel answers when an `any` string appears in it)")
    print_table(["", "n", *(label for _, label in columns)],
                rows({"overall": summary["overall"]}) + rows(summary["by_project"]))
    print("\n## Per probe kind")
    print_table(["kind", "n", *(label for _, label in columns)], rows(summary["by_kind"]))
    silent = summary["irrelevant_silent"]
    print(f"\nirrelevant prompts with nothing injected: {fmt(silent['agentmem'])}% of {summary['irrelevant_count']} "
          f"(no memory: {fmt(silent['no_memory'])}%)")
    c = summary["contradictions"]
    print(f"contradiction checks with a wrong string shown: agentmem {c['agentmem']} of "
          f"{summary['contradiction_checks']}, raw-30 briefing {c['raw_last_30']}, no memory {c['no_memory']}")
    t = summary["tokens"]
    print("briefing tokens: " + ", ".join(f"{name} {n}" for name, n in t["briefing"].items())
          + "   (raw-30: " + ", ".join(f"{name} {n}" for name, n in t["raw_last_30"].items()) + ")")
    print(f"prompt injections: {t['injections']} prompts, {t['injections_empty']} empty, median "
          f"{t['injection_median']} tokens, max {t['injection_max']}")
    print(f"supersede probes: same-subject updates superseded {fmt(supersede['same_superseded'])}% of "
          f"{supersede['counts']['same']}, different subjects kept apart {fmt(supersede['different_kept_apart'])}% of "
          f"{supersede['counts']['different']}")
    print(f"staleness: {staleness_figures['memories_naming']} (memory, deleted or renamed file) pairs, "
          f"{staleness_figures['shown_before']} shown before the change; marked stale after it: "
          f"{staleness_figures['marked_stale']} ({fmt(staleness_figures['share'])}%)")
    print(f"timing: replay {timing['replay_seconds']:.0f} s ({timing['events']} hook events, hook p50 "
          f"{timing['hook_p50_ms']:.0f} ms), worker {timing['worker_seconds']:.0f} s, probes "
          f"{timing['probe_seconds']:.0f} s (search p50 {timing['search_p50_ms']:.0f} ms), total "
          f"{timing['wall_seconds']:.0f} s; hook problems: {timing['hook_problems'] or 'none'}")


def print_misses(projects: list[dict[str, Any]]) -> None:
    print("\n## Probes no channel answered")
    for p in projects:
        for probe in p["probes"]:
            if not probe["channels"]["agentmem"]["any"]["answered"]:
                print(f"- [{p['name']}/{probe['kind']}] {probe['q']}  (any: {', '.join(probe['any'])})")


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
        work = Path(tempfile.mkdtemp(prefix="agentmem-eval-coding-"))
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
