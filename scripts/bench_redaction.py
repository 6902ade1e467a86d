"""Measure secret redaction: recall on the fake-secret corpus, false positives on ordinary code, speed.

    /work/venv/bin/python scripts/bench_redaction.py [--transcripts DIR] [--scan DIR] [--runs N]

--transcripts (default ../shared/eval/transcripts when present) also counts what redaction changes in
real Claude Code / SWE-agent transcripts; --scan counts findings in a source tree (e.g. site-packages).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from harness import REPO as ROOT

from agentmem_mcp.capture.redact import redact
from agentmem_mcp.capture.secret_scan import find_secrets
from tests.secrets_corpus import ORDINARY_TEXTS, SECRET_CASES


def recall() -> None:
    caught: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for case in SECRET_CASES:
        total[case.kind] += 1
        caught[case.kind] += case.secret not in redact(case.context)
    print(f"recall: {sum(caught.values())}/{len(SECRET_CASES)} secrets caught, {len(total)} kinds")
    for kind in sorted(total):
        mark = "" if caught[kind] == total[kind] else "   <-- missed"
        print(f"  {kind:24s} {caught[kind]}/{total[kind]}{mark}")


def false_positives(texts: dict[str, str], label: str, show: int = 10) -> None:
    tokens = flagged = changed = 0
    kinds: Counter[str] = Counter()
    examples = []
    for name, text in texts.items():
        findings = find_secrets(text)
        tokens += len(text.split())
        changed += bool(findings)
        for f in findings:
            kinds[f.kind] += 1
            flagged += len(text[f.start : f.end].split()) or 1
            examples.append((name, f.kind, text[f.start : f.end][:60]))
    rate = flagged / tokens if tokens else 0.0
    print(
        f"false positives ({label}): {flagged}/{tokens} tokens redacted ({rate:.4%}), "
        f"{changed}/{len(texts)} texts changed, by kind {dict(kinds) or '{}'}"
    )
    for name, kind, snippet in examples[:show]:
        print(f"  {name[:50]:50s} {kind:18s} {snippet!r}")


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def transcript_texts(folder: Path) -> dict[str, str]:
    texts: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        if path.suffix == ".jsonl":
            records = []
            for line in path.read_text().splitlines():
                try:
                    records.append(json.loads(line))
                except ValueError:  # a line cut short where the session was copied
                    continue
            records = [r for r in records if isinstance(r, dict)]
            parts = [s for r in records for s in _strings([r.get("message"), r.get("toolUseResult")])]
        elif path.suffix == ".traj":
            parts = list(_strings(json.loads(path.read_text())))
        else:
            continue
        for i, part in enumerate(dict.fromkeys(parts)):
            if len(part) > 20:
                texts[f"{path.name}#{i}"] = part
    return texts


def source_texts(folder: Path, limit: int = 4000) -> dict[str, str]:
    suffixes = {".py", ".js", ".ts", ".json", ".md", ".toml", ".yaml", ".yml", ".txt", ".cfg", ".lock"}
    texts = {}
    for dirpath, _, files in os.walk(folder):
        for name in sorted(files):
            path = Path(dirpath, name)
            if path.suffix in suffixes and len(texts) < limit:
                texts[str(path.relative_to(folder))] = path.read_text(errors="replace")[:200_000]
    return texts


def realistic_payload(size: int) -> str:
    """Tool output as a hook sees it: mostly ordinary text with a secret now and then."""
    chunks = []
    secrets = iter(SECRET_CASES[::5])
    for i, text in enumerate(ORDINARY_TEXTS.values()):
        chunks.append(text)
        if i % 4 == 3:
            chunks.append(next(secrets).context)
    text = "\n".join(chunks)
    return (text * (size // len(text) + 1))[:size]


def timing(runs: int) -> None:
    for label, size, n in (("8 kB", 8192, runs), ("1 MB", 1_000_000, max(3, runs // 20))):
        payload = realistic_payload(size)
        samples = []
        for _ in range(n):
            start = time.perf_counter()
            redact(payload)
            samples.append(time.perf_counter() - start)
        print(
            f"redact() on {label} realistic payload: median {statistics.median(samples) * 1000:.2f} ms, "
            f"min {min(samples) * 1000:.2f} ms over {n} runs"
        )
    clean = "\n".join(ORDINARY_TEXTS.values())[:8192]
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        redact(clean)
        samples.append(time.perf_counter() - start)
    print(f"redact() on 8 kB with no secret: median {statistics.median(samples) * 1000:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transcripts", type=Path, default=ROOT.parent / "shared" / "eval" / "transcripts")
    parser.add_argument("--scan", type=Path, help="a source tree to count findings in")
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()

    recall()
    print()
    false_positives(ORDINARY_TEXTS, "ordinary-code corpus")
    if args.transcripts.is_dir():
        false_positives(transcript_texts(args.transcripts), f"transcripts in {args.transcripts}")
    if args.scan:
        false_positives(source_texts(args.scan), f"source tree {args.scan}", show=25)
    print()
    timing(args.runs)


if __name__ == "__main__":
    main()
