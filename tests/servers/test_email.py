# ruff: noqa: RUF001  (the fixture's subjects have en dashes)
"""The email environment: every tool in sim, graded tasks, and prod against real SMTP (aiosmtpd) and IMAP (Dovecot)."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import statistics
import time
from collections.abc import Iterator
from contextlib import ExitStack
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from openenv_mcp import ConfigError, EnvClient, InvalidToolArguments, Settings
from openenv_mcp.doors.mcp import McpDoor
from openenv_mcp.runtime import Runtime, build_runtime
from openenv_mcp.servers.email import environment
from openenv_mcp.servers.email.backends import Query
from openenv_mcp.servers.email.drafts import Draft, check_address, reply
from openenv_mcp.servers.email.imap import criteria, decode_folder, encode_folder
from openenv_mcp.servers.email.settings import EmailSettings
from openenv_mcp.servers.email.sim import SimMailbox, fixture
from openenv_mcp.servers.email.tasks import EmailTask, load_tasks, score
from tests.support import LiveServer, free_port, live_server
from tests.support.email import (
    SMTP_PASSWORD,
    SMTP_USER,
    Certificates,
    Dovecot,
    SmtpServer,
    certificates,
    dovecot,
    smtp_server,
)

TASKS = json.loads(resources.files("openenv_mcp.servers.email").joinpath("data/tasks.json").read_text())
MAILBOX = fixture()
OWNER = MAILBOX.owner
SENDING = {"send_email", "reply_email", "forward_email"}
SHIPPED = "email-001"  # a hand-written task: its mailbox is the shipped one as it is (a generated task adds to it)


@pytest.fixture(scope="module")
def sim() -> Iterator[LiveServer]:
    with live_server(environment, mode="sim", max_episodes=64, mcp_reward_meta=True) as server:
        yield server


def call(env: EnvClient, name: str, **arguments: Any) -> Any:
    """One step; the tool's structured result (the step must not be a tool error)."""
    result = env.step(name, arguments)
    assert not result.observation.is_error, result.observation.text
    return result.observation.structured_content


def refused(env: EnvClient, name: str, **arguments: Any) -> str:
    """One step that must be a tool error; its message."""
    result = env.step(name, arguments)
    assert result.observation.is_error, result.observation.structured_content
    assert (result.reward, result.done) == (0.0, False)
    return result.observation.text


# the fixture and the tasks ----------------------------------------------------------------------------


def test_the_fixture_is_a_realistic_mailbox() -> None:
    messages = [s.message for folder in MAILBOX.folders.values() for s in folder]
    assert 40 <= len(messages) <= 80
    assert list(MAILBOX.folders) == ["INBOX", "Archive", "Newsletters", "Sent"]
    assert len(MAILBOX.folders["INBOX"]) >= 30
    pdfs = [a for m in messages for a in m.attachments if a.content_type == "application/pdf"]
    assert len(pdfs) >= 6 and any(a.filename.lower().startswith("invoice") for a in pdfs)
    assert any(a.content_type == "text/calendar" for m in messages for a in m.attachments)
    threads = [m for m in messages if len(m.references) >= 2]
    assert len(threads) >= 3
    for message in messages:  # every reply points at a real message, in the fixture or (once) outside it
        if message.in_reply_to:
            assert message.references[-1] == message.in_reply_to
    for folder in MAILBOX.folders.values():  # UIDs 1..n in date order, as an IMAP server assigns them
        assert [s.message.id.rpartition("/")[2] for s in folder] == [str(i) for i in range(1, len(folder) + 1)]
        dates = [s.message.date for s in folder]
        assert dates == sorted(dates)  # type: ignore[type-var]


def test_the_committed_fixture_is_what_the_generator_writes() -> None:
    path = Path(str(resources.files("openenv_mcp.servers.email").joinpath("data/generate.py")))
    spec = importlib.util.spec_from_file_location("email_fixture_generator", path)
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    shipped = json.loads(resources.files("openenv_mcp.servers.email").joinpath("data/mailbox.json").read_text())
    assert generator.build() == shipped


def test_tasks_come_in_train_and_test_splits_and_name_real_messages() -> None:
    tasks = load_tasks()
    assert len(tasks) >= 15
    assert tasks.splits["train"] >= 10 and tasks.splits["test"] >= 5
    kinds = set()
    for task in tasks:
        assert isinstance(task, EmailTask) and task.expect
        assert OWNER in task.prompt and "Friday 14 June 2024" in task.prompt
        for expectation in task.expect:
            kinds.add(expectation.kind)
            for target in expectation.targets:
                assert target in MAILBOX.by_message_id, (task.id, target)
            for address in expectation.to:
                check_address(address)
    assert kinds == {"reply", "forward", "new"}


# small pure pieces -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "imap"),
    [("INBOX", "INBOX"), ("Entwürfe", "Entw&APw-rfe"), ("R&D", "R&-D"), ("日本語", "&ZeVnLIqe-"), ("Sent", "Sent")],
)
def test_folder_names_use_imap_modified_utf7(name: str, imap: str) -> None:
    assert encode_folder(name) == imap
    assert decode_folder(imap) == name


