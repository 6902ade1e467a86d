"""The `agentmem` commands added for a new user's first hour (`list`, `purge`, `import-history`) and
`forget --strategy` within one project, over the helpers of `app.py`."""

from __future__ import annotations

import os

from .common import _open, _print_json, _ProgressBars

TYPE_CHECKING = False  # importing typing costs every command that does not need it
if TYPE_CHECKING:
    import argparse
    from pathlib import Path

    from ..config import Settings
    from ..history.claude_code import ImportSummary, Progress
    from ..install.install import InstallPlan


def forget_by_strategy_in_project(args: argparse.Namespace) -> int:
    """`forget --strategy` in one project (the current one, or the global memories with --global): the
    sweep's choice among that project's memories, at most --max-deletions of them by score. Decay and the
    pruning of old versions stay with the sweep over every project (--all-projects, or the worker)."""
    import dataclasses

    from ..db.memory_reads import projects_of
    from ..lifecycle.forget import ForgetRequest
    from ..lifecycle.sweep import SweepRequest, sweep
    from .views import REMOVALS, scoped_entries, sweep_table

    dry_run = args.dry_run or not args.yes
    with _open(args, load_embedder=False) as store:
        report = sweep(store, SweepRequest(strategy=args.strategy, dry_run=True, threshold=args.threshold,
                                           max_deletions=10 ** 9))
        entries = scoped_entries(report, projects_of(store.conn, [s.id for s in report.scores]), store.project)
        allowed = {e.id for e in [e for e in entries if e.decision == "delete"][:args.max_deletions]}
        entries = [e if e.decision != "delete" or e.id in allowed else dataclasses.replace(
            e, decision="over cap", reason=f"over --max-deletions {args.max_deletions}; {e.reason}") for e in entries]
        gone = [e.id for e in entries if e.decision in REMOVALS]
        if gone and not dry_run:
            from .user import confirm_forget

            confirm_forget(args, store, gone)
            for start in range(0, len(gone), 100):
                store.forget(ForgetRequest(
                    ids=gone[start:start + 100], all_projects=True,
                    reason=f"{args.reason or 'forgotten from the command line'} ({args.strategy} sweep)"))
            store.erase_soon()
        scope = store.project or "global memories"
    if args.json:
        ids = {d: [e.id for e in entries if e.decision == d] for d in REMOVALS}
        _print_json({"project": scope, "strategy": args.strategy, "dry_run": dry_run, "threshold": args.threshold,
                     "max_deletions": args.max_deletions, "removed_ids": gone, "deleted_ids": ids["delete"],
                     "expired_ids": ids["expire"], "low_confidence_ids": ids["forget"],
                     "memories": [e.to_dict() for e in entries]})
        return 0
    print(sweep_table(entries, dry_run=dry_run, show_keeps=args.show_keeps, scope=scope))
    if dry_run:
        print("nothing was deleted; " + ("add --yes to forget these" if gone else "nothing to forget")
              + " (--all-projects sweeps every project)")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from ..models import InvalidInput
    from ..upkeep.housekeeping import list_memories
    from .views import memory_line

    if args.limit < 1 or args.page < 1:
        raise InvalidInput("--limit and --page must be 1 or more")
    from ..models import SHOWN_TIERS

    tiers = tuple(args.tier or SHOWN_TIERS)
    with _open(args, load_embedder=False) as store:
        rows, total = list_memories(store.conn, project=store.project, all_projects=args.all_projects,
                                    types=args.type or (), tiers=tiers, history=args.history,
                                    limit=args.limit, offset=(args.page - 1) * args.limit)
        raw = 0 if args.tier else list_memories(store.conn, project=store.project, all_projects=args.all_projects,
                                                types=args.type or (), tiers=("working",), history=args.history,
                                                limit=0)[1]
    if args.json:
        _print_json({"total": total, "page": args.page, "limit": args.limit, "tiers": list(tiers), "memories": rows})
        return 0
    for row in rows:
        print(memory_line(row))
    print(list_footer(args.page, args.limit, len(rows), total, raw))
    return 0


