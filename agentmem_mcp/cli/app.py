"""The `agentmem` command: a thin layer over the library. Heavy imports happen inside each command,
so `agentmem hook` stays fast."""

from __future__ import annotations

import os
import sys

from .common import _open, _print_json, _ProgressBars  # noqa: F401 (tests use _ProgressBars)

TYPE_CHECKING = False  # `agentmem hook` starts here: importing typing would cost it ~5 ms
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence


def cmd_save(args: argparse.Namespace) -> int:
    from ..lifecycle.remember import SaveRequest
    from .user import save_source

    source, notes = save_source(args)
    content = sys.stdin.read() if args.content == "-" else args.content
    with _open(args) as store:
        result = store.save(SaveRequest(
            content, title=args.title, type=args.type, tier=args.tier, project=store.project, tags=args.tag,
            files=args.file, importance=args.importance, priority=args.priority, ttl_days=args.ttl_days,
            supersedes=args.supersedes, source=source, pinned=args.pin))
    result.notes = [*notes, *result.notes]
    if args.json:
        _print_json(result.to_dict())
    else:
        extra = f" (supersedes {result.supersedes}: {result.reason})" if result.supersedes else ""
        print(f"{result.action} {result.id} v{result.version}{extra}")
        for note in result.notes:
            print(f"  note: {note}")
    return 0


def cmd_pin(args: argparse.Namespace) -> int:
    from ..lifecycle.confirm import pin
    from .common import require_user

    held = "".join(f", {w}" for w, on in (("P0", args.priority == "P0"), ("in every project", args.make_global)) if on)
    require_user(args, f"take the pin off {args.id}" if args.unpin else f"confirm {args.id} as yours: pinned{held}")
    with _open(args, load_embedder=args.make_global) as store:
        memory = pin(store, args.id, priority=args.priority, make_global=args.make_global, unpin=args.unpin)
    state = "unpinned" if args.unpin else "pinned"
    print(f"{state} {memory.id} [{memory.type}] {memory.title} ({memory.priority}, "
          f"{'global' if memory.project is None else 'project ' + memory.project})")
    return 0


