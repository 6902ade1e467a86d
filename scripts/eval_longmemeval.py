"""Retrieval evaluation on LongMemEval (ICLR 2025): agentmem beside plain BM25, dense and hybrid baselines.

    python scripts/eval_longmemeval.py [--data FILE] [--limit N] [--out RANKED.jsonl] [--json FIGURES.json]

For each question: a fresh store in a temporary home with default settings; every non-empty turn of
the haystack becomes one episodic memory through the real write path (`Store.save_many`), its content
"[<session date>] <role>: <text>", created at the session's date, with an opaque id of its session
(`--no-sessions` leaves it out); then the raw question goes through the real search path (`Store.search`,
with the store's clock set to the question date), and again with `fusion = rrf` on the same store
(`agentmem_rrf`). Hits map back
to turns, turns to sessions (first appearance). The baselines rank the same memories: BM25 over their
text, brute-force cosine over the very vectors agentmem stored, and their reciprocal rank fusion.

Reported: the peer protocol (recall_any@5/@10, NDCG@10, MRR at session level over all questions,
relevant = answer_session_ids) and LongMemEval's official metrics (recall_all@5/@10 and ndcg_any@5/@10
at session and user-turn level over the non-abstention questions with a relevant user turn), per
question type; what a budgeted `memory_search` answer shows of the evidence; search latency.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
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
    fmt,
    ingest_turns,
    latency_summary,
    machine_info,
    make_embedder,
    mean,
    mrr,
    ndcg,
    print_header,
    print_table,
    progress_printer,
    recall_all,
    recall_any,
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

DEFAULT_DATA = SHARED / "eval" / "longmemeval" / "longmemeval_s_dev.json"
SEARCH_LIMIT = 100
BUDGETS = (1000, 2000)
KS = (5, 10)
SYSTEMS = ("agentmem", "agentmem_rrf", "bm25", "dense", "hybrid")
LATENCIES = ("search_default", "search", "search_budgeted", "first_search")
WARM_UP_QUERY = "what did we talk about"  # a fresh store's first search also opens the retriever threads' connections
VISIBLE = 0.9  # "the evidence text is shown": at least this share of the turn's characters


@dataclass
class Turn:
    session_id: str
    index: int  # position in the session, 0-based, counting both roles (LongMemEval's turn ids use it + 1)
    role: str
    text: str
    has_answer: bool
    created_at: float

    @property
    def turn_id(self) -> str:
        return f"{self.session_id}_{self.index + 1}"


def parse_date(text: str) -> float:
    """'2023/05/20 (Sat) 02:21' -> unix time (UTC)."""
    day, _, clock = text.partition(")")
    stamp = dt.datetime.strptime(f"{day.split('(')[0].strip()} {clock.strip() or '00:00'}", "%Y/%m/%d %H:%M")
    return stamp.replace(tzinfo=dt.timezone.utc).timestamp()


def memory_content(date: str, role: str, text: str) -> str:
    """How a deployment stores one chat turn: when, who, what."""
    return f"[{date}] {role}: {text.strip()}"


def haystack_turns(item: dict[str, Any], roles: tuple[str, ...] = ("user", "assistant"),
                   ) -> tuple[list[Turn], list[str]]:
    turns, contents = [], []
    for session_id, date, session in zip(item["haystack_session_ids"], item["haystack_dates"],
                                         item["haystack_sessions"]):
        base = parse_date(date)
        for index, turn in enumerate(session):
            if not turn.get("content", "").strip() or turn["role"] not in roles:
                continue
            turns.append(Turn(session_id, index, turn["role"], turn["content"].strip(),
                              bool(turn.get("has_answer")), base + index))
            contents.append(memory_content(date, turn["role"], turn["content"]))
    return turns, contents


def relevance(item: dict[str, Any], turns: list[Turn]) -> dict[str, Any]:
    """The relevant ids of each protocol, as LongMemEval's run_retrieval.py builds them."""
    answer_turns = [t for t in turns if "answer" in t.session_id and t.has_answer]
    official_turns = [t.turn_id for t in answer_turns if t.role == "user"]
    return {
        "peer_sessions": list(item.get("answer_session_ids") or []),
        "official_sessions": unique(t.session_id for t in answer_turns if t.role == "user"),
        "official_turns": official_turns,
        "evidence": answer_turns,
        "official": not item["question_id"].endswith("_abs") and bool(official_turns),
    }


def ingest(store, turns: list[Turn], contents: list[str], sessions: bool = True,
           ) -> tuple[list[str], dict[str, list[int]], int]:
    """Save every turn (with an opaque id of its session unless `sessions` is false); returns the memory id
    of each turn (None if skipped), the turns of each memory, and how many turns were skipped as trivial.
    Identical contents collapse into one memory (the product's
    duplicate rule), so one memory can stand for several turns."""
    return ingest_turns(store, [(c, t.created_at, t.session_id) for t, c in zip(turns, contents)], sessions)