def test_search_criteria_are_built_from_the_filters() -> None:
    query = Query(
        folder="INBOX",
        words=("zoë", "offsite"),
        unread_only=True,
        sender='a "b"',
        since=dt.date(2024, 6, 1),
        until=dt.date(2024, 6, 30),
    )
    assert criteria(query) == [
        b"UNSEEN",
        b"FROM",
        b'"a \\"b\\""',
        b"SENTSINCE",
        b"1-Jun-2024",
        b"SENTBEFORE",
        b"1-Jul-2024",
        *[b"OR", b"OR", b"SUBJECT", '"zoë"'.encode(), b"BODY", '"zoë"'.encode(), b"FROM", '"zoë"'.encode()],
        *[b"OR", b"OR", b"SUBJECT", b'"offsite"', b"BODY", b'"offsite"', b"FROM", b'"offsite"'],
    ]
    assert criteria(Query(folder=None)) == [b"ALL"]


@pytest.mark.parametrize("bad", ["bob", "bob@", "@example.com", "a b@example.com", "bob@example", "x" * 250 + "@e.com"])
def test_addresses_must_be_bare_and_complete(bad: str) -> None:
    with pytest.raises(ValueError, match="is not an email address"):
        check_address(bad)


def test_reply_all_keeps_the_thread_and_leaves_me_out() -> None:
    last = MAILBOX.by_message_id["<q3-planning-priya@northwind.example>"]
    draft = reply(last, me=OWNER, body="ok", reply_all=True)
    assert draft.subject == "Re: Q3 planning meeting"
    assert draft.in_reply_to == "<q3-planning-priya@northwind.example>"
    assert draft.references == (
        "<q3-planning@northwind.example>",
        "<q3-planning-dan@northwind.example>",
        "<q3-planning-lena@northwind.example>",
        "<q3-planning-priya@northwind.example>",
    )
    assert sorted(draft.recipients) == sorted(
        ["priya.raman@northwind.example", "dan.okafor@northwind.example", "lena.fischer@northwind.example"]
    )
    mine = MAILBOX.by_message_id["<globex-renewal-ack@northwind.example>"]  # a reply to my own mail goes to its To
    assert reply(mine, me=OWNER, body="x", reply_all=False).recipients == ["rita.chen@globex.example"]


def test_score_gives_documented_partial_credit() -> None:
    task = load_tasks().get("email-005")
    assert isinstance(task, EmailTask)
    question = MAILBOX.by_message_id["<brightspark-question@northwind.example>"]

    def replied(body: str) -> Draft:
        return reply(question, me=OWNER, body=body, reply_all=False)

    messages = MAILBOX.by_message_id
    assert score(task, [replied("€842.17, due June 25.")], messages) == (1.0, True)
    assert score(task, [replied("It is 842.17.")], messages) == (0.75, True)  # one of two facts: 0.5 * 0.5 lost
    plain = Draft(
        to=("priya.raman@northwind.example",), cc=(), subject="bill", body="842.17 June 25", text="842.17 June 25"
    )
    assert score(task, [plain], messages) == (0.8, True)  # not threaded, no "Re:" subject: the form part lost
    stray = Draft(to=("dan.okafor@northwind.example",), cc=(), subject="x", body="842.17", text="842.17")
    assert score(task, [stray], messages) == (0.0, False)  # an extra: matches nothing
    assert score(task, [stray, replied("842.17 due 25 June")], messages) == (0.8, True)  # 1.0 - 0.2 for the extra
    assert score(task, [], messages) == (0.0, False)


# sim: every tool -------------------------------------------------------------------------------------------------


def test_list_folders_counts_messages_and_unread(sim: LiveServer) -> None:
    with EnvClient(sim.url) as env:
        env.reset(task_id=SHIPPED, seed=1)
        folders = call(env, "list_folders")["folders"]
    assert folders == [
        {"name": "INBOX", "total": 38, "unread": 17},
        {"name": "Archive", "total": 8, "unread": 0},
        {"name": "Newsletters", "total": 5, "unread": 1},
        {"name": "Sent", "total": 7, "unread": 0},
    ]


def test_list_emails_filters_and_orders_newest_first(sim: LiveServer) -> None:
    with EnvClient(sim.url) as env:
        env.reset(task_id=SHIPPED, seed=1)
        inbox = call(env, "list_emails", limit=100)
        assert inbox["matched"] == 38 and len(inbox["messages"]) == 38
        dates = [m["date"] for m in inbox["messages"]]
        assert dates == sorted(dates, reverse=True)
        first = inbox["messages"][0]
        assert set(first) == {"id", "folder", "from", "to", "subject", "date", "unread", "has_attachments"}
        assert first["id"] == "INBOX/38" and first["unread"] and first["from"].startswith("Northwind Facilities <")
        limited = call(env, "list_emails", limit=5)
        assert limited["matched"] == 38 and [m["id"] for m in limited["messages"]] == [
            f"INBOX/{i}" for i in range(38, 33, -1)
        ]
        unread = call(env, "list_emails", unread_only=True, limit=100)
        assert unread["matched"] == 17 and all(m["unread"] for m in unread["messages"])
        priya = call(env, "list_emails", sender="PRIYA", limit=100)
        assert priya["matched"] == 5 and all("priya.raman@" in m["from"] for m in priya["messages"])
        by_day = call(env, "list_emails", since="2024-06-12", until="2024-06-12", limit=100)
        assert by_day["matched"] == 7 and all(m["date"].startswith("2024-06-12") for m in by_day["messages"])
        archive = call(env, "list_emails", folder="Archive", until="2024-04-30")
        assert [m["subject"] for m in archive["messages"]] == ["Welcome to CloudNest", "Invoice 7519 – office supplies"]
        assert call(env, "list_emails", folder="inbox", limit=1)["matched"] == 38  # INBOX is case-insensitive


