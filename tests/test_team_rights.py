"""Who may do what on the team server, against a real PostgreSQL with pgvector (tests/team_pg.py): the author
accepts or rejects what others propose, with the decisions kept on the server; a read-only member's role cannot
write anything, and a writer's role cannot change another role's rows, even with a client of its own making (plain
SQL through psycopg), because the server refuses (grants and row-level security)."""

from __future__ import annotations

import json

import psycopg
import pytest

from tests import test_team_server as shared
from tests.test_team_server import Machine, rows

pg, team_url, machines = shared.pg, shared.team_url, shared.machines  # the same fixtures

DEPLOY = "we deploy the widget service with blue-green switches, never on Fridays"


def _gid(server, url: str) -> str:
    return rows(server, url, "SELECT gid FROM team_memories")[0][0]


def _proposal_ids(alice: Machine) -> list[int]:
    out = alice.run("team", "proposals").stdout
    return sorted(int(line.split()[0][1:]) for line in out.splitlines() if line.startswith("#"))


def test_the_author_accepts_and_rejects_proposals_and_the_server_keeps_the_decisions(machines, pg, team_url):
    alice, bob = machines
    local_id = alice.save(DEPLOY, "--type", "decision")
    alice.run("team", "sync")
    bob.run("team", "sync")
    gid = _gid(pg, team_url)
    bob.run("team", "supersede", gid, "we deploy the widget service with blue-green switches, any day but "
            "Friday after 3 pm", "--reason", "we deploy on Fridays mornings now")
    bob.run("team", "forget", gid, "--reason", "nobody reads it")
    supersede, forget = _proposal_ids(alice)

    # only the author decides, and only once
    refused = bob.run("team", "accept", str(supersede), check=False)
    assert refused.returncode == 2 and "only its author decides" in refused.stderr

    assert "is now version 2 (proposed by bob)" in alice.run("team", "accept", str(supersede), "--note",
                                                             "right, mornings are fine").stdout
    assert rows(pg, team_url, "SELECT version, author, content FROM team_memories") == [
        ["2", "alice", "we deploy the widget service with blue-green switches, any day but Friday after 3 pm"]]
    again = alice.run("team", "accept", str(supersede), check=False)
    assert again.returncode == 2 and "was accepted already by alice" in again.stderr
    # alice's own store, the working copy, has the accepted text as the memory's next version
    versions = json.loads(alice.run("get", local_id, "--history", "--json").stdout)
    assert "after 3 pm" in json.dumps(versions) and "never on Fridays" in json.dumps(versions)
    assert "waiting in the outbox" not in alice.run("team", "sync").stdout
    assert rows(pg, team_url, "SELECT count(*) FROM team_memories")[0] == ["1"]  # no second copy published

    assert "stays as it is" in alice.run("team", "reject", str(forget), "--note", "it is still true").stdout
    assert rows(pg, team_url, "SELECT forgotten_at IS NULL FROM team_memories") == [["t"]]
    assert "no open proposals" in alice.run("team", "proposals").stdout

    bob.run("team", "sync")
    assert "after 3 pm" in bob.briefing() and "never on Fridays" not in bob.briefing()
    history = bob.run("team", "history", gid).stdout
    assert "v1 publish by alice" in history and "v2 publish by alice" in history
    assert f"accepted proposal #{supersede} by bob" in history
    assert f"proposal #{supersede} by bob" in history and "accepted by alice" in history
    assert f"proposal #{forget} by bob" in history and "rejected by alice" in history
    assert "(it is still true)" in history and "(right, mornings are fine)" in history
    decided = rows(pg, team_url, "SELECT id, status, decided_by, decided_role FROM team_proposals ORDER BY id")
    assert decided == [[str(supersede), "accepted", "alice", "postgres"], [str(forget), "rejected", "alice",
                                                                            "postgres"]]

    # an accepted forget forgets it on the server, on alice's machine and, at its next pull, in bob's copy
    bob.run("team", "forget", gid, "--reason", "we moved to canary releases")
    (third,) = _proposal_ids(alice)
    assert "forgotten on the team server and here" in alice.run("team", "accept", str(third)).stdout
    assert rows(pg, team_url, "SELECT forgotten_at IS NOT NULL FROM team_memories") == [["t"]]
    assert "after 3 pm" not in alice.run("search", "deploy widget Friday", "--json").stdout
    assert "forgotten" not in alice.run("team", "sync").stdout  # nothing left to send
    bob.run("team", "sync")
    assert "after 3 pm" not in bob.briefing()
    forgets = rows(pg, team_url, "SELECT action, proposal_id FROM team_history WHERE action = 'forget'")
    assert forgets == [["forget", str(third)]]


