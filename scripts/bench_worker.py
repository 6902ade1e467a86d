"""Benchmark the background worker's rules path: observations processed per second, embedding and indexing
included (what `agentmem worker --once` does after the model has loaded).

    python scripts/bench_worker.py [--observations 2000] [--runs 3] [--replay TRANSCRIPT | --replay-dir DIR]

Each run starts from a fresh home holding N pending observations (synthetic and all different by default;
with --replay, the transcript replayed into as many sessions as needed; with --replay-dir, e.g.
../shared/eval/coding, every Claude Code transcript under DIR replayed once, each its own session in its own
project, in name order: all their events, --observations ignored) and times `Worker.run_until_idle()`:
compression, one working-tier memory per observation (embedded in batches, BM25 through the outbox),
session summaries, consolidation and upkeep. It prints the median of the runs, how the time splits, the CPU the
process used (all threads: moves less than wall time with other jobs' load), the date, the machine and the
command. The model path comes from AGENTMEM_EMBED_MODEL_PATH.
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness import default_model, describe_machine

from agentmem_mcp.capture.events import HookEvent, parse_hook_event  # noqa: E402
from agentmem_mcp.capture.observations import ObservationStore, scrub  # noqa: E402
from agentmem_mcp.config import load_settings  # noqa: E402
from agentmem_mcp.index.embedder import Embedder, PassageCache  # noqa: E402
from agentmem_mcp.runtime.worker import Worker  # noqa: E402
from agentmem_mcp.store import Store  # noqa: E402

WORDS = ("parser config session render token cache handler export billing invoice user account queue retry "
         "schema migration report index search vector client server router loader writer reader").split()


class TimedEmbedder(Embedder):
    """The real embedder, keeping count of the seconds its model spends and the texts the model embeds (a text
    found in the embedder's cache of recent passages is not counted)."""

    seconds = 0.0
    texts = 0
    chars = 0

    def _embed_passages(self, texts: Any) -> Any:
        started = time.perf_counter()
        try:
            return super()._embed_passages(texts)
        finally:
            self.seconds += time.perf_counter() - started
            self.texts += len(texts)
            self.chars += sum(len(t) for t in texts)


def synthetic_events(n: int, seed: int = 7) -> list[HookEvent]:
    """N different events of one project, in sessions of 150 that end with a Stop: prompts, reads, edits,
    commands (some failing) and searches."""
    rng = random.Random(seed)
    events = []
    cwd = "/home/dev/project"
    for i in range(n):
        session = f"bench-{i // 150}"
        a, b, c = rng.sample(WORDS, 3)
        path = f"{cwd}/src/{a}/{b}_{c}_{i}.py"
        roll = rng.random()
        ev = HookEvent(client="claude-code", event="tool_use", raw_event="PostToolUse", session_id=session, cwd=cwd)
        if i % 150 == 149 or i == n - 1:
            ev.event, ev.raw_event = "stop", "Stop"
        elif roll < 0.05:
            ev.event, ev.tool = "prompt", None
            ev.prompt = f"Please make the {a} {b} handle {c} number {i} and add a test for it."
        elif roll < 0.35:
            ev.tool, ev.tool_input, ev.files = "Read", {"file_path": path}, [path]
            ev.tool_output = f"def {a}_{b}(x):\n    return {c}(x)\n\nclass {b.title()}{i}:\n    pass\n"
        elif roll < 0.6:
            ev.tool, ev.files = "Edit", [path]
            ev.tool_input = {"file_path": path, "old_string": f"def {a}_{b}(x):",
                             "new_string": f"def {a}_{c}(x, y={i}):"}
        elif roll < 0.9:
            failed = rng.random() < 0.2
            command = rng.choice(["pytest -q", "ruff check", "mypy src", "npm run build", "make test"])
            ev.tool, ev.tool_input = "Bash", {"command": f"{command} src/{a}/{b}_{c}_{i}.py"}
            ev.tool_output = (f"E   AssertionError: {a} != {b} in test_{c}_{i}\n1 failed, {i % 40} passed in 0.4s"
                              if failed else f"{i % 40 + 1} passed in 0.3s")
            ev.extra = {"exit_code": 1 if failed else 0}
        else:
            ev.tool, ev.tool_input = "Grep", {"pattern": f"{a}_{b}", "path": cwd}
            ev.tool_output = f"src/{a}/{b}.py:{i % 90}: def {a}_{b}(x):"
        events.append(ev)
    return events


def replayed_events(path: str, n: int) -> list[HookEvent]:
    """The transcript's events, replayed into new sessions until there are N."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from transcript_replay import claude_code_events

    events = []
    copy = 0
    while len(events) < n:
        for name, payload in claude_code_events(path):
            payload = {**payload, "session_id": f"{payload['session_id']}-{copy}"}
            ev = parse_hook_event("claude-code", name, payload)
            events.append(ev)
        copy += 1
    return events[:n]


def replayed_dir(directory: str) -> list[HookEvent]:
    """Every transcript under `directory` (*.jsonl, subfolders included, in name order), replayed once; a session
    resumed from an earlier one of the same folder skips the records it copied (no hook fired for them)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from transcript_replay import claude_code_timeline

    paths = sorted(Path(directory).rglob("*.jsonl"))
    if not paths:
        raise SystemExit(f"no *.jsonl transcript under {directory}")
    seen: dict[Path, set[str]] = {}
    return [parse_hook_event("claude-code", name, payload) for path in paths
            for _, name, payload in claude_code_timeline(path, seen.setdefault(path.parent, set()))]


def one_run(events: list[HookEvent], embedder: TimedEmbedder) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(env={}, home=Path(tmp) / "home")
        with Store.open(settings, project=None, embedder=embedder) as store:
            observations = ObservationStore(store.conn)
            for ev in events:
                observations.record(scrub(ev, settings.max_output_chars), ev.cwd)
            count = store.conn.execute("SELECT COUNT(*) FROM observations").fetchone()[0]
            embedder.seconds, embedder.texts, embedder.chars = 0.0, 0, 0
            embedder.passages = PassageCache()  # each run starts as a new process does: nothing embedded yet
            started, cpu = time.perf_counter(), time.process_time()
            report = Worker(store).run_until_idle()
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
            assert report.compressed == count, report.text()
            return {"observations": count, "seconds": seconds, "cpu_seconds": cpu, "embedding": embedder.seconds,
                    "embedded_texts": embedder.texts, "embedded_chars": embedder.chars,
                    "summaries": report.summaries, "consolidated": report.consolidated}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observations", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--replay", help="a Claude Code transcript to replay instead of synthetic events")
    parser.add_argument("--replay-dir", help="replay every Claude Code transcript under this folder once")
    args = parser.parse_args(argv)
    model = default_model()
    embedder = TimedEmbedder("sentence-transformers/all-MiniLM-L6-v2", model)
    if not embedder.load():
        print(f"cannot load the embedding model from {model}: {embedder.error}", file=sys.stderr)
        return 1
    if args.replay_dir:
        events = replayed_dir(args.replay_dir)
    elif args.replay:
        events = replayed_events(args.replay, args.observations)
    else:
        events = synthetic_events(args.observations)
    runs = []
    for n in range(args.runs):
        result = one_run(events, embedder)
        runs.append(result)
        print(f"run {n + 1}: {result['observations']} observations in {result['seconds']:.2f} s "
              f"({result['cpu_seconds']:.2f} s of CPU, all threads) "
              f"({result['observations'] / result['seconds']:.1f}/s; embedding {result['embedding']:.2f} s for "
              f"{result['embedded_texts']} texts of {result['embedded_chars']:,} characters, "
              f"{result['summaries']} summaries, {result['consolidated']} consolidated)", flush=True)
    median = statistics.median(r["observations"] / r["seconds"] for r in runs)
    without = statistics.median(r["observations"] / max(r["seconds"] - r["embedding"], 1e-9) for r in runs)
    print(json.dumps({
        "observations_per_second": round(median, 1),
        "observations_per_second_excluding_embedding": round(without, 1),
        "observations_per_cpu_second": round(statistics.median(r["observations"] / r["cpu_seconds"] for r in runs), 1),
        "embedding_share": round(statistics.median(r["embedding"] / r["seconds"] for r in runs), 3),
        "embedded_texts_per_second": round(statistics.median(r["embedded_texts"] / r["embedding"] for r in runs), 1),
        "embedded_texts_per_observation": round(statistics.median(r["embedded_texts"] / r["observations"]
                                                                  for r in runs), 3),
        "observations": runs[0]["observations"], "runs": len(runs),
        "source": (f"every transcript under {args.replay_dir}, once" if args.replay_dir else
                   f"replay of {args.replay}" if args.replay else "synthetic, all different"),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": describe_machine(),
        "command": " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv]),
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