def test_read_email_returns_the_whole_message_and_marks_it_read(sim: LiveServer) -> None:
    with EnvClient(sim.url) as env:
        env.reset(task_id=SHIPPED, seed=1)
        message = call(env, "read_email", message_id="INBOX/19")
        assert message["subject"] == "Order #58213 arrived damaged"
        assert message["from"] == "Omar Haddad <omar.haddad@contoso.example>"
        assert "two of the chairs have broken" in message["body"]
        assert [(a["filename"], a["content_type"]) for a in message["attachments"]] == [
            ("chair-1.jpg", "image/jpeg"),
            ("chair-2.jpg", "image/jpeg"),
        ]
        assert message["has_attachments"] and message["attachments"][0]["size"] > 100_000
        assert message["message_id"] == "<contoso-damaged@contoso.example>" and not message["unread"]
        unread_ids = [m["id"] for m in call(env, "list_emails", unread_only=True, limit=100)["messages"]]
        assert "INBOX/19" not in unread_ids and len(unread_ids) == 16
        thread = call(env, "read_email", message_id="INBOX/18")
        assert thread["in_reply_to"] == "<q3-planning-lena@northwind.example>" and len(thread["references"]) == 3
        assert thread["cc"] == [] and len(thread["to"]) == 3


def test_search_emails_matches_every_word_in_subject_sender_or_body(sim: LiveServer) -> None:
    with EnvClient(sim.url) as env:
        env.reset(task_id=SHIPPED, seed=1)
        invoices = call(env, "search_emails", query="invoice", limit=100)
        subjects = {m["subject"] for m in invoices["messages"]}
        assert "Invoice 7734 – office supplies" in subjects and "Invoice 7519 – office supplies" in subjects
        assert {m["folder"] for m in invoices["messages"]} >= {"INBOX", "Archive", "Newsletters"}
        assert invoices["folder"] is None and invoices["matched"] == len(invoices["messages"])
        in_inbox = call(env, "search_emails", query="invoice", folder="INBOX", limit=100)
        assert {m["folder"] for m in in_inbox["messages"]} == {"INBOX"} and in_inbox["matched"] < invoices["matched"]
        both = call(env, "search_emails", query="GLOBEX renewal")
        assert {m["id"] for m in both["messages"]} == {"INBOX/7", "INBOX/9", "INBOX/22", "INBOX/30", "Sent/5"}
        assert call(env, "search_emails", query="zoë")["matched"] == 5  # non-ASCII, in the sender's name
        assert call(env, "search_emails", query="rita.chen@globex")["matched"] == 4  # the sender's address
        assert call(env, "search_emails", query="no-such-word-anywhere")["matched"] == 0


def test_send_email_files_a_copy_in_sent_and_writes_the_sim_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "sent.jsonl"
    monkeypatch.setenv("EMAIL_SIM_LOG", str(log))
    with live_server(environment, mode="sim") as server, EnvClient(server.url) as env:
        env.reset(task_id="email-013", seed=3)
        sent = call(
            env, "send_email", to=["ana@example.com"], cc=["bo@example.org"], subject="Hello", body="Hi Ana,\n\nHello!"
        )
        assert sent["id"] == "Sent/8" and sent["from"] == f"Alex Morgan <{OWNER}>"
        assert (sent["to"], sent["cc"], sent["subject"]) == (["ana@example.com"], ["bo@example.org"], "Hello")
        assert sent["date"] == "2024-06-14T09:01:00Z" and sent["in_reply_to"] is None
        copy = call(env, "read_email", message_id="Sent/8")
        assert copy["body"] == "Hi Ana,\n\nHello!" and copy["message_id"] == sent["message_id"]
        assert call(env, "list_emails", folder="Sent", limit=1)["messages"][0]["id"] == "Sent/8"
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(lines) == 1
    assert lines[0]["task_id"] == "email-013" and lines[0]["seed"] == 3
    assert lines[0]["to"] == ["ana@example.com"] and lines[0]["body"] == "Hi Ana,\n\nHello!"


def test_reply_email_threads_and_reply_all_reaches_everyone(sim: LiveServer) -> None:
    with EnvClient(sim.url) as env:
        env.reset(task_id="email-013", seed=1)
        answer = call(env, "reply_email", message_id="INBOX/18", body="Thursday 14:00 it is.", reply_all=True)
        assert answer["subject"] == "Re: Q3 planning meeting"
        assert answer["in_reply_to"] == "<q3-planning-priya@northwind.example>"
        assert answer["references"][-1] == answer["in_reply_to"] and len(answer["references"]) == 4
        assert answer["to"] == [
            "Priya Raman <priya.raman@northwind.example>",
            "Dan Okafor <dan.okafor@northwind.example>",
            "Lena Fischer <lena.fischer@northwind.example>",
        ]
        assert answer["cc"] == []
        again = call(env, "reply_email", message_id=answer["id"], body="(and a room is booked)")
        assert again["subject"] == "Re: Q3 planning meeting" and again["references"][-1] == answer["message_id"]
        single = call(env, "reply_email", message_id="INBOX/14", body="Noted")  # Dan's reply, cc me and Lena
        assert single["to"] == ["Dan Okafor <dan.okafor@northwind.example>"] and single["cc"] == []
        everyone = call(env, "reply_email", message_id="INBOX/14", body="Noted", reply_all=True)
        assert everyone["to"] == [
            "Dan Okafor <dan.okafor@northwind.example>",
            "Priya Raman <priya.raman@northwind.example>",
        ]
        assert everyone["cc"] == ["Lena Fischer <lena.fischer@northwind.example>"]
        news = call(env, "reply_email", message_id="INBOX/26", body="unsubscribe")  # Reply-To wins over From
        assert news["to"] == ["Tech Weekly <no-reply@techweekly.example>"]