def test_the_author_decides_from_any_of_their_machines(machines, pg, team_url, tmp_path, model_path):
    alice, bob = machines  # alice's laptop shares the memory; her desktop is a second machine of the same author
    desk = Machine(tmp_path, "alice-desk", "https://github.com/acme/widget.git", team_url, model_path,
                   AGENTMEM_TEAM_AUTHOR="alice")
    local_id = alice.save(DEPLOY, "--type", "decision")
    alice.run("team", "sync")
    bob.run("team", "sync")
    desk.run("team", "sync")
    gid = _gid(pg, team_url)
    later = "we deploy the widget service with blue-green switches, any day but Friday after 3 pm"
    bob.run("team", "supersede", gid, later, "--reason", "we deploy on Friday mornings now")
    bob.run("team", "forget", gid, "--reason", "nobody reads it")
    supersede, forget = _proposal_ids(desk)  # the desktop lists the proposals on alice's memories
    refused = bob.run("team", "accept", str(supersede), check=False)
    assert refused.returncode == 2 and "only its author decides" in refused.stderr

    assert "stays as it is" in desk.run("team", "reject", str(forget), "--note", "still read").stdout
    accepted = desk.run("team", "accept", str(supersede), "--note", "from my desk").stdout
    assert "is now version 2 (proposed by bob)" in accepted
    assert rows(pg, team_url, "SELECT version, author, content, embedding IS NOT NULL FROM team_memories") == [
        ["2", "alice", later, "t"]]  # embedded on the desktop
    history = rows(pg, team_url, "SELECT version, origin_machine, proposal_id FROM team_history ORDER BY version")
    decided = rows(pg, team_url, "SELECT id, status, decided_by, decided_machine FROM team_proposals ORDER BY id")
    laptop_machine, desk_machine = history[0][1], history[1][1]
    assert laptop_machine != desk_machine and history[1][2] == str(supersede)
    assert decided == [[str(supersede), "accepted", "alice", desk_machine],
                       [str(forget), "rejected", "alice", desk_machine]]

    # the desktop reads the new version from its copy; the laptop takes it into its own store at its next pull
    desk.run("team", "sync")
    assert "after 3 pm" in desk.briefing() and "never on Fridays" not in desk.briefing()
    alice.run("team", "sync")
    versions = json.dumps(json.loads(alice.run("get", local_id, "--history", "--json").stdout))
    assert "after 3 pm" in versions and "never on Fridays" in versions
    found = alice.search("deploy widget Friday")["hits"]
    assert [h["title"][:60] for h in found] == [later[:60]] and "team memory" not in found[0]["why"]
    assert "Shared by the team" not in alice.briefing()  # held here: not shown twice
    assert "waiting in the outbox" not in alice.run("team", "sync").stdout
    assert rows(pg, team_url, "SELECT count(*), max(version) FROM team_memories") == [["1", "2"]]
    assert rows(pg, team_url, "SELECT count(*) FROM team_history")[0] == ["2"]  # the laptop published nothing

    # a forget accepted on the desktop: forgotten on the server, then on the laptop at its next pull
    bob.run("team", "forget", gid, "--reason", "we moved to canary releases")
    (third,) = _proposal_ids(desk)
    assert "forgotten on the team server" in desk.run("team", "accept", str(third)).stdout
    alice.run("team", "sync")
    assert "after 3 pm" not in alice.run("search", "deploy widget Friday", "--json").stdout
    assert "forgotten" not in alice.run("team", "sync").stdout  # nothing left to send
    assert rows(pg, team_url, "SELECT action, origin_machine, proposal_id FROM team_history WHERE action = "
                "'forget'") == [["forget", desk_machine, str(third)]]


