"""The two checks of `eval_coding.py` that are not probes of the replayed sessions: staleness (do memories whose
file was deleted or renamed get marked?) and supersede pairs (does a same-subject update replace the old statement,
and are different subjects kept apart?).

`marked_stale` is the verdict for one memory in one channel; adapt it (and STALE_MARKER) to what the product
prints once it has staleness.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from coding_replay import Agentmem, ReplayDir, new_session

SEARCH_K = 5
DELETE_FILES = 3  # per project: the files most memories name are deleted, the next one renamed
RENAME_FILES = 1


def share(values: list[bool]) -> float | None:
    return sum(values) / len(values) if values else None


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


def memories_naming(product: Agentmem, project: str, path: Path, root: Path) -> list[dict[str, Any]]:
    """Latest memories of the project (not the working tier: raw events) whose files, title or text name `path`."""
    relative = str(path.relative_to(root))
    rows = product.rows("SELECT id, tier, type, title, content, files FROM memories WHERE is_latest = 1 AND "
                        "project IS ? AND tier != 'working'", [project])
    return [r for r in rows if str(path) in r["files"] or relative in r["files"]
            or relative in r["content"] or relative in r["title"]]


def staleness(product: Agentmem, replay: ReplayDir, work: Path, before_briefing: str) -> dict[str, Any]:
    """Delete the files most memories name (and rename one more), then look at what a new session is shown."""
    project = replay.project_id()
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