def test_forward_email_carries_the_attachments_and_the_note(sim: LiveServer) -> None:
    with EnvClient(sim.url) as env:
        env.reset(task_id="email-013", seed=1)
        sent = call(
            env, "forward_email", message_id="INBOX/11", to=["accounting@northwind.example"], note="Please pay."
        )
        assert sent["subject"] == "Fwd: Invoice 7734 – office supplies"
        assert [a["filename"] for a in sent["attachments"]] == ["Invoice-7734.pdf"]
        copy = call(env, "read_email", message_id=sent["id"])
        assert copy["body"].startswith("Please pay.\n\n---------- Forwarded message ---------\n")
        assert "From: PaperTrail Supplies <ar@papertrail-supplies.example>" in copy["body"]
        assert "Total: $312.40" in copy["body"] and copy["has_attachments"]


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("read_email", {"message_id": "INBOX/999"}, "No message 'INBOX/999' in folder 'INBOX'"),
        ("read_email", {"message_id": "nonsense"}, "ids look like 'INBOX/12'"),
        ("read_email", {"message_id": "Spam/1"}, "No folder 'Spam'; folders: INBOX, Archive, Newsletters, Sent"),
        ("list_emails", {"folder": "Spam"}, "No folder 'Spam'"),
        ("search_emails", {"query": "invoice", "folder": "Drafts"}, "No folder 'Drafts'"),
        ("search_emails", {"query": "   "}, "The query has no words"),
        ("list_emails", {"since": "2024-06-12", "until": "2024-06-01"}, "'since' (2024-06-12) is after 'until'"),
        ("reply_email", {"message_id": "INBOX/0", "body": "x"}, "ids look like 'INBOX/12'"),
        ("forward_email", {"message_id": "Archive/99", "to": ["a@example.com"]}, "No message 'Archive/99'"),
    ],
)
def test_bad_references_are_tool_errors_that_say_what_to_do(
    sim: LiveServer, name: str, arguments: dict[str, Any], message: str
) -> None:
    with EnvClient(sim.url) as env:
        env.reset(task_id=SHIPPED, seed=1)
        assert message in refused(env, name, **arguments)
        assert env.state().step_count == 1


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("send_email", {"to": ["bob"], "subject": "s", "body": "b"}, "'bob' is not an email address"),
        ("send_email", {"to": [], "subject": "s", "body": "b"}, "to: List should have at least 1 item"),
        ("send_email", {"to": ["a@example.com"], "subject": "s", "body": "b", "cc": ["x@y"]}, "not an email address"),
        ("forward_email", {"message_id": "INBOX/1", "to": ["Bob <bob@example.com>"]}, "not an email address"),
        ("send_email", {"to": ["a@example.com"], "subject": "a\r\nBcc: evil@example.com", "body": "b"}, "subject"),
        ("list_emails", {"limit": 0}, "limit"),
        ("list_emails", {"since": "last week"}, "since"),
    ],
)
def test_invalid_arguments_are_refused_before_anything_is_sent(
    sim: LiveServer, name: str, arguments: dict[str, Any], message: str
) -> None:
    with EnvClient(sim.url) as env:
        env.reset(task_id=SHIPPED, seed=1)
        with pytest.raises(InvalidToolArguments, match=message):
            env.step(name, arguments)
        assert env.state().step_count == 0
        assert call(env, "list_folders")["folders"][3]["total"] == 7  # nothing reached Sent


# sim: tasks and rewards ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("task", TASKS, ids=[t["id"] for t in TASKS])
def test_the_shipped_solution_of_every_task_earns_full_reward(sim: LiveServer, task: dict[str, Any]) -> None:
    assert environment.solve is not None
    calls = environment.solve(load_tasks().get(task["id"]))
    assert [tool for tool, _ in calls if tool in SENDING] and len(calls) <= environment.max_steps
    with EnvClient(sim.url) as env:
        env.reset(task_id=task["id"])
        results = [env.step(tool, arguments) for tool, arguments in calls]
        assert all(not r.observation.is_error for r in results), [r.observation.text for r in results]
        assert [r.done for r in results] == [False] * (len(results) - 1) + [True]
        assert all(r.reward == 0.0 for (tool, _), r in zip(calls, results, strict=True) if tool not in SENDING)
        assert sum(r.reward for r in results) == pytest.approx(1.0)
        assert env.state().total_reward == pytest.approx(1.0)
        env.close_episode()