def _roles(server, url: str, *names: str) -> dict[str, str]:
    """Login roles with their own passwords, for this test's database: {name: url}."""
    db = url.rsplit("/", 1)[1]
    found = {}
    for name in names:
        role = f"{name}_{db}"
        server.psql(f"CREATE ROLE {role} LOGIN PASSWORD '{name}-pw'")
        found[name] = server.url(user=role, password=f"{name}-pw", db=db)
    return found


def _refused(url: str, sql: str, params: tuple = ()) -> str:
    """Run one statement as that role, with plain psycopg (a client of one's own making); the server's refusal."""
    with psycopg.connect(url, autocommit=True) as conn:
        with pytest.raises(psycopg.Error) as refused:
            conn.execute(sql, params)
    return str(refused.value)


def _changed(url: str, sql: str, params: tuple = ()) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql, params).rowcount


def test_a_read_only_role_cannot_write_whatever_its_client_does(machines, pg, team_url, tmp_path, model_path):
    alice, _ = machines  # the admin: the role that created the tables
    alice.save(DEPLOY, "--type", "decision")
    alice.run("team", "sync")
    gid = _gid(pg, team_url)
    urls = _roles(pg, team_url, "reader")
    assert "reads team memory only" in alice.run("team", "grant", urls["reader"].split("//")[1].split(":")[0],
                                                 "--read-only", "--i-am-the-user").stdout
    # reading works, through agentmem and through SQL
    carol = Machine(tmp_path, "carol", "https://github.com/acme/widget", urls["reader"], model_path)
    assert "pulled 1" in carol.run("team", "sync").stdout and "shared by alice" in carol.briefing()
    # every write is refused by the server, even to a client that does not know it is read-only
    for sql, params in [
        ("INSERT INTO team_memories (gid, project_key, tier, type, title, content, source, confidence, importance, "
         "author, origin_machine, content_hash, created_at, updated_at) VALUES ('t_x', 'k', 'semantic', 'fact', "
         "'t', 'c', 'agent', 1, 1, 'carol', 'm', 'h', 0, 0)", ()),
        ("UPDATE team_memories SET forgotten_at = 1 WHERE gid = %s", (gid,)),
        ("UPDATE team_memories SET content = 'carol was here' WHERE gid = %s", (gid,)),
        ("DELETE FROM team_memories WHERE gid = %s", (gid,)),
        ("INSERT INTO team_history (gid, version, action, author, origin_machine, at) VALUES "
         "(%s, 9, 'forget', 'carol', 'm', 0)", (gid,)),
        ("INSERT INTO team_proposals (gid, action, proposer, origin_machine, created_at) VALUES "
         "(%s, 'forget', 'carol', 'm', 0)", (gid,)),
        ("DELETE FROM team_history", ()),
        ("TRUNCATE team_memories", ()),
        ("SELECT nextval('team_change_seq')", ()),
    ]:
        assert "permission denied" in _refused(urls["reader"], sql, params), sql
    mine = carol.save("carol's note: the widget's CI runs on two cores", "--type", "fact")
    published = carol.run("team", "sync", check=False)
    assert published.returncode == 1 and "may not do that" in published.stdout
    forgot = carol.run("team", "forget", gid, check=False)
    assert forgot.returncode == 2 and "permission denied" in forgot.stderr
    assert mine and rows(pg, team_url, "SELECT count(*), bool_and(forgotten_at IS NULL) FROM team_memories") == [
        ["1", "t"]]
    assert rows(pg, team_url, "SELECT count(*) FROM team_proposals") == [["0"]]