def cmd_quarantine(args: argparse.Namespace) -> int:
    from ..lifecycle import confirm

    with _open(args, load_embedder=False) as store:
        if args.action == "list":
            memories = confirm.quarantined(store, all_projects=args.all_projects)
            if args.json:
                _print_json([m.to_dict() for m in memories])
                return 0
            from ..trust.policy import neutralize

            if not memories:
                print("no quarantined memories")
            for memory in memories:
                text = neutralize(" ".join(memory.content.split()))
                print(f"{memory.id} [{memory.type}/{memory.tier}] from {memory.source}: {memory.quarantined}")
                print(f"    {text[:300]}{'…' if len(text) > 300 else ''}")
            return 0
        if not args.id:
            print(f"agentmem quarantine {args.action} needs a memory id", file=sys.stderr)
            return 2
        from .common import require_user

        if args.action == "release":
            require_user(args, f"release {args.id} from quarantine: it is searched and injected again")
            memory = confirm.release(store, args.id)
            print(f"released {memory.id}: it is searched and injected again")
        else:
            from .user import confirm_forget

            confirm_forget(args, store, [args.id])
            result = confirm.forget_quarantined(store, args.id)
            print(f"forgot {result.count} memories")
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    from ..runtime.search_client import remote_search

    search = {"query": args.query, "all_projects": args.all_projects, "types": args.type, "tiers": args.tier,
              "limit": args.limit, "budget_tokens": args.budget, "include_history": args.history,
              "min_confidence": args.min_confidence}
    answer = remote_search(search, project=args.project, global_=args.global_)  # the shared process's model
    if answer is None:
        with _open(args) as store:
            from ..models import SearchRequest

            result = store.search(SearchRequest(**search)).to_dict()
    elif not answer["ok"]:
        from ..models import InvalidInput

        raise InvalidInput(answer["error"])
    else:
        result = answer["result"]
    if args.json:
        _print_json(result)
        return 0
    for note in result["notes"]:
        print(f"note: {note}", file=sys.stderr)
    if not result["hits"]:
        print("no matching memories")
    for hit in result["hits"]:
        print(f"{hit['id']}  [{hit['type']}] {hit['title']}  ({hit['age']}, score {hit['score']:.2f})")
        print(f"    {hit['snippet']}")
        print(f"    why: {hit['why']}")
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    with _open(args, load_embedder=False) as store:
        memories = store.history(args.id) if args.history else [store.get(args.id)]
    if args.json:
        _print_json([m.to_dict() for m in memories] if args.history else memories[0].to_dict())
        return 0
    for memory in memories:
        marker = "" if memory.is_latest else " (superseded)"
        print(f"{memory.id} v{memory.version}{marker} [{memory.type}/{memory.tier}] {memory.title}")
        print(f"  project: {memory.project or 'global'}  confidence {memory.confidence:.2f}  "
              f"importance {memory.importance:.2f}  {memory.priority}  accessed {memory.access_count}x")
        print("  " + memory.content.replace("\n", "\n  "))
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    if args.strategy and not args.all_projects:
        from .commands import forget_by_strategy_in_project

        return forget_by_strategy_in_project(args)
    if args.strategy:
        from ..lifecycle.sweep import SweepRequest, sweep

        asked = SweepRequest(strategy=args.strategy, dry_run=args.dry_run or not args.yes, threshold=args.threshold,
                             max_deletions=args.max_deletions)
        with _open(args, load_embedder=False) as store:
            if not asked.dry_run:
                from dataclasses import replace

                from .user import confirm_forget, removals

                confirm_forget(args, store, removals(sweep(store, replace(asked, dry_run=True)).entries()))
            report = sweep(store, asked)
        if args.json:
            _print_json(report.to_dict())
        else:
            from .views import sweep_table

            table = sweep_table(report.entries(), dry_run=report.dry_run, show_keeps=args.show_keeps, scope=None)
            if table:
                print(table)
            print(report.summary())
            if report.dry_run and not args.dry_run:
                print("nothing was deleted; add --yes to run this sweep")
        return 0
    by_filter = not args.ids and not args.session
    if sum([bool(args.ids), args.session is not None,
            any(value is not None for value in (args.type, args.tier, args.older_than_days))]) != 1:
        from ..models import InvalidInput

        raise InvalidInput("say what to forget, one of: memory ids, --session ID, a filter (--type, --tier, "
                           "--older-than-days), or --strategy NAME")
    dry_run = args.dry_run or (by_filter and not args.yes)
    reason = args.reason or "forgotten from the command line"
    with _open(args, load_embedder=False) as store:
        from dataclasses import replace

        from ..lifecycle.forget import ForgetRequest, forget_session
        from ..upkeep.maintenance import erase_forgotten

        asked = ForgetRequest(ids=args.ids or None, session_id=args.session, type=args.type, tier=args.tier,
                              older_than_days=args.older_than_days, all_projects=args.all_projects)
        derived: list[str] = []
        if not dry_run:
            from .user import confirm_forget

            preview = store.forget(replace(asked, dry_run=True))
            confirm_forget(args, store, preview.ids)
        if args.session and not dry_run and not args.ids and (
                args.type, args.tier, args.older_than_days) == (None, None, None):
            result, derived = forget_session(store, args.session, reason)
        else:
            result = store.forget(replace(asked, dry_run=dry_run, reason=reason))
        if not result.dry_run and (result.count or result.observations):
            erased = erase_forgotten(store, memories_deleted=bool(result.count or derived))
            if erased.busy_readers:
                print("note: another agentmem process is reading the database, so its write-ahead log still holds "
                      "the forgotten text; it is emptied at the next checkpoint", file=sys.stderr)
    if args.json:
        _print_json(result.to_dict())
        return 0
    verb = "would forget" if result.dry_run else "forgot"
    print(f"{verb} {result.count} memories" + (f" and {result.observations} observations"
                                               if result.observations else "")
          + (f", and {len(derived)} memories derived from them" if derived else ""))
    for memory in result.memories[:50]:
        print(f"  {memory['id']} v{memory['version']} [{memory['type']}] {memory['title']}")
    if result.dry_run and by_filter:
        print("nothing was deleted; add --yes to forget these")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    with _open(args, load_embedder=False) as store:
        data = store.stats(all_projects=args.all_projects)
    if args.json:
        _print_json(data)
        return 0
    from ..upkeep.stats import format_stats

    print(format_stats(data))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from ..upkeep.transfer import export

    with _open(args, load_embedder=False) as store:
        if args.out in (None, "-"):
            count = export(store, sys.stdout, all_projects=args.all_projects)
        else:
            old = os.umask(0o077)
            try:
                with open(args.out, "w", encoding="utf-8") as out:
                    count = export(store, out, all_projects=args.all_projects)
            finally:
                os.umask(old)
    print(f"exported {count} records", file=sys.stderr)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from ..models import InvalidInput
    from ..upkeep.transfer import import_

    if args.file != "-" and not os.path.isfile(args.file):
        raise InvalidInput(f"{args.file}: no such file (give a file written by `agentmem export`, or '-' for stdin)")
    from .common import require_user
    from .user import keep_claims

    require_user(args, f"import the memories of {args.file}")
    with _open(args) as store:
        source = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")
        with source:
            report = import_(store, source, keep_claims=keep_claims)
    print(f"imported {report.imported}, skipped {report.skipped} already present, {report.links} links")
    if report.downgraded:
        print(f"  note: {report.downgraded} records came in as imported memories of "
              f"{store.project or 'no project (global)'}, unpinned and not P0: the file is not signed by this home, so "
              "the source, pin, priority and project they claim were not kept")
    return 0


