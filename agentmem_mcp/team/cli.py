"""Team memory on the command line: `agentmem share ID...` and `agentmem team status | sync | forget |
supersede | proposals | accept | reject | history | grant`. Each parses, calls `sync`, `decisions` or the server,
and prints the answer."""

from __future__ import annotations

import argparse
import time

TYPE_CHECKING = False  # the parser is built for every command: typing and the models are imported when used
if TYPE_CHECKING:
    from typing import Any

    from ..store import Store



def _open(args: argparse.Namespace) -> Store:
    from ..cli.common import _open as open_store

    return open_store(args)


def _need_writable_team(store: Store) -> None:
    _need_team(store)
    if store.settings.team_read_only:
        from ..models import AgentmemError

        raise AgentmemError("team memory is read-only for this member (team_read_only = true)")


def _need_team(store: Store) -> None:
    if not store.settings.team_url:
        from ..models import AgentmemError

        raise AgentmemError("team memory is not configured: set team_url in config.toml or AGENTMEM_TEAM_URL "
                            "(docs/team.md)")


def cmd_share(args: argparse.Namespace) -> int:
    """`agentmem share ID...`: queue memories for the team and publish them now if the server answers."""
    from . import sync

    with _open(args) as store:
        _need_team(store)
        gids = [(memory_id, sync.share(store, memory_id)) for memory_id in args.ids]
        report = sync.sync(store, pull_changes=False, force=True)
        for memory_id, gid in gids:
            print(f"{memory_id}: shared as {gid}")
        print(report.text() if not report.error else f"queued; published when the team server answers "
                                                      f"({report.error})")
    return 0


def cmd_team(args: argparse.Namespace) -> int:
    """`agentmem team ...`."""
    return {"status": _status, "sync": _sync, "forget": _forget, "supersede": _supersede,
            "proposals": _proposals, "accept": _decide, "reject": _decide, "history": _history,
            "grant": _grant}[args.team_command](args)


def _status(args: argparse.Namespace) -> int:
    from . import author, mirror, outbox, reach
    from . import server as team_server
    from .identity import project_key
    from .remote import TeamPermissionError, TeamUnreachable

    with _open(args) as store:
        settings = store.settings
        if not settings.team_url:
            print("team memory: off (set team_url in config.toml or AGENTMEM_TEAM_URL; docs/team.md)")
            return 0
        server = team_server(settings)
        print(f"team server: {server.creds.shown}")
        print(f"author: {author(settings)}{' (read-only member)' if settings.team_read_only else ''}")
        print(f"project identity: {project_key(store.project) or '(no project: global)'}")
        waiting = outbox.pending(store.conn)
        print(f"outbox: {waiting['waiting']} waiting" + (f" (last error: {waiting['last_error']})"
                                                         if waiting["waiting"] and waiting["last_error"] else ""))
        pulled = float(outbox.state(store.conn, "pulled_at", "0") or 0)
        print(f"this machine's copy: {mirror.count(store.conn)} team memories"
              + (f", pulled {time.time() - pulled:.0f} s ago" if pulled else ", never pulled"))
        try:
            counts = server.counts()
        except (TeamUnreachable, TeamPermissionError) as exc:
            reach.mark_unreachable(settings.home, str(exc))
            print(f"server: {exc}")
            return 1
        reach.mark_reachable(settings.home)
        print(f"server: reachable as role {counts['role']}"
              + ("" if counts["can_write"] else " (this role may not write: read-only)")
              + f"; {counts['live']} shared memories, {counts['forgotten']} forgotten, "
              f"{counts['open_proposals']} open proposals")
    return 0


def _sync(args: argparse.Namespace) -> int:
    import fcntl

    from . import sync

    with _open(args) as store:
        _need_team(store)
        with open(store.settings.home / "team-sync.lock", "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | (fcntl.LOCK_NB if args.quiet else 0))
            except OSError:
                return 0  # another sync runs: it does the work
            report = sync.sync(store, force=not args.quiet)
        if not args.quiet:
            print(report.text())
        return 1 if report.error else 0


def _who(store: Store) -> tuple[str, str]:
    from . import author, outbox

    with store.transaction() as conn:
        return author(store.settings), outbox.machine_id(conn)


def _forget(args: argparse.Namespace) -> int:
    from . import server as team_server

    with _open(args) as store:
        _need_writable_team(store)
        who, machine = _who(store)
        outcome = team_server(store.settings).forget(args.gid, author=who, machine=machine, reason=args.reason)
        print({"forgotten": f"{args.gid}: forgotten on the team server (history keeps who and when)",
               "proposed": f"{args.gid}: you are not its author; your forget is proposed to them",
               "absent": f"{args.gid}: no such team memory"}[outcome])
        return 0 if outcome != "absent" else 1


def _supersede(args: argparse.Namespace) -> int:
    from . import server as team_server

    with _open(args) as store:
        _need_writable_team(store)
        who, machine = _who(store)
        outcome = team_server(store.settings).propose_supersede(args.gid, args.content, author=who,
                                                                machine=machine, reason=args.reason)
        print(f"{args.gid}: " + ("proposed to its author" if outcome == "proposed" else "no such team memory"))
        return 0 if outcome == "proposed" else 1


def _proposals(args: argparse.Namespace) -> int:
    from . import author
    from . import server as team_server

    with _open(args) as store:
        _need_team(store)
        rows = team_server(store.settings).proposals(None if args.all else author(store.settings))
        for row in rows:
            what = f"replace with: {row['content'][:200]}" if row["action"] == "supersede" else "forget it"
            print(f"#{row['id']} {row['gid']} \"{row['title'][:60]}\" by {row['author']}: {row['proposer']} "
                  f"proposes to {what}" + (f" ({row['reason']})" if row["reason"] else ""))
        if rows:
            print("accept one with `agentmem team accept N`, or `agentmem team reject N --note why`")
        else:
            print("no open proposals")
    return 0


def _decide(args: argparse.Namespace) -> int:
    from . import decisions

    with _open(args) as store:
        decide = decisions.accept if args.team_command == "accept" else decisions.reject
        print(decide(store, args.proposal, args.note))
    return 0


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(at))


