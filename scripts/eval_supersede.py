"""How well "supersede only the same subject" works, on the probe set in tests/supersede_probes.json.

    python scripts/eval_supersede.py            # the pure rule (lifecycle.supersede.decide)
    python scripts/eval_supersede.py --store    # and end to end: each pair saved into a real store

Prints, per kind of pair, the share that came out right: same_subject pairs superseded, different_subject
pairs kept apart (both latest), conflict pairs kept apart (and, with the pure rule, called a conflict).
--store saves each pair's two statements as the user, in a project of its own, in a fresh home (the real
SQLite, tantivy, sqlite-vec and model: set AGENTMEM_EMBED_MODEL_PATH), and reads the save's action, so the
candidate search (BM25 + vectors) and the rewording check count too. --verbose lists every miss.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from harness import REPO

PROBES = REPO / "tests" / "supersede_probes.json"
WANTED = {"same_subject": "supersede", "different_subject": "apart", "conflict": "apart"}


def rule_outcomes(probes: dict) -> dict[str, list[tuple[list[str], str, str]]]:
    """(pair, outcome, reason) per kind, from the pure rule: outcome is supersede, conflict or apart."""
    from agentmem_mcp.lifecycle.supersede import decide

    out: dict[str, list[tuple[list[str], str, str]]] = {}
    for kind in WANTED:
        out[kind] = []
        for pair in probes[kind]:
            verdict = decide(*pair)
            out[kind].append((pair, verdict.kind or "apart", verdict.reason))
    return out


def store_outcomes(probes: dict) -> dict[str, list[tuple[list[str], str, str]]]:
    """(pair, outcome, reason) per kind, from saving each pair into a real store."""
    from agentmem_mcp.config import load_settings
    from agentmem_mcp.store import Store

    out: dict[str, list[tuple[list[str], str, str]]] = {}
    with tempfile.TemporaryDirectory() as home:
        settings = load_settings(home=Path(home))
        with Store.open(settings, project=None, sync_index=True) as store:
            for kind in WANTED:
                out[kind] = []
                for number, (old, new) in enumerate(probes[kind]):
                    project = f"/probe/{kind}/{number}"
                    store.save(old, project=project, source="user")
                    result = store.save(new, project=project, source="user")
                    outcome = "supersede" if result.action == "superseded" else \
                        "conflict" if getattr(result, "conflicts_with", None) else "apart"
                    out[kind].append(([old, new], outcome, result.reason))
    return out


def report(name: str, outcomes: dict[str, list[tuple[list[str], str, str]]], verbose: bool) -> None:
    print(f"## {name}")
    for kind, rows in outcomes.items():
        wanted = WANTED[kind]
        right = sum((outcome == "supersede") == (wanted == "supersede") for _, outcome, _ in rows)
        extra = ""
        if kind == "conflict":
            extra = f", {sum(o == 'conflict' for _, o, _ in rows)}/{len(rows)} recorded as a conflict"
        label = "superseded" if wanted == "supersede" else "kept apart"
        print(f"{kind:18} {right}/{len(rows)} {label} ({100 * right / len(rows):.1f}%){extra}")
        if verbose:
            for (old, new), outcome, reason in rows:
                if (outcome == "supersede") != (wanted == "supersede"):
                    print(f"    miss: {old!r} -> {new!r}: {outcome} ({reason})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", action="store_true", help="also save each pair into a real store")
    parser.add_argument("--verbose", action="store_true", help="list every miss")
    args = parser.parse_args()
    probes = json.loads(PROBES.read_text(encoding="utf-8"))
    print(f"probe set: {PROBES.relative_to(REPO)}: " + ", ".join(f"{len(probes[k])} {k}" for k in WANTED))
    report("the rule (lifecycle.supersede.decide)", rule_outcomes(probes), args.verbose)
    if args.store:
        report("end to end (Store.save as the user, real indexes and model)", store_outcomes(probes), args.verbose)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