def cmd_reindex(args: argparse.Namespace) -> int:
    import time

    from ..upkeep.maintenance import reindex

    bars = None if args.quiet else _ProgressBars()
    with _open(args) as store:
        started = time.monotonic()
        try:
            result = reindex(store, progress=bars)
        finally:
            if bars is not None:
                bars.close()
        took = time.monotonic() - started
    print(f"reindexed {result['memories']} memories: {result['indexed']} in BM25, {result['embedded']} embedded, "
          f"in {took:.1f} s ({result['memories'] / max(took, 1e-9):,.0f} memories/s)")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from ..config import load_settings
    from ..models import AgentmemError
    from ..preflight import home_problem
    from ..upkeep.maintenance import Check, doctor, recover_database

    settings = load_settings()
    if problem := home_problem(settings):  # an unusable home (read-only, foreign) is not a damaged database
        raise AgentmemError(problem)
    database = settings.database
    if args.recover:
        print(recover_database(database))
        return 0
    from ..db.recovery import check, describe_holder, holder

    problem = check(database) if database.exists() else None
    if problem is not None and (pid := holder(database)) is not None:  # its WAL changed under a running process
        checks = [Check("database", False, f"{database} cannot be read ({problem}) while {describe_holder(pid)} has "
                        "it open: its write-ahead log (agentmem.db-wal) was probably cut short, deleted or replaced "
                        "under that process",
                        "close the coding agents (and stop that process if it stays), then run `agentmem doctor` "
                        "again: once no process has it open, SQLite reads what the files hold, and doctor says "
                        "whether anything is damaged")]
    elif problem is not None:  # the store cannot be opened safely: say so, and how to save what is readable
        checks = [Check("database", False, f"{database} is damaged: {problem}",
                        "`agentmem doctor --recover` copies what is readable into a new file beside it (this one is "
                        "only read) and exports its memories; keep a copy of the home folder first")]
    else:
        with _open(args) as store:
            checks = [Check("database", True, "integrity check ok"), *doctor(store)]
    if args.json:
        _print_json([c.to_dict() for c in checks])
    else:
        for check in checks:
            print(f"{'ok  ' if check.ok else 'FAIL'} {check.name}: {check.detail}")
            if check.fix:
                print(f"     fix: {check.fix}")
    return 0 if all(c.ok for c in checks) else 1


