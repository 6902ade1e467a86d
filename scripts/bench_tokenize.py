"""The tokenizer's fast path against the rule written plainly: the same terms, and how much faster.

    python scripts/bench_tokenize.py [--shared ../shared] [--runs 3]

Texts: every line of the shared Claude Code and SWE-agent transcripts, the turns of the first 30
LongMemEval haystacks and every LoCoMo turn. Checks that `index.tokenize.terms` gives exactly the terms
of `reference_terms` (tests/test_tokenize.py) on each text, then times both over all of them, in turn,
`--runs` times each, and reports the medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from harness import SHARED, describe_machine, utc_now

from agentmem_mcp.index.tokenize import terms
from tests.test_tokenize import reference_terms


def shared_texts(shared: Path) -> list[str]:
    texts: list[str] = []
    for path in sorted((shared / "eval" / "transcripts").rglob("*")):
        if path.is_file() and path.suffix in (".jsonl", ".traj"):
            texts += path.read_text(encoding="utf-8", errors="replace").splitlines()
    for item in json.loads((shared / "eval" / "longmemeval" / "longmemeval_s_dev.json").read_text())[:30]:
        texts += [turn["content"] for session in item["haystack_sessions"] for turn in session]
    for sample in json.loads((shared / "eval" / "locomo" / "locomo_dev.json").read_text()):
        texts += [turn.get("text", "") for value in sample["conversation"].values() if isinstance(value, list)
                  for turn in value]
    return texts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=SHARED)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    texts = shared_texts(args.shared)
    print(f"{utc_now()} | {describe_machine()}")
    print("python scripts/bench_tokenize.py " + " ".join(argv if argv is not None else sys.argv[1:]))
    different = [t for t in texts if terms(t) != reference_terms(t)]
    print(f"{len(texts):,} texts ({sum(map(len, texts)):,} characters): {len(different)} with different terms")
    seconds: dict[str, list[float]] = {"fast path": [], "plain rule": []}
    for _ in range(args.runs):
        for name, function in (("fast path", terms), ("plain rule", reference_terms)):
            began = time.perf_counter()
            for text in texts:
                function(text)
            seconds[name].append(time.perf_counter() - began)
    fast, plain = statistics.median(seconds["fast path"]), statistics.median(seconds["plain rule"])
    print(f"median of {args.runs}: fast path {fast:.2f} s, plain rule {plain:.2f} s ({plain / fast:.1f}x)")
    return 1 if different else 0


if __name__ == "__main__":
    raise SystemExit(main())