def test_a_realistic_run_reads_then_replies_and_is_rewarded_once(sim: LiveServer) -> None:
    with EnvClient(sim.url) as env:
        first = env.reset(task_id="email-018")
        assert "Rita Chen proposed two times" in first.observation.text
        found = call(env, "search_emails", query="design review")
        assert found["messages"][0]["id"] == "INBOX/21"
        invite = call(env, "read_email", message_id="INBOX/21")
        assert "Wednesday June 19, 2024, 11:00" in invite["body"]
        call(env, "read_email", message_id="INBOX/30")
        done = env.step("reply_email", {"message_id": "INBOX/30", "body": "Hi Rita, Tuesday at 9am works. Alex"})
        assert (done.reward, done.done) == (1.0, True)
        assert env.state().step_count == 4


def test_wrong_attempts_score_lower(sim: LiveServer) -> None:
    with EnvClient(sim.url) as env:
        env.reset(task_id="email-018")  # the clashing slot: the time facts are missing
        wrong = env.step("reply_email", {"message_id": "INBOX/30", "body": "Wednesday at 11:00 works."})
        assert (wrong.reward, wrong.done) == (0.5, True)

        env.reset(task_id="email-002")  # replied to Priya only instead of everyone
        narrow = env.step("reply_email", {"message_id": "INBOX/18", "body": "Confirmed: Thursday at 14:00."})
        assert narrow.reward == pytest.approx(0.3 / 3 + 0.2 + 0.5) and narrow.done

        env.reset(task_id="email-001")  # the wrong person first (an extra), then the right reply
        stray = env.step("send_email", {"to": ["ana@example.com"], "subject": "renewal", "body": "18,000"})
        assert (stray.reward, stray.done) == (0.0, False)
        right = env.step("reply_email", {"message_id": "INBOX/22", "body": "Finance approved up to $18,000."})
        assert (right.reward, right.done) == (0.8, True)

        env.reset(task_id="email-003")  # three invoices and a quote: 3/4, minus 0.2 for the extra
        rewards = [
            env.step("forward_email", {"message_id": m, "to": ["accounting@northwind.example"]}).reward
            for m in ["INBOX/1", "INBOX/6", "INBOX/8", "INBOX/11"]
        ]
        assert rewards == [0.25, 0.25, -0.2, 0.25]  # the quote costs 0.2
        assert env.state().total_reward == pytest.approx(0.55) and not env.state().done

        env.reset(task_id="email-007")  # sending instead of forwarding: right person, no message forwarded
        plain = env.step(
            "send_email", {"to": ["zoe.laurent@northwind.example"], "subject": "Lakeside", "body": "€4,080"}
        )
        assert (plain.reward, plain.done) == (0.4, True)


def test_reads_and_searches_earn_nothing_and_the_step_limit_ends_the_episode(sim: LiveServer) -> None:
    with EnvClient(sim.url) as env:
        env.reset(task_id="email-001")
        results = [env.step("list_emails", {"limit": 1}) for _ in range(environment.max_steps)]
    assert [r.reward for r in results] == [0.0] * environment.max_steps
    assert [r.done for r in results] == [False] * (environment.max_steps - 1) + [True]


def test_the_same_seed_gives_the_same_task_mail_ids_and_dates(sim: LiveServer) -> None:
    def play(seed: int) -> list[Any]:
        with EnvClient(sim.url) as env:
            first = env.reset(seed=seed)
            seen = [first.info["task_id"]]
            for name, arguments in [
                *environment.examples,
                ("send_email", {"to": ["a@example.com"], "subject": "s", "body": "b"}),
                ("reply_email", {"message_id": "INBOX/3", "body": "b"}),
            ]:
                seen.append(env.step(name, arguments).observation.model_dump())
            env.close_episode()
            return seen

    assert play(11) == play(11)
    one, other = play(11), play(12)
    assert one[-1]["structured_content"]["message_id"] != other[-1]["structured_content"]["message_id"]


def test_episodes_do_not_see_each_others_mail_or_read_flags(sim: LiveServer) -> None:
    with EnvClient(sim.url) as a, EnvClient(sim.url) as b:
        a.reset(task_id=SHIPPED, seed=5)
        b.reset(task_id=SHIPPED, seed=5)
        call(a, "send_email", to=["ana@example.com"], subject="zanzibar only in A", body="x")
        call(a, "read_email", message_id="INBOX/38")
        assert call(a, "list_emails", folder="Sent", limit=1)["messages"][0]["subject"] == "zanzibar only in A"
        assert call(b, "list_emails", folder="Sent", limit=100)["matched"] == 7
        assert call(b, "search_emails", query="zanzibar")["matched"] == 0
        assert call(b, "list_emails", limit=1)["messages"][0]["unread"]


def test_mcp_calls_in_sim_carry_reward_and_done(sim: LiveServer) -> None:
    from mcp import Client

    async def run() -> tuple[Any, Any]:
        async with Client(sim.mcp_url) as client:
            listed = await client.call_tool("list_emails", {"limit": 2})
            sent = await client.call_tool("send_email", {"to": ["nobody@example.com"], "subject": "s", "body": "b"})
        return listed, sent

    listed, sent = anyio.run(run)
    assert not listed.is_error and listed.structured_content["matched"] >= 38  # the shipped 38, and the task's own
    assert sent.meta["openenv-mcp/reward"] == 0.0 and sent.structured_content["id"].startswith("Sent/")