def rankings_from_memories(memory_ids: list[str], turns_of: dict[str, list[int]], turns: list[Turn]) -> dict:
    ranked_turns = [turns[p] for memory_id in memory_ids for p in turns_of.get(memory_id, [])]
    return {"sessions": unique(t.session_id for t in ranked_turns),
            "turns": unique(t.turn_id for t in ranked_turns),
            "user_turns": unique(t.turn_id for t in ranked_turns if t.role == "user")}


def score(ranking: dict[str, list[str]], rel: dict[str, Any]) -> dict[str, float]:
    sessions = ranking["sessions"]
    out = {f"peer.recall_any@{k}": recall_any(sessions, rel["peer_sessions"], k) for k in KS}
    out["peer.ndcg@10"] = ndcg(sessions, rel["peer_sessions"], 10)
    out["peer.mrr"] = mrr(sessions, rel["peer_sessions"])
    if rel["official"]:
        for level, ranked, relevant in (("session", sessions, rel["official_sessions"]),
                                        ("turn", ranking["user_turns"], rel["official_turns"])):
            for k in KS:
                out[f"{level}.recall_all@{k}"] = recall_all(ranked, relevant, k)
                out[f"{level}.ndcg_any@{k}"] = ndcg(ranked, relevant, k, variant="longmemeval")
    return out


def budget_view(store, question: str, rel: dict[str, Any], memory_of: list[str | None], turns: list[Turn],
                latencies: list[float]) -> dict[str, Any]:
    """What `memory_search` under a token budget shows of the evidence turns."""
    evidence = [turns.index(t) for t in rel["evidence"]]
    if not evidence:
        return {}
    view: dict[str, Any] = {}
    contents = {}
    for budget in BUDGETS:
        result = timed_search(store, question, latencies, limit=SEARCH_LIMIT, budget_tokens=budget)
        shown_by_id = defaultdict(list)
        for hit in result.hits:
            shown_by_id[hit.id] += [hit.title, hit.snippet]
        returned, visible = [], []
        for position in evidence:
            memory_id = memory_of[position]
            hit = memory_id in shown_by_id
            returned.append(hit)
            if not hit:
                visible.append(0.0)
                continue
            if memory_id not in contents:
                contents[memory_id] = store.get(memory_id).content
            content = contents[memory_id]
            prefix = content.find(": ") + 2
            visible.append(visible_fraction(content, (prefix, len(content)), shown_by_id[memory_id]))
        view[str(budget)] = {"returned_any": float(any(returned)), "returned_all": float(all(returned)),
                             "visible_any": float(any(v >= VISIBLE for v in visible)),
                             "visible_all": float(all(v >= VISIBLE for v in visible)),
                             "hits": len(result.hits), "tokens": result.tokens}
    return view


def evaluate_question(item: dict[str, Any], embedder, model_path: Path, now: str, roles: tuple[str, ...],
                      latencies: dict[str, list[float]], env: dict[str, str], sessions: bool = True) -> dict[str, Any]:
    turns, contents = haystack_turns(item, roles)
    rel = relevance(item, turns)
    asked_at = parse_date(item["question_date"])
    with temp_store(embedder, model_path, env=env) as store:
        if now == "question":
            store.now = lambda: asked_at  # the clock of a deployment asked on the question's date
        began = time.perf_counter()
        memory_of, turns_of, skipped = ingest(store, turns, contents, sessions)
        ingest_seconds = time.perf_counter() - began
        timed_search(store, WARM_UP_QUERY, latencies["first_search"], limit=10)

        result = timed_search(store, item["question"], latencies["search"], limit=SEARCH_LIMIT, budget_tokens=100000)
        ranked = {"agentmem": [hit.id for hit in result.hits]}
        timed_search(store, item["question"], latencies["search_default"])
        with with_settings(store, fusion="rrf"):
            ranked["agentmem_rrf"] = [hit.id for hit in store.search(
                item["question"], record_access=False, limit=SEARCH_LIMIT, budget_tokens=100000).hits]

        memory_ids = list(turns_of)
        texts = [contents[turns_of[m][0]] for m in memory_ids]
        bm25 = [memory_ids[i] for i in BM25(texts).rank(item["question"])]
        vectors, owners = store_chunk_vectors(store, memory_ids)
        query_vector = np.asarray(embedder.embed_query(item["question"]), dtype=np.float32)
        dense = [memory_ids[i] for i in DenseIndex(vectors, owners, len(memory_ids)).rank(query_vector)]
        ranked.update(bm25=bm25[:SEARCH_LIMIT], dense=dense[:SEARCH_LIMIT], hybrid=rrf([bm25, dense])[:SEARCH_LIMIT])

        budget = budget_view(store, item["question"], rel, memory_of, turns, latencies["search_budgeted"])
    rankings = {name: rankings_from_memories(ids, turns_of, turns) for name, ids in ranked.items()}
    return {
        "question_id": item["question_id"], "question_type": item["question_type"], "official": rel["official"],
        "abstention": item["question_id"].endswith("_abs"),
        "metrics": {name: score(ranking, rel) for name, ranking in rankings.items()},
        "budget": budget, "rankings": rankings, "turns": len(turns), "memories": len(turns_of),
        "skipped_turns": skipped, "ingest_seconds": ingest_seconds, "search_mode": result.mode,
    }