def list_footer(page: int, limit: int, shown: int, total: int, raw: int) -> str:
    """The last line of `agentmem list`: which memories of how many, the pages, and the raw events left out."""
    pages = max(1, -(-total // limit))
    first = (page - 1) * limit
    if shown:
        more = f"; --page {page + 1} for more" if page < pages else ""
        line = f"-- {first + 1}-{first + shown} of {total} (page {page} of {pages}{more})"
    elif total:
        line = f"no memories on page {page}: there {'is 1 page' if pages == 1 else f'are {pages} pages'} of " \
               f"{limit} (--page 1 to {pages})"
    else:
        line = "no memories here yet"
    if raw:
        line += f"; {raw} raw captured events (prompts, tool calls) not listed: --tier working shows them"
    return line


def cmd_purge(args: argparse.Namespace) -> int:
    from ..config import load_settings
    from ..models import InvalidInput
    from ..upkeep.housekeeping import plan_purge, purge_files, purge_project
    from .common import require_user
    from .confirm_user import NotTheUser

    settings = load_settings()
    if args.project is None:
        plan = plan_purge(None, settings, None)
        if not plan.files:
            print(f"nothing to remove: agentmem has no data in {settings.home}")
            return 0
    else:
        args.global_ = False
        store = _open(args, load_embedder=False)
        if not store.project:
            store.close()
            raise InvalidInput("not inside a project (no git root here): give --project PATH")
        plan = plan_purge(store, settings, store.project)
    print(plan.describe())
    try:
        require_user(args, "remove what is listed above", ask=not args.yes, word="purge")
    except NotTheUser:
        if args.project is not None:
            store.close()
        raise
    if args.project is None:
        purge_files(plan.files)
        print(f"removed agentmem's data from {settings.home}")
        return 0
    with store:
        memories, sessions = purge_project(store, store.project)
    print(f"forgot {memories} memories and what {sessions} sessions captured in {plan.project}")
    return 0


def install_report(plan: InstallPlan) -> str:
    """What `agentmem install|uninstall` did, after the plan it printed: where the backups are (one folder per
    run), that the client must restart, and after an uninstall where the memories are and how to remove them."""
    from pathlib import Path

    from ..config import ConfigError, default_home, load_settings
    from ..install.install import NAMES

    lines = []
    backups = [change for change in plan.changes if change.backup is not None]
    if backups:
        lines.append(f"backups of the files changed are in {plan.backup_folder} (delete them once all is well):")
        lines.extend(f"  {change.path} -> {change.backup}" for change in backups)
    if plan.changes:
        verb = "load" if plan.action == "install" else "drop"
        lines.append(f"restart {NAMES.get(plan.client, plan.client)} (quit it and start it again) to {verb} agentmem")
    if plan.action == "uninstall":
        try:
            home = load_settings(on_warning=lambda _: None).home
        except ConfigError:
            home = Path(os.environ["AGENTMEM_HOME"]).expanduser() if os.environ.get("AGENTMEM_HOME") else default_home()
        lines.append(f"your memories are not deleted: they stay in {home} (`agentmem stats --all-projects` counts "
                     "them) and other clients still use them. To remove them: `agentmem purge --project` in a "
                     "project forgets that project's, `agentmem purge` removes all of agentmem's data.")
    return "\n".join(lines)


def cmd_import_history(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..config import load_settings
    from ..history.claude_code import parse_since
    from ..models import InvalidInput
    from ..preflight import home_problem

    settings = load_settings()
    problem = home_problem(settings)
    if problem:
        raise InvalidInput(problem)
    try:
        since = parse_since(args.since) if args.since else None
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
    project = None
    if args.project is not None:
        from ..project import project_for

        project = args.project or project_for(os.getcwd()) or os.getcwd()
    bars = None if args.quiet else _ProgressBars()
    try:
        if args.client == "cursor":
            summary = _import_cursor(settings, Path(args.root).expanduser() if args.root else None, project, since,
                                     bars)
        elif args.client in ("codex", "gemini"):
            summary = _import_codex_gemini(args.client, settings, Path(args.root).expanduser() if args.root else None,
                                           project, since, bars)
        else:
            summary = _import_claude_code(settings, Path(args.root).expanduser() if args.root else None, project,
                                          since, bars)
    finally:
        if bars is not None:
            bars.close()
    if summary is None:
        return 0
    print(summary.text())
    if summary.sessions and not args.no_worker:
        from ..lifecycle.llm import LLM
        from ..runtime.worker import Worker
        from ..store import Store

        with Store.open(settings, project=None) as store:
            print(Worker(store, llm=LLM.from_store(store)).run_until_idle().text())
    elif summary.sessions:
        print("the background worker will summarise them (a running server does it, or `agentmem worker`)")
    return 0


def _import_claude_code(settings: Settings, root: Path | None, project: str | None, since: float | None,
                        progress: Progress | None) -> ImportSummary | None:
    from ..history.claude_code import default_root, find_transcripts, import_transcripts
    from ..models import InvalidInput

    root = root or default_root()
    if not root.is_dir():
        raise InvalidInput(f"no Claude Code history at {root} (give --root DIR if it is elsewhere)")
    paths = find_transcripts(root, project=project, since=since)
    if not paths:
        print(f"no sessions to import under {root}" + (f" for {project}" if project else ""))
        return None
    return import_transcripts(settings, paths, progress=progress)


def _import_cursor(settings: Settings, root: Path | None, project: str | None, since: float | None,
                   progress: Progress | None) -> ImportSummary | None:
    from ..history.cursor import default_root, import_history, read_history
    from ..models import InvalidInput

    root = root or default_root()
    if not (root / "globalStorage").is_dir() and not (root / "workspaceStorage").is_dir():
        raise InvalidInput(f"no Cursor history at {root}: no globalStorage or workspaceStorage folder (give --root "
                           f"with Cursor's User folder if it is elsewhere)")
    history = read_history(root, project=project, since=since)
    if not history.conversations:
        left = ", ".join(f"{n} {why}" for why, n in history.left_out.items())
        print(f"no conversations to import under {root}" + (f" for {project}" if project else "")
              + (f"; left out: {left}" if left else ""))
        return None
    return import_history(settings, history, progress=progress)


def _import_codex_gemini(client: str, settings: Settings, root: Path | None, project: str | None,
                         since: float | None, progress: Progress | None) -> ImportSummary | None:
    from ..history import codex_gemini as logs
    from ..models import InvalidInput

    if client == "codex":
        root = root or logs.codex_root()
        if not (root / "sessions").is_dir() and not (root / "archived_sessions").is_dir():
            raise InvalidInput(f"no Codex history at {root}: no sessions folder (give --root with Codex's folder, "
                               "$CODEX_HOME, if it is elsewhere)")
        paths = logs.find_codex_logs(root, project=project, since=since)
        if not paths:
            print(f"no sessions to import under {root}" + (f" for {project}" if project else ""))
            return None
        return logs.import_codex(settings, paths, progress=progress)
    root = root or logs.gemini_root()
    if not (root / "tmp").is_dir():
        raise InvalidInput(f"no Gemini CLI history at {root}: no tmp folder (give --root with Gemini CLI's .gemini "
                           "folder if it is elsewhere)")
    history = logs.find_gemini_logs(root, project=project, since=since)
    if not history.logs:
        left = ", ".join(f"{n} {why}" for why, n in history.left_out.items())
        print(f"no sessions to import under {root}" + (f" for {project}" if project else "")
              + (f"; left out: {left}" if left else ""))
        return None
    return logs.import_gemini(settings, history, progress=progress)
