"""Retrieval evaluation on LoCoMo (ACL 2024): agentmem beside plain BM25, dense and hybrid baselines.

    python scripts/eval_locomo.py [--data FILE] [--limit N] [--out RANKED.jsonl] [--json FIGURES.json]

Per conversation one fresh store (default settings, temporary home); every turn becomes one episodic
memory through the real write path, its content "[<session date>] <speaker>: <text>" (plus
"[shared a photo: <caption>]" when the turn shared an image), created at the session's date, with an
opaque id of its session (`--no-sessions` leaves it out). Each question of categories 1-4 goes through
the real search path, and again with `fusion = rrf` on the same store (`agentmem_rrf`); hits map back
to dia_ids and sessions.
Reported, overall and per category: LoCoMo's evidence recall at turn level (share of evidence dia_ids
among the top k turns) and session level (share whose session is among the top k sessions) for
k = 5, 10, 25; what a budgeted `memory_search` answer shows of the evidence; search latency.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from eval_common import (
    BM25,
    SHARED,
    DenseIndex,
    add_run_arguments,
    embedding_chunks,
    evidence_recall,
    fmt,
    ingest_turns,
    latency_summary,
    machine_info,
    make_embedder,
    mean,
    print_header,
    print_table,
    progress_printer,
    rrf,
    setting_overrides,
    store_chunk_vectors,
    temp_store,
    timed_search,
    unique,
    visible_fraction,
    with_settings,
    write_json,
)

DEFAULT_DATA = SHARED / "eval" / "locomo" / "locomo_dev.json"
SEARCH_LIMIT = 100
BUDGETS = (1000, 2000)
KS = (5, 10, 25)
CATEGORIES = (1, 2, 3, 4)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
SYSTEMS = ("agentmem", "agentmem_rrf", "bm25", "dense", "hybrid")
VISIBLE = 0.9
LATENCIES = ("search_default", "search", "search_budgeted", "first_search")
WARM_UP_QUERY = "what did we talk about"  # a fresh store's first search also opens the retriever threads' connections
_DIA = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


@dataclass
class Turn:
    dia_id: str
    session: str
    speaker: str
    content: str
    created_at: float


def normalize_dia(raw: str) -> list[str]:
    """Evidence strings, repaired: 'D8:6; D9:17' -> two ids, 'D:11:26' -> 'D11:26', 'D' -> none."""
    return [f"D{int(a)}:{int(b)}" for a, b in _DIA.findall(str(raw))]


def parse_date(text: str) -> float:
    """'1:56 pm on 8 May, 2023' -> unix time (UTC)."""
    stamp = dt.datetime.strptime(" ".join(text.replace(",", "").split()), "%I:%M %p on %d %B %Y")
    return stamp.replace(tzinfo=dt.timezone.utc).timestamp()


def memory_content(date: str, speaker: str, text: str, caption: str | None) -> str:
    photo = f" [shared a photo: {caption.strip()}]" if caption and caption.strip() else ""
    return f"[{date}] {speaker}: {text.strip()}{photo}"


def conversation_turns(sample: dict[str, Any]) -> list[Turn]:
    conversation = sample["conversation"]
    numbers = sorted(int(m.group(1)) for key in conversation
                     if (m := re.fullmatch(r"session_(\d+)", key)) and isinstance(conversation[key], list))
    turns = []
    for number in numbers:
        date = conversation.get(f"session_{number}_date_time", "")
        base = parse_date(date) if date else 0.0
        for index, turn in enumerate(conversation[f"session_{number}"]):
            ids = normalize_dia(turn.get("dia_id", ""))
            if not ids or not (turn.get("text") or turn.get("blip_caption")):
                continue
            turns.append(Turn(ids[0], f"D{number}", turn.get("speaker", "?"),
                              memory_content(date, turn.get("speaker", "?"), turn.get("text", ""),
                                             turn.get("blip_caption")), base + index))
    return turns


def questions(sample: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for n, qa in enumerate(sample["qa"]):
        if qa.get("category") not in CATEGORIES:
            continue
        evidence = unique(e for raw in qa.get("evidence") or [] for e in normalize_dia(raw))
        out.append({"index": n, "question": str(qa["question"]), "category": qa["category"], "evidence": evidence})
    return out


def ingest(store, turns: list[Turn], sessions: bool = True) -> tuple[list[str | None], dict[str, list[int]], int]:
    """Save every turn (with an opaque id of its session unless `sessions` is false); returns the memory id of
    each turn (None if skipped), the turns of each memory, and how many turns were skipped as trivial."""
    return ingest_turns(store, [(t.content, t.created_at, t.session) for t in turns], sessions)


def score(dia_ranking: list[str], evidence: list[str], session_of: dict[str, str]) -> dict[str, float]:
    sessions = unique(session_of[d] for d in dia_ranking)
    evidence_sessions = [session_of.get(e, e.split(":")[0]) for e in evidence]
    out = {}
    for k in KS:
        out[f"turn@{k}"] = evidence_recall(dia_ranking, evidence, k)
        top = set(sessions[:k])
        out[f"session@{k}"] = (sum(1 for s in evidence_sessions if s in top) / len(evidence_sessions)
                               if evidence_sessions else 1.0)
    return out


def session_misses(dia_ranking: list[str], evidence: list[str], session_of: dict[str, str], k: int = 10,
                   depth: int = 50) -> dict[str, int]:
    """The question's evidence sessions outside the top k sessions, and how many of those have no turn
    at all among the top `depth` turns (not found, as against found but ranked too low)."""
    sessions = unique(session_of[d] for d in dia_ranking)
    top = set(sessions[:k])
    reached = {session_of[d] for d in dia_ranking[:depth]}
    missed = [s for s in unique(session_of.get(e, e.split(":")[0]) for e in evidence) if s not in top]
    return {"missed": len(missed), "absent": sum(1 for s in missed if s not in reached)}


def budget_view(store, question: str, evidence: list[str], memory_by_dia: dict[str, str],
                latencies: list[float]) -> dict[str, Any]:
    targets = [memory_by_dia[e] for e in evidence if e in memory_by_dia]
    if not targets:
        return {}
    view = {}
    contents: dict[str, str] = {}
    for budget in BUDGETS:
        result = timed_search(store, question, latencies, limit=SEARCH_LIMIT, budget_tokens=budget)
        shown = defaultdict(list)
        for hit in result.hits:
            shown[hit.id] += [hit.title, hit.snippet]
        returned, visible = [], []
        for memory_id in targets:
            returned.append(memory_id in shown)
            if memory_id not in shown:
                visible.append(0.0)
                continue
            if memory_id not in contents:
                contents[memory_id] = store.get(memory_id).content
            content = contents[memory_id]
            visible.append(visible_fraction(content, (content.find("] ") + 2, len(content)), shown[memory_id]))
        view[str(budget)] = {"returned_any": float(any(returned)), "returned_all": float(all(returned)),
                             "visible_any": float(any(v >= VISIBLE for v in visible)),
                             "visible_all": float(all(v >= VISIBLE for v in visible)),
                             "hits": len(result.hits), "tokens": result.tokens}
    return view


def evaluate_conversation(sample: dict[str, Any], embedder, model_path: Path, now: str,
                          latencies: dict[str, list[float]], env: dict[str, str],
                          sessions: bool = True) -> tuple[list[dict], dict]:
    turns = conversation_turns(sample)
    session_of = {t.dia_id: t.session for t in turns}
    records = []
    with temp_store(embedder, model_path, env=env) as store:
        if now == "last-session":
            last = max(t.created_at for t in turns) + 86400
            store.now = lambda: last
        began = time.perf_counter()
        memory_of, turns_of, skipped = ingest(store, turns, sessions)
        ingest_seconds = time.perf_counter() - began
        timed_search(store, WARM_UP_QUERY, latencies["first_search"], limit=10)
        memory_ids = list(turns_of)
        memory_by_dia = {t.dia_id: m for t, m in zip(turns, memory_of) if m is not None}
        bm25 = BM25([turns[turns_of[m][0]].content for m in memory_ids])
        vectors, owners = store_chunk_vectors(store, memory_ids)
        dense_index = DenseIndex(vectors, owners, len(memory_ids))
        for qa in questions(sample):
            result = timed_search(store, qa["question"], latencies["search"], limit=SEARCH_LIMIT,
                                  budget_tokens=100000)
            ranked = {"agentmem": [hit.id for hit in result.hits]}
            timed_search(store, qa["question"], latencies["search_default"])
            with with_settings(store, fusion="rrf"):
                ranked["agentmem_rrf"] = [hit.id for hit in store.search(
                    qa["question"], record_access=False, limit=SEARCH_LIMIT, budget_tokens=100000).hits]
            lexical = [memory_ids[i] for i in bm25.rank(qa["question"])]
            query_vector = np.asarray(embedder.embed_query(qa["question"]), dtype=np.float32)
            dense = [memory_ids[i] for i in dense_index.rank(query_vector)]
            ranked.update(bm25=lexical[:SEARCH_LIMIT], dense=dense[:SEARCH_LIMIT],
                          hybrid=rrf([lexical, dense])[:SEARCH_LIMIT])
            dia_rankings = {name: unique(turns[p].dia_id for m in ids for p in turns_of.get(m, []))
                            for name, ids in ranked.items()}
            records.append({
                "sample_id": sample.get("sample_id"), "qa_index": qa["index"], "category": qa["category"],
                "evidence": qa["evidence"],
                "metrics": {name: score(r, qa["evidence"], session_of) for name, r in dia_rankings.items()},
                "session_misses": session_misses(dia_rankings["agentmem"], qa["evidence"], session_of),
                "budget": budget_view(store, qa["question"], qa["evidence"], memory_by_dia,
                                      latencies["search_budgeted"]),
                "ranked_dia_ids": dia_rankings,
            })
    return records, {"sample_id": sample.get("sample_id"), "turns": len(turns), "memories": len(turns_of),
                     "skipped_turns": skipped, "ingest_seconds": ingest_seconds, "questions": len(records)}


METRICS = tuple(f"{level}@{k}" for level in ("turn", "session") for k in KS)


def aggregate(records: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"questions": len(records),
                           "by_category_counts": {c: sum(r["category"] == c for r in records) for c in CATEGORIES},
                           "systems": {}}
    for system in SYSTEMS:
        out["systems"][system] = {
            "overall": {m: mean(r["metrics"][system][m] for r in records) for m in METRICS},
            "by_category": {c: {m: mean(r["metrics"][system][m] for r in records if r["category"] == c)
                                for m in METRICS} for c in CATEGORIES},
        }
    budget = {}
    for b in BUDGETS:
        views = [r["budget"][str(b)] for r in records if r["budget"]]
        budget[str(b)] = {key: mean(v[key] for v in views)
                          for key in ("returned_any", "returned_all", "visible_any", "visible_all", "hits", "tokens")}
        budget[str(b)]["questions"] = len(views)
    out["budget"] = budget
    out["session_misses"] = {key: sum(r["session_misses"][key] for r in records) for key in ("missed", "absent")}
    return out


def print_report(summary: dict[str, Any], timing: dict[str, Any]) -> None:
    systems = summary["systems"]
    print(f"\nquestions: {summary['questions']} (categories 1-4)")
    print("\n## Evidence recall, categories 1-4 (%)")
    print_table(["system", *METRICS], [[s, *(fmt(systems[s]["overall"][m]) for m in METRICS)] for s in SYSTEMS])
    print("\n## agentmem per category (%)")
    print_table(["category", "n", *METRICS],
                [[f"{c} {CATEGORY_NAMES[c]}", summary["by_category_counts"][c],
                  *(fmt(systems["agentmem"]["by_category"][c][m]) for m in METRICS)] for c in CATEGORIES])
    print("\n## Per category, turn@10 / session@10 by system (%)")
    print_table(["category", *SYSTEMS],
                [[f"{c} {CATEGORY_NAMES[c]}", *(f"{fmt(systems[s]['by_category'][c]['turn@10'])} / "
                                                f"{fmt(systems[s]['by_category'][c]['session@10'])}" for s in SYSTEMS)]
                 for c in CATEGORIES])
    misses = summary["session_misses"]
    print(f"agentmem session@10 misses: {misses['missed']} evidence sessions (question by question), "
          f"{misses['absent']} of them with no turn among the top 50 turns")
    print("\n## Evidence under a token budget (memory_search, limit 100): % of questions")
    print_table(["budget", "questions", "hits", "tokens", "returned any", "returned all", "text shown any",
                 "text shown all"],
                [[b, v["questions"], fmt(v["hits"], False), fmt(v["tokens"], False), fmt(v["returned_any"]),
                  fmt(v["returned_all"]), fmt(v["visible_any"]), fmt(v["visible_all"])]
                 for b, v in summary["budget"].items()])
    print(f"(text shown = at least {VISIBLE:.0%} of the evidence turn's characters appear in the returned "
          "titles/snippets)")
    print("\n## Latency and throughput")
    for name in LATENCIES:
        lat = timing[name]
        print(f"{name}: n={lat['count']} p50={fmt(lat['p50_ms'], False)} ms  p95={fmt(lat['p95_ms'], False)} ms  "
              f"max={fmt(lat['max_ms'], False)} ms")
    print(f"ingest: {timing['ingest_seconds_total']:.1f} s for {timing['turns']} turns; embedding: "
          f"{timing['embedded_chunks']} chunks computed in {timing['embed_seconds']:.1f} s; "
          f"wall time {timing['wall_seconds']:.1f} s")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo JSON file (a list of conversations)")
    parser.add_argument("--limit", type=int, default=None, help="evaluate only the first N conversations")
    parser.add_argument("--out", type=Path, default=None, help="write the ranked dia_ids per question")
    add_run_arguments(parser)
    parser.add_argument("--now", choices=("wallclock", "last-session"), default="wallclock",
                        help="the store's clock at search time (LoCoMo questions carry no date)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    env = setting_overrides(args.settings)
    info = machine_info()
    started = time.perf_counter()
    data = json.loads(args.data.read_text(encoding="utf-8"))
    if not isinstance(data, list) or not data or "conversation" not in data[0]:
        raise SystemExit(f"{args.data} is not a LoCoMo file (a JSON list of samples with a conversation)")
    if args.limit:
        data = data[: args.limit]
    print_header(f"LoCoMo retrieval: {args.data.name}, {len(data)} conversations", info)
    embedder = make_embedder(args.model_path, None if args.no_cache else args.cache_dir)
    texts = [chunk for sample in data for turn in conversation_turns(sample)
             for chunk in embedding_chunks(turn.content)]
    embedder.prefill(texts, progress_printer("embedding conversations"))

    latencies: dict[str, list[float]] = {name: [] for name in LATENCIES}
    records, conversations = [], []
    for sample in data:
        found, stats = evaluate_conversation(sample, embedder, args.model_path, args.now, latencies, env,
                                             sessions=not args.no_sessions)
        records += found
        conversations.append(stats)
        print(f"  {stats['sample_id']}: {stats['turns']} turns, {stats['questions']} questions", file=sys.stderr)
    embedder.cache.close()

    summary = aggregate(records)
    timing = {**{name: latency_summary(values) for name, values in latencies.items()},
              "ingest_seconds_total": sum(c["ingest_seconds"] for c in conversations),
              "turns": sum(c["turns"] for c in conversations), "embedded_chunks": embedder.computed,
              "embed_seconds": embedder.compute_seconds, "wall_seconds": time.perf_counter() - started}
    print_report(summary, timing)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("w", encoding="utf-8") as out:
            for r in records:
                out.write(json.dumps({"sample_id": r["sample_id"], "qa_index": r["qa_index"],
                                      "category": r["category"], "evidence": r["evidence"],
                                      "ranked_dia_ids": r["ranked_dia_ids"]["agentmem"][:50],
                                      "baselines": {s: r["ranked_dia_ids"][s][:50] for s in SYSTEMS[1:]}}) + "\n")
    payload = {"benchmark": "locomo", "data": str(args.data), "run": info, "settings": vars(args),
               "summary": summary, "timing": timing, "conversations": conversations,
               "questions": [{k: v for k, v in r.items() if k != "ranked_dia_ids"} for r in records]}
    write_json(args.json, payload)
    return payload


if __name__ == "__main__":
    main()