METRICS = ("peer.recall_any@5", "peer.recall_any@10", "peer.ndcg@10", "peer.mrr",
           "session.recall_all@5", "session.ndcg_any@5", "session.recall_all@10", "session.ndcg_any@10",
           "turn.recall_all@5", "turn.ndcg_any@5", "turn.recall_all@10", "turn.ndcg_any@10")


def aggregate(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Means per system and metric, overall and per question type (each metric over the questions it
    applies to: peer over all, official over the `official` ones)."""
    types = sorted({r["question_type"] for r in records})
    out: dict[str, Any] = {"questions": len(records), "official_questions": sum(r["official"] for r in records),
                           "systems": {}}
    for system in SYSTEMS:
        figures: dict[str, Any] = {"overall": {}, "by_type": {t: {} for t in types}}
        for metric in METRICS:
            figures["overall"][metric] = mean(r["metrics"][system][metric] for r in records
                                              if metric in r["metrics"][system])
            for t in types:
                figures["by_type"][t][metric] = mean(r["metrics"][system][metric] for r in records
                                                     if r["question_type"] == t and metric in r["metrics"][system])
        out["systems"][system] = figures
    out["by_type_counts"] = {t: {"all": sum(r["question_type"] == t for r in records),
                                 "official": sum(r["question_type"] == t and r["official"] for r in records)}
                             for t in types}
    budget: dict[str, Any] = {}
    for b in BUDGETS:
        views = [r["budget"][str(b)] for r in records if r["budget"]]
        budget[str(b)] = {key: mean(v[key] for v in views)
                          for key in ("returned_any", "returned_all", "visible_any", "visible_all", "hits", "tokens")}
        budget[str(b)]["questions"] = len(views)
    out["budget"] = budget
    return out


def print_report(summary: dict[str, Any], timing: dict[str, Any]) -> None:
    systems = summary["systems"]
    print(f"\nquestions: {summary['questions']} (official metrics over {summary['official_questions']})")
    print("\n## Peer protocol: session level, all questions, relevant = answer_session_ids (%; MRR and NDCG x100)")
    print_table(["system", "R_any@5", "R_any@10", "NDCG@10", "MRR"],
                [[s, *(fmt(systems[s]["overall"][m]) for m in METRICS[:4])] for s in SYSTEMS])
    print("\n## LongMemEval official (non-abstention questions with a relevant user turn; %, NDCG x100)")
    print_table(["system", "S R_all@5", "S ndcg@5", "S R_all@10", "S ndcg@10",
                 "T R_all@5", "T ndcg@5", "T R_all@10", "T ndcg@10"],
                [[s, *(fmt(systems[s]["overall"][m]) for m in METRICS[4:])] for s in SYSTEMS])
    print("\n## agentmem per question type")
    rows = []
    for t, counts in summary["by_type_counts"].items():
        f = systems["agentmem"]["by_type"][t]
        rows.append([t, f"{counts['all']}/{counts['official']}", fmt(f["peer.recall_any@5"]),
                     fmt(f["peer.recall_any@10"]), fmt(f["peer.ndcg@10"]), fmt(f["session.recall_all@5"]),
                     fmt(f["session.ndcg_any@5"]), fmt(f["turn.recall_all@5"]), fmt(f["turn.ndcg_any@5"])])
    print_table(["type", "n/off", "R_any@5", "R_any@10", "NDCG@10", "S R_all@5", "S ndcg@5", "T R_all@5",
                 "T ndcg@5"], rows)
    print("\n## Per question type, peer recall_any@5 / official session recall_all@5, by system")
    print_table(["type", *SYSTEMS], [[t, *(f"{fmt(systems[s]['by_type'][t]['peer.recall_any@5'])} / "
                                          f"{fmt(systems[s]['by_type'][t]['session.recall_all@5'])}" for s in SYSTEMS)]
                                     for t in summary["by_type_counts"]])
    print("\n## Evidence under a token budget (memory_search, limit 100): % of questions with evidence turns")
    print_table(["budget", "questions", "hits", "tokens", "returned any", "returned all", "text shown any",
                 "text shown all"],
                [[b, v["questions"], fmt(v["hits"], False), fmt(v["tokens"], False), fmt(v["returned_any"]),
                  fmt(v["returned_all"]), fmt(v["visible_any"]), fmt(v["visible_all"])]
                 for b, v in summary["budget"].items()])
    print(f"(text shown = at least {VISIBLE:.0%} of the evidence turn's characters appear in the returned "
          "titles/snippets; snippets are ~320 characters)")
    print("\n## Latency and throughput")
    for name in LATENCIES:
        lat = timing[name]
        print(f"{name}: n={lat['count']} p50={fmt(lat['p50_ms'], False)} ms  p95={fmt(lat['p95_ms'], False)} ms  "
              f"max={fmt(lat['max_ms'], False)} ms")
    print(f"ingest: {timing['ingest_seconds_total']:.1f} s total, {timing['ingest_seconds_per_question']:.2f} s per "
          f"question ({timing['turns_per_second']:.0f} turns/s with cached vectors)")
    print(f"embedding: {timing['embedded_chunks']} chunks computed in {timing['embed_seconds']:.1f} s "
          f"(prefill {timing['prefill_seconds']:.1f} s); wall time {timing['wall_seconds']:.1f} s")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LongMemEval JSON file (a list of questions)")
    parser.add_argument("--limit", type=int, default=None, help="evaluate only the first N questions")
    parser.add_argument("--out", type=Path, default=None, help="write ranked session and turn ids per question")
    add_run_arguments(parser)
    parser.add_argument("--now", choices=("question", "wallclock"), default="question",
                        help="the store's clock at search time: the question's date (default) or the real clock")
    parser.add_argument("--roles", choices=("all", "user"), default="all",
                        help="which turns to store: all (default) or only the user's (LongMemEval's official corpus; "
                             "7x less text to embed)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    env = setting_overrides(args.settings)
    info = machine_info()
    started = time.perf_counter()
    data = json.loads(args.data.read_text(encoding="utf-8"))
    if not isinstance(data, list) or not data or "haystack_sessions" not in data[0]:
        raise SystemExit(f"{args.data} is not a LongMemEval file (a JSON list of questions with haystack_sessions)")
    if args.limit:
        data = data[: args.limit]
    print_header(f"LongMemEval retrieval: {args.data.name}, {len(data)} questions", info)
    embedder = make_embedder(args.model_path, None if args.no_cache else args.cache_dir)

    prefill_began = time.perf_counter()
    roles = ("user",) if args.roles == "user" else ("user", "assistant")
    texts = [chunk for item in data for content in haystack_turns(item, roles)[1]
             for chunk in embedding_chunks(content)]
    computed = embedder.prefill(texts, progress_printer("embedding haystacks"))
    prefill_seconds = time.perf_counter() - prefill_began
    print(f"embeddings: {len(texts)} chunks, {computed} computed in {prefill_seconds:.1f} s", file=sys.stderr)

    latencies: dict[str, list[float]] = {name: [] for name in LATENCIES}
    records = []
    report = progress_printer("questions", 30)
    for n, item in enumerate(data, start=1):
        records.append(evaluate_question(item, embedder, args.model_path, args.now, roles, latencies, env,
                                         sessions=not args.no_sessions))
        report(n, len(data))
    embedder.cache.close()

    summary = aggregate(records)
    ingest_total = sum(r["ingest_seconds"] for r in records)
    timing = {**{name: latency_summary(values) for name, values in latencies.items()},
              "ingest_seconds_total": ingest_total, "ingest_seconds_per_question": ingest_total / len(records),
              "turns_per_second": sum(r["turns"] for r in records) / max(ingest_total, 1e-9),
              "embedded_chunks": embedder.computed, "embed_seconds": embedder.compute_seconds,
              "prefill_seconds": prefill_seconds, "wall_seconds": time.perf_counter() - started}
    print_report(summary, timing)

    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("w", encoding="utf-8") as out:
            for r in records:
                out.write(json.dumps({"question_id": r["question_id"], "question_type": r["question_type"],
                                      "ranked_session_ids": r["rankings"]["agentmem"]["sessions"][:50],
                                      "ranked_turn_ids": r["rankings"]["agentmem"]["turns"][:50],
                                      "baselines": {s: {"ranked_session_ids": r["rankings"][s]["sessions"][:50],
                                                        "ranked_turn_ids": r["rankings"][s]["turns"][:50]}
                                                    for s in SYSTEMS[1:]}}) + "\n")
    payload = {"benchmark": "longmemeval", "data": str(args.data), "run": info, "settings": vars(args),
               "summary": summary, "timing": timing,
               "questions": [{k: v for k, v in r.items() if k != "rankings"} for r in records]}
    write_json(args.json, payload)
    return payload


if __name__ == "__main__":
    main()