def _history(args: argparse.Namespace) -> int:
    from . import server as team_server

    with _open(args) as store:
        _need_team(store)
        versions, proposed = team_server(store.settings).history(args.gid)
        for row in versions:
            print(f"v{row['version']} {row['action']} by {row['author']} ({row['origin_machine']}) "
                  f"{_when(row['at'])}: {(row['content'] or row['reason'] or '')[:200]}"
                  + (f" [{row['reason']}]" if row["proposal_id"] and row["content"] else ""))
        for row in proposed:
            what = f"replace with: {row['content'][:120]}" if row["action"] == "supersede" else "forget it"
            decided = (f"{row['status']} by {row['decided_by']} {_when(row['decided_at'])}"
                       + (f" ({row['decision_note']})" if row["decision_note"] else "")) \
                if row["status"] != "open" else "open"
            print(f"proposal #{row['id']} by {row['proposer']} {_when(row['created_at'])} to {what}: {decided}")
        if not versions:
            print(f"{args.gid}: no such team memory")
            return 1
    return 0


def _grant(args: argparse.Namespace) -> int:
    """`agentmem team grant ROLE --read-only | --write`, run by the team's admin (the tables' owner)."""
    from ..cli.common import require_user

    require_user(args, f"let the team role {args.role} " + ("read and write" if args.write else "read")
                 + " team memory")
    import psycopg

    from . import schema
    from . import server as team_server

    with _open(args) as store:
        _need_team(store)
        server = team_server(store.settings)
        with server.connection() as conn:
            try:
                schema.grant(conn, args.role, write=args.write, author=args.author)
            except psycopg.errors.UndefinedObject as exc:
                from ..models import AgentmemError

                raise AgentmemError(f"{exc.diag.message_primary}: create it first (CREATE ROLE {args.role} LOGIN "
                                    "PASSWORD '...'), docs/team.md") from None
        print(f"role {args.role}: " + ("reads and writes team memory (its own rows only)" if args.write
                                       else "reads team memory only (the server refuses its writes)")
              + (f", as author {args.author!r} only" if args.author else ""))
    return 0


def add_parsers(sub: Any, scoped: Any, user_only: Any) -> None:
    """The CLI's `share` and `team` commands (`scoped` adds the usual --cwd option, `user_only` the flag of the
    commands only the user may run)."""
    p = scoped(sub.add_parser("share", help="share memories with the team (team memory, docs/team.md)"))
    p.add_argument("ids", nargs="+", metavar="ID", help="memory ids to share (the latest version of each)")
    p.set_defaults(func=cmd_share)
    p = sub.add_parser("team", help="team memory: status, sync, forget, supersede, proposals, accept, reject, "
                       "history, grant")
    team = p.add_subparsers(dest="team_command", required=True, metavar="COMMAND",
                            help="status, sync, forget, supersede, proposals, accept, reject, history or grant")
    scoped(team.add_parser("status", help="server, identity, outbox and copy"))
    q = scoped(team.add_parser("sync", help="publish what waits and pull what changed"))
    q.add_argument("--quiet", action="store_true", help="print nothing; do nothing if a sync already runs")
    q = scoped(team.add_parser("forget", help="forget a team memory (its author) or propose it (others)"))
    q.add_argument("gid", help="the team memory's id (t_...)")
    q.add_argument("--reason", default="", help="why (kept in the team's history)")
    q = scoped(team.add_parser("supersede", help="propose new content for a team memory to its author"))
    q.add_argument("gid", help="the team memory's id (t_...)")
    q.add_argument("content", help="the text you propose instead")
    q.add_argument("--reason", default="", help="why (shown to the author)")
    q = scoped(team.add_parser("proposals", help="open proposals on your shared memories"))
    q.add_argument("--all", action="store_true", help="everyone's")
    for name, what in (("accept", "accept a proposal on your memory (supersede: its text becomes the next "
                                  "version; forget: it is forgotten)"),
                       ("reject", "reject a proposal on your memory (it stays as it is)")):
        q = scoped(team.add_parser(name, help=what))
        q.add_argument("proposal", type=int, help="the proposal's number (#N in `agentmem team proposals`)")
        q.add_argument("--note", default="", help="why (kept with the decision on the server)")
    q = scoped(team.add_parser("history", help="every version, forget and proposal of a team memory"))
    q.add_argument("gid", help="the team memory's id (t_...)")
    q = scoped(team.add_parser("grant", help="admin: let a PostgreSQL role read team memory, or read and write"))
    q.add_argument("role", help="the member's PostgreSQL role (created beforehand with CREATE ROLE)")
    mode = q.add_mutually_exclusive_group(required=True)
    mode.add_argument("--read-only", dest="write", action="store_false", help="reading only")
    mode.add_argument("--write", dest="write", action="store_true", help="reading and writing its own rows")
    q.add_argument("--author", help="bind this author name to the role: the server lets it write under that name "
                   "only (its member's team_author); an empty name removes the binding")
    user_only(q)
    p.set_defaults(func=cmd_team)