def test_a_sim_reset_is_cheap() -> None:
    async def measure() -> float:
        runtime = Runtime(environment, Settings(mode="sim", max_episodes=10_000), environment.settings())
        async with runtime.run():
            timings = []
            for seed in range(500):
                started = time.perf_counter()
                result = await runtime.reset(seed=seed)
                timings.append(time.perf_counter() - started)
                await runtime.close_episode(result.episode_id)
            return statistics.median(timings)

    assert anyio.run(measure) < 0.002


# prod: real SMTP (aiosmtpd) and IMAP (Dovecot) on 127.0.0.1 -----------------------------------------------------


class Mail:
    """The running mail servers of one prod test."""

    def __init__(self, imap: Dovecot, smtp: SmtpServer) -> None:
        self.imap = imap
        self.smtp = smtp


def prod_environment(monkeypatch: pytest.MonkeyPatch, imap: Dovecot, smtp: SmtpServer, **extra: str) -> None:
    settings = {
        "EMAIL_FROM_ADDRESS": OWNER,
        "EMAIL_FROM_NAME": "Alex Morgan",
        "EMAIL_SMTP_HOST": smtp.host,
        "EMAIL_SMTP_PORT": str(smtp.port),
        "EMAIL_SMTP_SECURITY": "none",
        "EMAIL_IMAP_HOST": imap.host,
        "EMAIL_IMAP_PORT": str(imap.port),
        "EMAIL_IMAP_SECURITY": "none",
        "EMAIL_IMAP_USERNAME": imap.user,
        "EMAIL_IMAP_PASSWORD": imap.password,
        "EMAIL_TIMEOUT": "5",
        **extra,
    }
    for name, value in settings.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def mail() -> Iterator[Mail]:
    with dovecot() as imap, smtp_server() as smtp:
        yield Mail(imap, smtp)


@pytest.fixture
def prod(mail: Mail, monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveServer]:
    prod_environment(monkeypatch, mail.imap, mail.smtp)
    with live_server(environment, mode="prod") as server:
        yield server


def mcp(server: LiveServer, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """One tools/call over MCP: error flag, text and structured content."""
    from mcp import Client

    async def run() -> dict[str, Any]:
        async with Client(server.mcp_url) as client:
            result = await client.call_tool(name, arguments or {})
        text = getattr(result.content[0], "text", "")
        return {"error": result.is_error, "text": text, "data": result.structured_content}

    return anyio.run(run)


def ok(server: LiveServer, name: str, **arguments: Any) -> Any:
    answer = mcp(server, name, arguments)
    assert not answer["error"], answer["text"]
    return answer["data"]


READ_ONLY_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("list_folders", {}),
    ("list_emails", {"limit": 100}),
    ("list_emails", {"limit": 5}),
    ("list_emails", {"unread_only": True, "limit": 100}),
    ("list_emails", {"sender": "priya", "limit": 100}),
    ("list_emails", {"since": "2024-06-12", "until": "2024-06-12", "limit": 100}),
    ("list_emails", {"folder": "Archive", "until": "2024-04-30"}),
    ("list_emails", {"folder": "Sent", "limit": 100}),
    ("search_emails", {"query": "invoice", "limit": 100}),
    ("search_emails", {"query": "GLOBEX renewal"}),
    ("search_emails", {"query": "zoë"}),
    ("search_emails", {"query": "rita.chen@globex"}),
    ("search_emails", {"query": "€842.17"}),
    ("search_emails", {"query": "offsite", "folder": "Sent"}),
    ("read_email", {"message_id": "INBOX/19"}),
    ("read_email", {"message_id": "INBOX/21"}),
    ("read_email", {"message_id": "Sent/5"}),
    ("read_email", {"message_id": "Newsletters/1"}),
    ("list_emails", {"unread_only": True, "limit": 100}),  # after the reads: both marked INBOX/19 and /21 read
]


@pytest.mark.prod
def test_prod_reads_the_same_mailbox_as_sim(sim: LiveServer, prod: LiveServer) -> None:
    with EnvClient(sim.url) as env:
        env.reset(task_id=SHIPPED, seed=1)
        for name, arguments in READ_ONLY_CALLS:
            expected = call(env, name, **arguments)
            assert ok(prod, name, **arguments) == expected, (name, arguments)


@pytest.mark.prod
def test_prod_bad_references_are_tool_errors(prod: LiveServer) -> None:
    missing = mcp(prod, "read_email", {"message_id": "INBOX/999"})
    assert missing["error"] and "No message 'INBOX/999' in folder 'INBOX'" in missing["text"]
    folder = mcp(prod, "list_emails", {"folder": "Spam"})
    assert folder["error"] and "No folder 'Spam'" in folder["text"] and "Archive" in folder["text"]
    address = mcp(prod, "send_email", {"to": ["bob"], "subject": "s", "body": "b"})
    assert address["error"] and "'bob' is not an email address" in address["text"]