def cmd_audit(args: argparse.Namespace) -> int:
    from ..db.audit import check_triggers, verify

    with _open(args, load_embedder=False) as store:
        verdict, triggers = verify(store.conn), check_triggers(store.conn)
    for problem in triggers:
        print(f"audit log NOT PROTECTED: {problem}")
    if verdict.ok:
        print(f"audit chain ok: {verdict.describe()}")
        return 1 if triggers else 0
    print(f"audit chain BROKEN: {verdict.describe()}")
    for problem in verdict.memory_problems[1:]:
        print(f"  also {problem}")
    return 1


def cmd_serve(args: argparse.Namespace) -> int:
    from ..server.app import run

    run()
    return 0


def cmd_ui(args: argparse.Namespace) -> int:
    from ..viewer.run import serve

    return serve(args.port, open_browser=not args.no_browser)


def cmd_worker(args: argparse.Namespace) -> int:
    from ..runtime.worker import run_cli

    return run_cli(args)


def cmd_install(args: argparse.Namespace) -> int:
    from ..install import install
    from .commands import install_report

    plan = (install.plan_install if args.command_name == "install" else install.plan_uninstall)(
        args.client, args.scope, **({"command": args.command} if args.command_name == "install" and args.command
                                    else {}))
    print(plan.describe())
    if args.dry_run:
        print("(dry run: nothing written)")
        return 0
    print(install_report(install.apply(plan)))
    return 0


JSON_HELP = "print JSON instead of text"


def _scoped(p: argparse.ArgumentParser, global_help: str = "the global memories instead of the current "
            "project's") -> argparse.ArgumentParser:
    p.add_argument("--project", help="project id (default: the git root of the current directory)")
    p.add_argument("--global", dest="global_", action="store_true", help=global_help)
    return p