def test_row_security_keeps_each_writer_to_its_own_rows(tmp_path, pg, team_url, model_path):
    admin = Machine(tmp_path, "admin", "https://github.com/acme/widget", team_url, model_path)
    admin.run("team", "status")  # the tables are created by the admin's role, their owner
    urls = _roles(pg, team_url, "alice", "bob")
    for url in urls.values():
        admin.run("team", "grant", url.split("//")[1].split(":")[0], "--write", "--i-am-the-user")
    alice = Machine(tmp_path, "alice", "git@github.com:acme/widget.git", urls["alice"], model_path)
    # bob's client claims to be alice: the server knows his role
    bob = Machine(tmp_path, "bob", "https://github.com/acme/widget", urls["bob"], model_path,
                  AGENTMEM_TEAM_AUTHOR="alice")
    alice.save(DEPLOY, "--type", "decision")
    assert "published 1" in alice.run("team", "sync").stdout
    gid = _gid(pg, team_url)
    bob.run("team", "sync")
    alice_role = urls["alice"].split("//")[1].split(":")[0]
    assert rows(pg, team_url, "SELECT author, db_role FROM team_memories") == [["alice", alice_role]]

    # the same author name, another role: a forget and a new text become proposals, nothing changes
    assert "proposed to them" in bob.run("team", "forget", gid).stdout
    bob.run("team", "supersede", gid, "we deploy whenever we like")
    assert rows(pg, team_url, "SELECT version, forgotten_at IS NULL FROM team_memories") == [["1", "t"]]
    # nor can bob decide on proposals about alice's memory
    first = int(rows(pg, team_url, "SELECT min(id) FROM team_proposals")[0][0])
    decided = bob.run("team", "accept", str(first), check=False)
    assert decided.returncode == 2 and "lets only the PostgreSQL role that wrote" in decided.stderr
    # and plain SQL as bob's role changes none of alice's rows
    assert _changed(urls["bob"], "UPDATE team_memories SET content = 'x', forgotten_at = 1 WHERE gid = %s",
                    (gid,)) == 0
    assert _changed(urls["bob"], "UPDATE team_proposals SET status = 'accepted', decided_role = current_user") == 0
    assert "row-level security" in _refused(
        urls["bob"], "INSERT INTO team_memories (gid, project_key, tier, type, title, content, source, confidence, "
        "importance, author, origin_machine, content_hash, created_at, updated_at, db_role) VALUES ('t_forged', "
        "'k', 'semantic', 'fact', 't', 'c', 'agent', 1, 1, 'alice', 'm', 'h', 0, 0, %s)", (alice_role,))
    assert "row-level security" in _refused(
        urls["bob"], "INSERT INTO team_history (gid, version, action, author, origin_machine, at) VALUES "
        "(%s, 2, 'publish', 'alice', 'm', 0)", (gid,))
    assert "row-level security" in _refused(
        urls["bob"], "INSERT INTO team_memories (gid, project_key, tier, type, title, content, source, confidence, "
        "importance, author, origin_machine, content_hash, created_at, updated_at, version) SELECT gid, "
        "project_key, tier, type, title, 'bob was here', source, confidence, importance, author, origin_machine, "
        "content_hash, created_at, updated_at, 9 FROM team_memories WHERE gid = %s ON CONFLICT (gid) DO UPDATE SET "
        "content = EXCLUDED.content, version = EXCLUDED.version", (gid,))
    assert "permission denied" in _refused(urls["bob"], "DELETE FROM team_memories")
    assert rows(pg, team_url, "SELECT version, content, forgotten_at IS NULL FROM team_memories") == [
        ["1", DEPLOY, "t"]]
    assert rows(pg, team_url, "SELECT count(*) FROM team_history") == [["1"]]

    # alice's role decides on them
    assert "is forgotten on the team server and here" in alice.run("team", "accept", str(first)).stdout
    assert rows(pg, team_url, "SELECT decided_role FROM team_proposals WHERE status = 'accepted'") == [[alice_role]]