@pytest.mark.prod
def test_prod_send_delivers_through_smtp_and_files_a_copy_in_sent(prod: LiveServer, mail: Mail) -> None:
    body = "Hi Ana,\n\nThe café opens at 9.\n\nAlex"
    sent = ok(prod, "send_email", to=["ana@example.com"], cc=["bo@example.org"], subject="Café hours", body=body)
    [received] = mail.smtp.wait_for(1)
    assert received.mail_from == OWNER
    assert received.rcpt_tos == ["ana@example.com", "bo@example.org"]
    message = received.message
    assert (message["From"], message["To"], message["Cc"]) == (
        f"Alex Morgan <{OWNER}>",
        "ana@example.com",
        "bo@example.org",
    )
    assert message["Subject"] == "Café hours" and message["Message-ID"] == sent["message_id"]
    assert message.get_content().replace("\r\n", "\n").rstrip("\n") == body
    assert sent["id"] == "Sent/8"
    copy = ok(prod, "read_email", message_id="Sent/8")
    assert (copy["subject"], copy["body"], copy["unread"]) == ("Café hours", body, False)
    assert ok(prod, "list_emails", folder="Sent", limit=1)["messages"][0]["id"] == "Sent/8"


@pytest.mark.prod
def test_prod_reply_and_forward_carry_thread_headers_and_attachments(
    sim: LiveServer, prod: LiveServer, mail: Mail
) -> None:
    answer = ok(prod, "reply_email", message_id="INBOX/18", body="Thursday 14:00 is confirmed.", reply_all=True)
    forward = ok(prod, "forward_email", message_id="INBOX/1", to=["accounting@northwind.example"], note="Please pay.")
    replied, forwarded = mail.smtp.wait_for(2)

    assert replied.message["Subject"] == "Re: Q3 planning meeting"
    assert replied.message["In-Reply-To"] == "<q3-planning-priya@northwind.example>"
    assert replied.message["References"].split() == [
        "<q3-planning@northwind.example>",
        "<q3-planning-dan@northwind.example>",
        "<q3-planning-lena@northwind.example>",
        "<q3-planning-priya@northwind.example>",
    ]
    assert sorted(replied.rcpt_tos) == [
        "dan.okafor@northwind.example",
        "lena.fischer@northwind.example",
        "priya.raman@northwind.example",
    ]

    assert forwarded.message["Subject"] == "Fwd: Invoice INV-GX-20931 for May support"
    assert forwarded.rcpt_tos == ["accounting@northwind.example"]
    [attachment] = list(forwarded.message.iter_attachments())
    original = MAILBOX.by_message_id["<globex-invoice-20931@globex.example>"].attachments[0]
    assert attachment.get_filename() == original.filename == "invoice-INV-GX-20931.pdf"
    assert len(attachment.get_content()) == original.size
    body = forwarded.message.get_body(preferencelist=("plain",))
    assert body is not None
    assert body.get_content().replace("\r\n", "\n").startswith("Please pay.\n\n---------- Forwarded message")

    with EnvClient(sim.url) as env:  # the same calls in sim send the same headers
        env.reset(task_id=SHIPPED, seed=1)
        sim_answer = call(
            env, "reply_email", message_id="INBOX/18", body="Thursday 14:00 is confirmed.", reply_all=True
        )
        sim_forward = call(env, "forward_email", message_id="INBOX/1", to=["accounting@northwind.example"], note="x")
    volatile = {"id", "message_id", "date"}
    assert {k: v for k, v in answer.items() if k not in volatile} == {
        k: v for k, v in sim_answer.items() if k not in volatile
    }
    assert {k: v for k, v in forward.items() if k not in volatile} == {
        k: v for k, v in sim_forward.items() if k not in volatile
    }


@pytest.mark.prod
def test_the_tool_list_is_identical_in_sim_and_prod(sim: LiveServer, prod: LiveServer) -> None:
    from mcp import Client

    async def tools(url: str) -> list[dict[str, Any]]:
        async with Client(url) as client:
            listed = await client.list_tools()
        return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]

    sim_tools, prod_tools = anyio.run(tools, sim.mcp_url), anyio.run(tools, prod.mcp_url)
    assert sim_tools == prod_tools
    assert [t["name"] for t in sim_tools] == [
        "list_folders",
        "list_emails",
        "search_emails",
        "read_email",
        "send_email",
        "reply_email",
        "forward_email",
    ]
    assert McpDoor(sim.runtime).tool_list() == McpDoor(prod.runtime).tool_list()


@pytest.mark.prod
def test_prod_with_the_mail_servers_down_is_unready_says_why_and_keeps_serving(
    mail: Mail, monkeypatch: pytest.MonkeyPatch
) -> None:
    prod_environment(monkeypatch, mail.imap, mail.smtp)
    with live_server(environment, mode="prod") as server:
        assert httpx.get(f"{server.url}/readyz").status_code == 200
        assert ok(server, "list_emails", limit=1)["matched"] == 38  # leaves a pooled IMAP connection behind
        mail.imap.stop()
        mail.smtp.stop()
        ready = httpx.get(f"{server.url}/readyz")
        assert ready.status_code == 503
        reason = ready.json()["backends"]["email"]
        assert f"IMAP at 127.0.0.1:{mail.imap.port} is unavailable" in reason
        assert f"SMTP at 127.0.0.1:{mail.smtp.port} is unavailable" in reason
        down = mcp(server, "list_emails", {"limit": 1})
        assert down["error"] and f"IMAP at 127.0.0.1:{mail.imap.port} is unavailable" in down["text"]
        unsent = mcp(server, "send_email", {"to": ["a@example.com"], "subject": "s", "body": "b"})
        assert unsent["error"] and "SMTP at 127.0.0.1" in unsent["text"] and "unavailable" in unsent["text"]
        assert httpx.get(f"{server.url}/healthz").json()["status"] == "ok"
        assert len(anyio.run(_list_tools, server.mcp_url)) == 7


