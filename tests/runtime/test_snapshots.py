"""Forks, snapshots and restores through the public surfaces: HTTP, EnvClient, /ws and the batch path."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.sync.client import connect

from openenv_mcp import CapacityExceeded, EnvClient, EpisodeFinished, EpisodeNotFound
from openenv_mcp.errors import ReplayDiverged, SnapshotRejected
from openenv_mcp.runtime.snapshots import SnapshotSigner
from openenv_mcp.servers.email import environment as email
from openenv_mcp.servers.search import environment as search
from openenv_mcp.servers.sql import environment as sql
from tests.support import LiveServer, live_server


@pytest.fixture(scope="module")
def mail_server() -> Iterator[LiveServer]:
    with live_server(email, mode="sim", max_episodes=32) as server:
        yield server


READ = ("read_email", {"message_id": "INBOX/3"})
UNREAD = ("list_emails", {"folder": "INBOX", "unread_only": True, "limit": 50})
SEND = ("send_email", {"to": ["someone@example.com"], "subject": "Hello", "body": "A note."})


def play(env: EnvClient, *calls: tuple[str, dict[str, Any]], episode_id: str | None = None) -> list[Any]:
    return [env.step(tool, arguments, episode_id=episode_id).model_dump() for tool, arguments in calls]


@pytest.mark.parametrize("via", ["auto", "replay"])
def test_a_fork_has_the_source_state_and_both_go_on_independently(mail_server: LiveServer, via: str) -> None:
    with EnvClient(mail_server.url) as env:
        env.reset(seed=11)
        play(env, UNREAD, READ, SEND)
        source = env.state()
        fork = env.fork(via=via)
        assert fork.info["via"] == ("fast" if via == "auto" else "replay")
        assert fork.info["forked_from"] == source.episode_id and fork.episode_id != source.episode_id
        copy = env.state(episode_id=fork.episode_id)
        assert (copy.task_id, copy.seed, copy.step_count, copy.total_reward, copy.done) == (
            source.task_id,
            source.seed,
            3,
            source.total_reward,
            source.done,
        )
        assert fork.observation.structured_content is not None  # the source's last observation: what was sent
        assert fork.observation.structured_content["subject"] == "Hello"
        # The same next steps give the same observations on both (Message-IDs and clock included)...
        assert [r["observation"] for r in play(env, SEND, UNREAD)] == [
            r["observation"] for r in play(env, SEND, UNREAD, episode_id=fork.episode_id)
        ]
        # ...and what one does from now on does not reach the other.
        listed = env.step(*UNREAD, episode_id=fork.episode_id).observation.structured_content
        assert listed is not None
        unread = listed["messages"][0]["id"]
        play(env, ("read_email", {"message_id": unread}), episode_id=fork.episode_id)
        mine, theirs = (env.step(*UNREAD), env.step(*UNREAD, episode_id=fork.episode_id))
        assert mine.observation.structured_content is not None and theirs.observation.structured_content is not None
        assert mine.observation.structured_content["matched"] == theirs.observation.structured_content["matched"] + 1
        assert env.state().step_count == 6 and env.state(episode_id=fork.episode_id).step_count == 8
        env.close_episode(episode_id=fork.episode_id)


def test_a_finished_episode_forks_into_a_finished_copy_and_unknown_ones_are_404(sim_server: LiveServer) -> None:
    with EnvClient(sim_server.url) as env:
        env.reset(task_id="sql-001", seed=1)
        env.step("run_query", {"sql": "SELECT COUNT(*) FROM orders"})
        done = env.step("submit_answer", {"rows": [[60]]})
        assert done.done and done.reward == 1.0
        for via in ("auto", "replay"):
            fork = env.fork(via=via)
            assert (fork.done, fork.reward, fork.info["total_reward"], fork.info["step_count"]) == (True, 1.0, 1.0, 2)
            with pytest.raises(EpisodeFinished):
                env.step("list_tables", episode_id=fork.episode_id)
            env.close_episode(episode_id=fork.episode_id)
        with pytest.raises(EpisodeNotFound, match="ghost"):
            env.fork(episode_id="ghost")
        with pytest.raises(EpisodeNotFound):
            env.snapshot(episode_id="ghost")


def test_forks_count_against_the_cap() -> None:
    with live_server(sql, mode="sim", max_episodes=2) as server, EnvClient(server.url) as env:
        env.reset(seed=3)
        env.fork()
        with pytest.raises(CapacityExceeded):
            env.fork()
        with pytest.raises(CapacityExceeded):
            env.fork(via="replay")
        assert len(server.runtime.episodes) == 2


def test_forks_over_the_websocket_and_the_batch_path(mail_server: LiveServer) -> None:
    url = mail_server.url.replace("http://", "ws://") + "/ws"
    with connect(url) as ws:

        def ask(**message: Any) -> dict[str, Any]:
            ws.send(json.dumps(message))
            return dict(json.loads(ws.recv(timeout=10)))

        source = ask(op="reset", seed=5)["result"]["episode_id"]
        ask(op="step", action={"tool": READ[0], "arguments": READ[1]})
        fork = ask(op="fork", id=7)
        assert fork["ok"] and fork["id"] == 7 and fork["result"]["info"]["step_count"] == 1
        state = ask(op="state")  # the fork is now the connection's current episode
        assert state["result"]["episode_id"] == fork["result"]["episode_id"]
        batch = ask(
            op="step_batch",
            steps=[
                {"episode_id": source, "action": {"tool": SEND[0], "arguments": SEND[1]}},
                {"episode_id": source, "fork": True},
                {"episode_id": "ghost", "fork": True},
            ],
        )["result"]
        assert [item["ok"] for item in batch] == [True, True, False]
        assert batch[1]["result"]["info"]["step_count"] == 2  # forked after the step before it in the batch
        assert batch[2]["status"] == 404
        snapshot = ask(op="snapshot", episode_id=source)["result"]
        restored = ask(op="restore", snapshot=snapshot)["result"]
        assert restored["info"]["step_count"] == 2 and restored["episode_id"] != source
        assert ask(op="fork", episode_id="ghost")["status"] == 404
    with EnvClient(mail_server.url) as env:
        env.reset(seed=5)
        items = env.fork_batch([env.episode_id or "", env.episode_id or ""])
        assert [item.ok for item in items] == [True, True]
        assert len({item.result.episode_id for item in items if item.result is not None}) == 2


def test_a_snapshot_restores_on_another_replica_and_continues_identically() -> None:
    with (
        live_server(email, mode="sim", snapshot_key="shared") as one,
        live_server(email, mode="sim", snapshot_key="shared") as two,
        EnvClient(one.url) as first,
        EnvClient(two.url) as second,
    ):
        first.reset(seed=21)
        play(first, UNREAD, READ, SEND)
        snapshot = first.snapshot()
        assert snapshot.signature.startswith("hmac-sha256:") and snapshot.step_count == 3
        assert len(snapshot.model_dump_json()) < 4096  # small: digests, not observations
        restored = second.reset(snapshot=snapshot)
        assert restored.info["step_count"] == 3 and restored.info["total_reward"] == first.state().total_reward
        assert play(first, SEND, UNREAD) == [{**r, "episode_id": first.episode_id} for r in play(second, SEND, UNREAD)]


def test_snapshots_of_another_server_or_key_or_altered_ones_are_rejected() -> None:
    with (
        live_server(sql, mode="sim", snapshot_key="k1") as one,
        live_server(sql, mode="sim", snapshot_key="k2") as other_key,
        live_server(search, mode="sim", snapshot_key="k1") as other_env,
        EnvClient(one.url) as env,
    ):
        env.reset(seed=4)
        env.step("list_tables")
        snapshot = env.snapshot()
        with EnvClient(other_key.url) as elsewhere, pytest.raises(SnapshotRejected, match="OPENENV_SNAPSHOT_KEY"):
            elsewhere.reset(snapshot=snapshot)
        with EnvClient(other_env.url) as elsewhere, pytest.raises(SnapshotRejected, match="made by server 'sql'"):
            elsewhere.reset(snapshot=snapshot)
        altered = snapshot.model_copy(update={"seed": 5})
        with pytest.raises(SnapshotRejected, match="altered"):
            env.reset(snapshot=altered)
        with pytest.raises(Exception, match="takes no task_id"):
            env.reset(snapshot=snapshot, seed=4)
        assert env.reset(snapshot=snapshot).info["step_count"] == 1


def test_a_replay_that_differs_names_the_first_differing_step(sim_server: LiveServer) -> None:
    with EnvClient(sim_server.url) as env:
        env.reset(seed=8)
        env.step("list_tables")
        env.step("describe_table", {"table": "orders"})
        env.step("run_query", {"sql": "SELECT 1"})
        snapshot = env.snapshot()
        # Without a key the signature is a plain digest: someone who rewrites a recorded observation can re-sign,
        # and the replay is what catches it.
        snapshot.steps[1].observation = "00" * 16
        runtime = sim_server.runtime
        signer = SnapshotSigner(runtime.env.name, runtime.snapshots.toolset, None)
        snapshot.signature = signer.signature(snapshot)
        opened = len(runtime.episodes)
        with pytest.raises(ReplayDiverged, match=r"step 2 \(describe_table .*orders.*\) of the snapshot"):
            env.reset(snapshot=snapshot)
        assert len(runtime.episodes) == opened  # the half-replayed episode was closed


def test_a_coding_fork_copies_the_workspace_without_following_or_blocking_on_what_the_code_planted() -> None:
    from openenv_mcp.servers.coding import environment as coding

    plant = (
        "import os\n"
        "open('notes.txt', 'w').write('kept')\n"
        "os.mkdir('sub'); open('sub/deep.txt', 'w').write('deep')\n"
        "os.symlink('/etc/hostname', 'link')\n"
        "os.mkfifo('pipe')\n"
        "print('planted')"
    )
    look = (
        "import os\n"
        "print(sorted(os.listdir('.')), open('notes.txt').read(), open('sub/deep.txt').read(),"
        " os.path.islink('link'), os.readlink('link'))"
    )
    with live_server(coding, mode="sim") as server, EnvClient(server.url, timeout=60) as env:
        env.reset(seed=2)
        assert "planted" in env.step("run_python", {"code": plant}).observation.text
        fork = env.fork()
        assert fork.info["via"] == "fast"
        seen = env.step("run_python", {"code": look}, episode_id=fork.episode_id).observation.structured_content
        assert seen is not None
        assert "['link', 'main.py', 'notes.txt', 'sub'] kept deep True /etc/hostname" in seen["stdout"]
        env.step("run_python", {"code": "open('notes.txt', 'w').write('changed')"}, episode_id=fork.episode_id)
        mine = env.step("run_python", {"code": "print(open('notes.txt').read())"}).observation.structured_content
        assert mine is not None and mine["stdout"] == "kept\n"