FORGED = ("INSERT INTO team_memories (gid, project_key, tier, type, title, content, source, confidence, importance, "
          "author, origin_machine, content_hash, created_at, updated_at) VALUES (%s, 'github.com/acme/widget', "
          "'semantic', 'fact', 't', 'c', 'agent', 1, 1, %s, 'm', 'h', 0, 0)")


def test_a_role_bound_to_an_author_writes_under_that_name_only(tmp_path, pg, team_url, model_path):
    admin = Machine(tmp_path, "admin", "https://github.com/acme/widget", team_url, model_path)
    admin.run("team", "status")
    urls = _roles(pg, team_url, "alice", "bob")
    alice_role, bob_role = (urls[n].split("//")[1].split(":")[0] for n in ("alice", "bob"))
    bound = admin.run("team", "grant", alice_role, "--write", "--author", "alice", "--i-am-the-user").stdout
    assert "as author 'alice' only" in bound
    admin.run("team", "grant", bob_role, "--write", "--author", "bob", "--i-am-the-user")
    assert rows(pg, team_url, "SELECT role, author FROM team_members ORDER BY author") == [
        [alice_role, "alice"], [bob_role, "bob"]]
    alice = Machine(tmp_path, "alice", "git@github.com:acme/widget.git", urls["alice"], model_path)
    alice.save(DEPLOY, "--type", "decision")
    assert "published 1" in alice.run("team", "sync").stdout
    gid = _gid(pg, team_url)

    # bob's client says it is alice: his role is bound to "bob", so the server refuses even rows of his own role
    liar = Machine(tmp_path, "bob", "https://github.com/acme/widget", urls["bob"], model_path,
                   AGENTMEM_TEAM_AUTHOR="alice")
    liar.save("bob's note: the widget's cache is warmed at boot", "--type", "fact")
    refused = liar.run("team", "sync", check=False)
    assert refused.returncode == 1 and "row-level security" in refused.stdout and "may not do that" in refused.stdout
    assert "row-level security" in _refused(urls["bob"], FORGED, ("t_forged", "alice"))
    assert "row-level security" in _refused(
        urls["bob"], "INSERT INTO team_proposals (gid, action, proposer, origin_machine, created_at) VALUES "
        "(%s, 'forget', 'alice', 'm', 0)", (gid,))
    assert _changed(urls["bob"], FORGED, ("t_bobs", "bob")) == 1  # under his own name
    assert rows(pg, team_url, "SELECT gid, author, db_role FROM team_memories ORDER BY author") == [
        [gid, "alice", alice_role], ["t_bobs", "bob", bob_role]]

    # under his own name bob's client publishes and proposes; alice's role decides, as alice only
    honest = Machine(tmp_path, "bob2", "https://github.com/acme/widget", urls["bob"], model_path,
                     AGENTMEM_TEAM_AUTHOR="bob")
    honest.save("bob's note: the widget's queue drains in under a minute", "--type", "fact")
    assert "published 1" in honest.run("team", "sync").stdout
    assert "proposed to them" in honest.run("team", "forget", gid, "--reason", "stale").stdout
    (proposal,) = _proposal_ids(alice)
    assert "forgotten on the team server and here" in alice.run("team", "accept", str(proposal)).stdout
    assert rows(pg, team_url, "SELECT proposer, decided_by, decided_role FROM team_proposals") == [
        ["bob", "alice", alice_role]]

    # the binding removed: the name is a label again, the role still limited to its own rows
    admin.run("team", "grant", bob_role, "--write", "--author", "", "--i-am-the-user")
    assert _changed(urls["bob"], FORGED, ("t_label", "alice")) == 1
    assert _changed(urls["bob"], "UPDATE team_memories SET content = 'x' WHERE gid = %s", (gid,)) == 0