def _add_search(sub: argparse._SubParsersAction) -> None:
    from ..kinds import TIERS, TYPES

    p = _scoped(sub.add_parser("search", help="find memories"))
    p.add_argument("query", help="what you are looking for, in words or identifiers")
    p.add_argument("--type", action="append", choices=TYPES, help="only this type (repeat for more)")
    p.add_argument("--tier", action="append", choices=TIERS,
                   help="only this tier (repeat for more; default: all but working, the raw captured events)")
    p.add_argument("--all-projects", action="store_true", help="search every project, not only the current one")
    p.add_argument("--limit", type=int, default=10, help="at most this many hits (default: 10)")
    p.add_argument("--budget", type=int, help="token budget of the answer (default: AGENTMEM_SEARCH_BUDGET)")
    p.add_argument("--history", action="store_true", help="include superseded versions")
    p.add_argument("--min-confidence", type=float, help="leave out memories with a lower confidence (0..1)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=cmd_search)


def _describe(sub: argparse._SubParsersAction) -> None:
    """`agentmem COMMAND --help` opens with what the command does (its help in the list, unless it has more)."""
    for choice in sub._choices_actions:
        if sub.choices[choice.dest].description is None and choice.help:
            sub.choices[choice.dest].description = choice.help[0].upper() + choice.help[1:] + "."


def _top_parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    import argparse

    class Version(argparse.Action):  # the version is read when asked for: importlib.metadata costs every command
        def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
            from ..version import package_version

            print(f"agentmem {package_version()}")
            parser.exit()

    parser = argparse.ArgumentParser(prog="agentmem", description="Long-term memory for coding agents.")
    parser.add_argument("--version", action=Version, nargs=0, help="show the version and exit")
    return parser, parser.add_subparsers(dest="command_name", required=True)


def search_parser() -> argparse.ArgumentParser:
    """The parser of `agentmem search` alone: what main() builds for a search (the whole parser costs it more than
    the search takes when the shared process answers); its usage, help and errors are the same."""
    parser, sub = _top_parser()
    _add_search(sub)
    _describe(sub)
    return parser


def build_parser() -> argparse.ArgumentParser:
    import argparse

    from ..kinds import PRIORITIES, SOURCES, TIERS, TYPES
    from .commands import cmd_import_history, cmd_list, cmd_purge
    from .confirm_user import USER_FLAG

    parser, sub = _top_parser()
    scoped = _scoped
    json_help = JSON_HELP

    def user_only(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        """The flag by which the user says they run the command themselves (README; kept out of --help and out of
        everything an agent reads from agentmem: see confirm_user.py)."""
        p.add_argument(USER_FLAG, dest="i_am_the_user", action="store_true", help=argparse.SUPPRESS)
        return p
    p = scoped(sub.add_parser("save", help="remember something"),
               "save a global memory, true in every project (e.g. a preference), instead of a project one")
    p.add_argument("content", help="what to remember ('-' reads stdin)")
    p.add_argument("--title", help="a short title (default: the first line)")
    p.add_argument("--type", default="fact", choices=[t for t in TYPES if t != "summary"],
                   help="what kind of memory (default: fact)")
    p.add_argument("--tier", default="semantic", choices=TIERS, help=argparse.SUPPRESS)
    p.add_argument("--tag", action="append", help="a tag (repeat for more)")
    p.add_argument("--file", action="append", help="a file the memory is about (repeat for more)")
    p.add_argument("--importance", type=float, default=0.5, help="0..1, how much it matters (default: 0.5)")
    p.add_argument("--priority", default="P1", choices=PRIORITIES,
                   help="P0 never decays (core rules), P2 may expire (default: P1)")
    p.add_argument("--pin", action="store_true", help="always include in session-start context")
    p.add_argument("--ttl-days", type=float, help="forget it after this many days")
    p.add_argument("--supersedes", help="the id of a memory this one replaces")
    p.add_argument("--source", choices=SOURCES, help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help=json_help)
    user_only(p)
    p.set_defaults(func=cmd_save)

    p = sub.add_parser("pin", help="confirm a memory as yours: pinned, optionally P0 and global")
    p.add_argument("id", help="the memory to confirm (m_...)")
    p.add_argument("--project", help="project id (default: the git root of the current directory)")
    p.add_argument("--priority", choices=PRIORITIES, help="also set its priority (P0: never decays)")
    p.add_argument("--global", dest="make_global", action="store_true", help="true in every project")
    p.add_argument("--unpin", action="store_true", help="take the pin off instead")
    user_only(p)
    p.set_defaults(func=cmd_pin)

    p = scoped(sub.add_parser("quarantine", help="memories held back because they read as instructions to an agent"))
    p.add_argument("action", choices=("list", "release", "forget"),
                   help="list what is held back, release one (it is searched and injected again) or forget it")
    p.add_argument("id", nargs="?", help="the memory to release or forget (m_...)")
    p.add_argument("--all-projects", action="store_true", help="every project, not only the current one")
    p.add_argument("--json", action="store_true", help="print JSON")
    user_only(p)
    p.set_defaults(func=cmd_quarantine)

    _add_search(sub)

    p = scoped(sub.add_parser("get", help="show a memory"))
    p.add_argument("id", help="a memory id (m_...)")
    p.add_argument("--history", action="store_true", help="every version")
    p.add_argument("--json", action="store_true", help=json_help)
    p.set_defaults(func=cmd_get)

    p = scoped(sub.add_parser("forget", help="forget memories by id, session, filter or strategy"))
    p.add_argument("ids", nargs="*", help="memory ids to forget (every version of each)")
    p.add_argument("--session", help="forget what was captured in this session")
    p.add_argument("--type", choices=TYPES, help="filter: memories of this type")
    p.add_argument("--tier", choices=TIERS, help="filter: memories of this tier")
    p.add_argument("--older-than-days", type=float, help="filter: memories created more than N days ago")
    p.add_argument("--all-projects", action="store_true", help="a filter or strategy covers every project")
    p.add_argument("--strategy", choices=("importance", "age", "capacity", "composite"),
                   help="let a forgetting strategy choose (see docs/lifecycle.md)")
    p.add_argument("--threshold", type=float, default=0.6,
                   help="with --strategy: forget memories scoring at least this (0..1, default: 0.6)")
    p.add_argument("--max-deletions", type=int, default=50,
                   help="with --strategy: forget at most this many by score (default: 50)")
    p.add_argument("--dry-run", action="store_true", help="show what would go, change nothing")
    p.add_argument("--yes", action="store_true", help="really delete what a filter or strategy selects")
    p.add_argument("--show-keeps", action="store_true", help="with --strategy: also list the memories kept")
    p.add_argument("--reason", help="why (kept in the audit log)")
    p.add_argument("--json", action="store_true", help=json_help)
    user_only(p)
    p.set_defaults(func=cmd_forget)

    p = scoped(sub.add_parser("stats", help="what is stored"))
    p.add_argument("--all-projects", action="store_true", help="count every project, not only the current one")
    p.add_argument("--json", action="store_true", help=json_help)
    p.set_defaults(func=cmd_stats)

    p = scoped(sub.add_parser("list", help="list memories, newest first"))
    p.add_argument("--type", action="append", choices=TYPES, help="only this type (repeat for more)")
    p.add_argument("--tier", action="append", choices=TIERS,
                   help="only this tier (repeat for more; default: what search shows, all but working, the raw "
                        "captured prompts and tool calls)")
    p.add_argument("--all-projects", action="store_true", help="every project, not only the current one")
    p.add_argument("--history", action="store_true", help="include superseded versions")
    p.add_argument("--limit", type=int, default=20, help="memories per page (default: 20)")
    p.add_argument("--page", type=int, default=1, help="which page (default: 1)")
    p.add_argument("--json", action="store_true", help=json_help)
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("purge", help="remove all of agentmem's data, or one project's memories (--project)")
    p.add_argument("--project", nargs="?", const="", default=None, metavar="PATH",
                   help="only this project's memories and captured sessions (default PATH: the current project)")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    user_only(p)
    p.set_defaults(func=cmd_purge)

    p = scoped(sub.add_parser("export", help="write the project's memories (and the global ones) as JSONL"))
    p.add_argument("--out", help="file (default: stdout)")
    p.add_argument("--all-projects", action="store_true", help="export every project's memories")
    p.set_defaults(func=cmd_export)

    p = scoped(sub.add_parser("import", help="read a JSONL export"))
    p.add_argument("file", help="export file ('-' reads stdin)")
    user_only(p)
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("import-history", help="import your past Claude Code, Cursor, Codex or Gemini CLI sessions")
    p.add_argument("client", choices=("claude-code", "cursor", "codex", "gemini"),
                   help="whose history: claude-code (~/.claude/projects), cursor (its state.vscdb files), codex "
                   "(~/.codex/sessions) or gemini (~/.gemini/tmp/*/chats)")
    p.add_argument("--project", nargs="?", const="", default=None, metavar="PATH",
                   help="only the sessions of this project (default PATH: the current one; default: every project)")
    p.add_argument("--since", help="only sessions written since this date (2026-03-01)")
    p.add_argument("--root", help="where the history is (default: ~/.claude/projects; for cursor, Cursor's User "
                   "folder: ~/.config/Cursor/User, on macOS ~/Library/Application Support/Cursor/User; for codex, "
                   "~/.codex; for gemini, ~/.gemini)")
    p.add_argument("--no-worker", action="store_true",
                   help="only capture; leave summarising to the background worker")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_import_history)

    p = scoped(sub.add_parser("reindex", help="rebuild BM25 and vectors from SQLite"))
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_reindex)

    p = scoped(sub.add_parser("doctor", help="check the installation and say how to fix problems"))
    p.add_argument("--json", action="store_true", help=json_help)
    p.add_argument("--recover", action="store_true",
                   help="copy what is readable of a damaged database into a new file beside it, and export it")
    p.set_defaults(func=cmd_doctor)

    p = scoped(sub.add_parser("audit", help="check the audit log"))
    p.add_argument("--verify", action="store_true", required=True, help="check the hash chain of the audit log")
    p.set_defaults(func=cmd_audit)

    from ..team.cli import add_parsers as add_team_parsers  # `agentmem share`, `agentmem team ...`

    add_team_parsers(sub, scoped, user_only)

    p = sub.add_parser("serve", help="run the MCP stdio server",
                       description="Run agentmem's MCP server on stdin and stdout. An MCP client (Claude Code, Cursor) "
                                   "starts it for each agent session, from the entry `agentmem install` wrote; you do "
                                   "not run it by hand. It gives the agent memory_save, memory_search, memory_get, "
                                   "memory_forget, memory_context and memory_stats.")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("ui", help="open the local web viewer (127.0.0.1 only, with a per-run token)")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--no-browser", action="store_true", help="print the address instead of opening a browser")
    p.set_defaults(func=cmd_ui)

    p = sub.add_parser("hook", help="handle a client hook event (JSON on stdin)")
    p.add_argument("--client", default="claude-code", choices=("claude-code", "cursor", "codex", "gemini"),
                   help="the client sending the event (default: claude-code)")
    p.add_argument("event", help="the client's event name (SessionStart, UserPromptSubmit, PostToolUse, ...)")

    p = sub.add_parser("worker", help="run background work (compress, summarise, consolidate, decay)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", default=True,
                      help="do what is pending, then exit (the default)")
    mode.add_argument("--forever", action="store_true", help="keep running and work as events arrive")
    p.add_argument("--retry-failed", action="store_true", help="retry the observations parked as failed")
    p.set_defaults(func=cmd_worker)

    for name in ("install", "uninstall"):
        p = sub.add_parser(name, help=f"{name} agentmem in Claude Code, Cursor, Codex or Gemini CLI")
        p.add_argument("client", choices=("claude-code", "cursor", "codex", "gemini"), help="the coding agent")
        p.add_argument("--scope", default="user", choices=("user", "project"),
                       help="user: every project of this user (default); project: the current project's files")
        p.add_argument("--dry-run", action="store_true", help="show the changes, write nothing")
        if name == "install":
            p.add_argument("--command", help="the agentmem command to write (default: this installation's path)")
        p.set_defaults(func=cmd_install)
    _describe(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["hook"]:  # the hot path: skip building the whole parser
        from ..capture.hook_client import main as hook_main

        return hook_main(argv[1:])
    if argv == ["serve"]:  # a relay to the shared process when it can be (runtime/relay.py); else this process serves
        from ..runtime.relay import relay

        relayed = relay()
        if relayed is not None:
            return relayed
    parser = search_parser() if argv[:1] == ["search"] else build_parser()
    if not argv:
        parser.print_help()
        return 0
    args = parser.parse_args(argv)
    args.argv = argv
    try:
        code = args.func(args) or 0
        sys.stdout.flush()  # a closed pipe fails here, inside the try, not at interpreter exit
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _reader_went_away()
    except Exception as exc:
        # imported here: a command that succeeds (a search the shared process answered) never loads them
        from ..files import ConfigError
        from ..models import AgentmemError

        if isinstance(exc, (AgentmemError, ConfigError)):
            from .common import in_cli_words

            print(f"agentmem: {in_cli_words(str(exc))}", file=sys.stderr)
            return 2
        from ..db.connection import DatabaseError

        if isinstance(exc, DatabaseError):
            from ..upkeep.maintenance import database_error_line

            print(f"agentmem: {database_error_line(exc)}", file=sys.stderr)
            return 3
        message = _explain(exc) if isinstance(exc, (OSError, ValueError)) else None
        if message is None:
            raise
        print(f"agentmem: {message}", file=sys.stderr)
        return 2


def _reader_went_away() -> int:
    """The reader of stdout closed it (`agentmem stats | head`): exit quietly, with nothing more flushed
    to the closed pipe at interpreter exit (Python's documented recipe)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 0


def _explain(exc: BaseException) -> str | None:
    from ..config import ConfigError, load_settings
    from ..preflight import explain

    try:
        return explain(exc, load_settings())
    except ConfigError:
        return None