async def _list_tools(url: str) -> list[Any]:
    from mcp import Client

    async with Client(url) as client:
        return list((await client.list_tools()).tools)


@pytest.mark.prod
def test_prod_never_reached_servers_are_unready_with_a_clear_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    for name, value in {
        "EMAIL_FROM_ADDRESS": OWNER,
        "EMAIL_SMTP_HOST": "127.0.0.1",
        "EMAIL_SMTP_PORT": str(port),
        "EMAIL_IMAP_HOST": "127.0.0.1",
        "EMAIL_IMAP_PORT": str(port),
        "EMAIL_IMAP_USERNAME": "alex",
        "EMAIL_IMAP_PASSWORD": "x",
        "EMAIL_TIMEOUT": "3",
    }.items():
        monkeypatch.setenv(name, value)
    with live_server(environment, mode="prod") as server:
        ready = httpx.get(f"{server.url}/readyz")
        assert ready.status_code == 503
        assert "Connection refused" in ready.json()["backends"]["email"]
        down = mcp(server, "read_email", {"message_id": "INBOX/1"})
        assert down["error"] and f"IMAP at 127.0.0.1:{port} is unavailable" in down["text"]


@pytest.mark.prod
def test_prod_with_a_wrong_password_names_the_settings_to_check(mail: Mail, monkeypatch: pytest.MonkeyPatch) -> None:
    prod_environment(monkeypatch, mail.imap, mail.smtp, EMAIL_IMAP_PASSWORD="wrong")
    with live_server(environment, mode="prod") as server:
        ready = httpx.get(f"{server.url}/readyz")
        assert ready.status_code == 503
        assert "refused the login of 'alex.morgan@northwind.example'" in ready.json()["backends"]["email"]
        assert "check EMAIL_IMAP_USERNAME and EMAIL_IMAP_PASSWORD" in ready.json()["backends"]["email"]


@pytest.mark.prod
@pytest.mark.parametrize("smtp_security", ["starttls", "tls"])
def test_prod_over_tls_with_smtp_auth(monkeypatch: pytest.MonkeyPatch, smtp_security: str) -> None:
    with ExitStack() as stack:
        certs: Certificates = stack.enter_context(certificates())
        imap = stack.enter_context(dovecot(tls=certs))
        smtp = stack.enter_context(
            smtp_server(
                auth=True,
                starttls=certs if smtp_security == "starttls" else None,
                implicit_tls=certs if smtp_security == "tls" else None,
            )
        )
        prod_environment(
            monkeypatch,
            imap,
            smtp,
            EMAIL_IMAP_SECURITY="tls",
            EMAIL_SMTP_SECURITY=smtp_security,
            EMAIL_SMTP_USERNAME=SMTP_USER,
            EMAIL_SMTP_PASSWORD=SMTP_PASSWORD,
            EMAIL_TLS_CA_FILE=str(certs.ca_file),
        )
        server = stack.enter_context(live_server(environment, mode="prod"))
        assert httpx.get(f"{server.url}/readyz").status_code == 200
        assert ok(server, "list_emails", limit=3)["matched"] == 38
        sent = ok(server, "reply_email", message_id="INBOX/30", body="Tuesday 9:00 works.")
        [received] = smtp.wait_for(1)
        assert received.message["In-Reply-To"] == "<globex-call@globex.example>"
        assert smtp.logins and sent["id"] == "Sent/8"


def test_prod_start_up_names_a_missing_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("EMAIL_FROM_ADDRESS", "EMAIL_SMTP_HOST", "EMAIL_IMAP_HOST", "EMAIL_IMAP_USERNAME"):
        monkeypatch.setenv(name, "alex@example.com" if name == "EMAIL_FROM_ADDRESS" else "x")
    monkeypatch.delenv("EMAIL_IMAP_PASSWORD", raising=False)
    with pytest.raises(ConfigError, match="set EMAIL_IMAP_PASSWORD"):
        build_runtime(environment, Settings(mode="prod"))
    build_runtime(environment, Settings(mode="sim"))  # sim needs none of them


def test_the_sim_backend_ignores_prod_settings_and_is_deterministic() -> None:
    async def open_twice() -> tuple[str, str]:
        task = next(iter(load_tasks()))
        settings = EmailSettings(smtp_host="ignored.example")
        first, second = await SimMailbox.open(task, 9, settings), await SimMailbox.open(task, 9, settings)
        draft = Draft(to=("a@example.com",), cc=(), subject="s", body="b", text="b")
        return (await first.send(draft)).message_id, (await second.send(draft)).message_id

    one, two = anyio.run(open_twice)
    assert one == two


@pytest.mark.prod
def test_seeding_refuses_an_account_that_already_holds_mail(
    mail: Mail, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from openenv_mcp.servers.email.seed import main

    prod_environment(monkeypatch, mail.imap, mail.smtp)
    assert main([]) == 1
    assert "Folder 'INBOX' already holds mail" in capsys.readouterr().out
