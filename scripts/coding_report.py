"""The report eval_coding.py prints: probes answered per channel, project and kind, the spread across projects, the
briefing's flagged lines, tokens, supersede, staleness and timing."""

from __future__ import annotations

from typing import Any

from harness import fmt, print_table

NAMED_KINDS = ("command", "error", "file")


def print_report(summary: dict[str, Any], staleness_figures: dict[str, Any], supersede: dict[str, Any],
                 timing: dict[str, Any]) -> None:
    columns = [("agentmem.briefing", "briefing"), ("agentmem.search", "search@5"), ("agentmem.prompt", "prompt"),
               ("agentmem.any", "any"), ("raw_last_30.briefing", "raw-30 brief"), ("no_memory.any", "no memory")]

    def rows(groups: dict[str, dict[str, Any]]) -> list[list[Any]]:
        return [[name, g["n"], *(fmt(g[key]) for key, _ in columns)] for name, g in groups.items()]

    print("\n## Probes answered (% of probes; a channel answers when an `any` string appears in it)")
    print_table(["", "n", *(label for _, label in columns)],
                rows({"overall": summary["overall"]}) + rows(summary["by_project"]))
    spread = summary["spread"]
    print("\n## Spread across projects (a rule is judged by the projects it was not written for)")
    print_table(["channel", "median", "worst", "worst project", "best", "projects under 60%"],
                [[label, fmt(spread[key]["median"]), fmt(spread[key]["worst"]), spread[key]["worst_project"],
                  fmt(spread[key]["best"]), ", ".join(spread[key]["under_60"]) or "none"]
                 for key, label in columns[:4]])
    if summary.get("held_out"):
        held = summary["held_out"]
        print(f"\nprojects held out ({', '.join(held['names'])}): " + ", ".join(
            f"{label} {fmt(held['shares'][key])}" for key, label in columns[:4])
              + "; the others: " + ", ".join(f"{label} {fmt(held['others'][key])}" for key, label in columns[:4]))
    precision = summary.get("precision")
    if precision:
        print("\n## Briefing lines against the transcripts (scripts/briefing_checks.py: the mechanical rules)")
        print_table(["project", "lines", "flagged", "clean tokens %", "misleading"],
                    [[name, r["lines"], r["flagged"], fmt(r["clean_token_share"] / 100), r["misleading"]]
                     for name, r in precision.items()])
    print("\n## Per probe kind")
    print_table(["kind", "n", *(label for _, label in columns)],
                rows(summary["by_kind"]) + rows({"+".join(NAMED_KINDS): summary["named"]}))
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
