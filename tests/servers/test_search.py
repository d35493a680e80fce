"""The search environment: the answers are findable in both modes, graded by EM/F1, same tools in sim and prod."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from importlib import resources
from typing import Any

import anyio
import httpx
import pytest

from openenv_mcp import ConfigError, EnvClient, InvalidToolArguments, Settings, ToolFailed
from openenv_mcp.runtime import build_runtime
from openenv_mcp.servers.search import environment
from openenv_mcp.servers.search.backends import sim_index
from openenv_mcp.servers.search.corpus import corpus
from openenv_mcp.servers.search.load import main as load_main
from openenv_mcp.servers.search.query import parse_query
from openenv_mcp.servers.search.sphinx import main as sphinx_main
from openenv_mcp.servers.search.tasks import normalize_answer, score_answer, token_f1
from tests.support import LiveServer, free_port, live_server
from tests.support.search import (
    SearchDatabase,
    SphinxService,
    mcp_call,
    mcp_calls,
    mcp_tool_list,
    search_database,
    sphinx_service,
)

TASKS: list[dict[str, Any]] = json.loads(
    resources.files("openenv_mcp.servers.search").joinpath("data/tasks.json").read_text()
)
HOPS = [(task["id"], hop["query"], hop["doc_id"]) for task in TASKS for hop in task["hops"]]


@pytest.fixture(scope="module")
def search_sim() -> Iterator[LiveServer]:
    with live_server(environment, mode="sim", max_episodes=64) as server:
        yield server


@pytest.fixture(scope="module")
def search_db() -> Iterator[SearchDatabase]:
    with search_database() as database:
        yield database


def observe(env: EnvClient, tool: str, **arguments: Any) -> Any:
    return env.step(tool, arguments).observation


# the corpus and the tasks ----------------------------------------------------------------------------


def test_the_corpus_is_large_enough_and_every_task_cites_documents_that_state_its_answer() -> None:
    docs = {record.doc_id: record for record in corpus()}
    assert len(docs) >= 1_000
    assert {record.category for record in docs.values()} == {
        "person",
        "place",
        "organization",
        "product",
        "event",
        "news",
    }
    splits = [task["split"] for task in TASKS]
    assert len(TASKS) >= 20 and splits.count("train") >= 10 and splits.count("test") >= 5
    for task in TASKS:
        stated = [normalize_answer(task["answers"][0]) in normalize_answer(docs[d].text) for d in task["evidence"]]
        assert any(stated), task["id"]


# answer scoring ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("The Kestrel-Motors", "kestrel motors"),
        ("4,812 m.", "4812 m"),
        ("  In   1912! ", "in 1912"),
        ("Zürich", "zurich"),
        ("An Apple a day", "apple day"),
        ("3.5 km", "3 5 km"),
        ("", ""),
    ],
)
def test_answers_are_normalised_before_comparison(raw: str, normalized: str) -> None:
    assert normalize_answer(raw) == normalized


def test_exact_match_scores_one_and_anything_else_its_best_token_f1() -> None:
    assert score_answer("Velmora", ["Velmora"]) == 1.0
    assert score_answer("the velmora.", ["Velmora"]) == 1.0
    assert score_answer("in 1912", ["1912", "in 1912"]) == 1.0  # an alias
    assert score_answer("4812", ["4,812 metres", "4,812"]) == 1.0
    assert score_answer("Velmora City", ["Velmora"]) == 0.6667  # precision 1/2, recall 1
    assert score_answer("Kestrel Motors Ltd", ["Kestrel Motors"]) == 0.8  # precision 2/3, recall 1
    assert score_answer("Kestrel", ["Kestrel Motors", "Kestrel Motor Works"]) == 0.6667  # best of the aliases
    assert score_answer("Nordbrook", ["Velmora"]) == 0.0
    assert score_answer("...", ["Velmora"]) == 0.0
    assert token_f1("b b", "b") == pytest.approx(2 / 3)  # repeated words count once per match


# the query language --------------------------------------------------------------------------------


def test_queries_keep_words_and_phrases_and_drop_stop_words() -> None:
    parsed = parse_query('Who founded the Kestrel-Motors company? "Treaty of Velmora" founded')
    assert parsed.terms == (("founded",), ("kestrel", "motors"), ("company",), ("treaty", "of", "velmora"))
    assert parsed.fts5() == '"founded" OR "kestrel motors" OR "company" OR "treaty of velmora"'
    assert parsed.websearch() == '"founded" or "kestrel motors" or "company" or "treaty of velmora"'
    assert parse_query('NEAR(a b) OR "x').terms == (("near", "a"), ("b",), ("x",))  # no engine syntax leaks through


@pytest.mark.parametrize("query", ["   ", "the of and", "?!", '""'])
def test_a_query_with_nothing_searchable_is_refused(query: str) -> None:
    with pytest.raises(ToolFailed, match="no searchable words"):
        parse_query(query)


# sim, through the HTTP control plane ------------------------------------------------------------------


def test_every_tasks_natural_query_ranks_its_answer_document_in_the_top_10(search_sim: LiveServer) -> None:
    with EnvClient(search_sim.url) as env:
        for task_id, query, doc_id in HOPS:
            env.reset(task_id=task_id)
            hits = observe(env, "search", query=query, k=10).structured_content["hits"]
            assert doc_id in [hit["doc_id"] for hit in hits], (task_id, query)
            env.close_episode()


def test_hits_are_ranked_with_snippets_marking_the_matched_words(search_sim: LiveServer) -> None:
    task = TASKS[0]
    query, doc_id = task["hops"][-1]["query"], task["hops"][-1]["doc_id"]
    with EnvClient(search_sim.url) as env:
        env.reset(seed=1)
        result = observe(env, "search", query=query, k=5).structured_content
    assert result["query"] == query and 1 <= len(result["hits"]) <= 5
    scores = [hit["score"] for hit in result["hits"]]
    assert scores == sorted(scores, reverse=True)
    for hit in result["hits"]:
        assert set(hit) == {"doc_id", "title", "category", "date", "score", "snippet"}
        assert "**" in hit["snippet"] and dt.date.fromisoformat(hit["date"])
    assert doc_id in [hit["doc_id"] for hit in result["hits"]]


def test_fetch_returns_the_whole_document(search_sim: LiveServer) -> None:
    record = next(r for r in corpus() if r.doc_id == TASKS[0]["evidence"][0])
    with EnvClient(search_sim.url) as env:
        env.reset(seed=1)
        document = observe(env, "fetch", doc_id=record.doc_id).structured_content
    assert document == {
        "doc_id": record.doc_id,
        "title": record.title,
        "category": record.category,
        "date": record.date,
        "text": record.text,
    }


def test_collection_info_describes_the_corpus(search_sim: LiveServer) -> None:
    with EnvClient(search_sim.url) as env:
        env.reset(seed=1)
        info = observe(env, "collection_info").structured_content
    assert info["documents"] == len(corpus()) == sum(info["categories"].values())
    assert info["first_date"] == min(r.date for r in corpus()) and info["last_date"] == max(r.date for r in corpus())


def assert_only_2019_events(hits: list[dict[str, Any]]) -> None:
    finals = [hit["title"] for hit in hits if hit["title"].endswith("Cup Final")]
    assert len(finals) >= 4 and all(title.startswith("2019 ") for title in finals)
    assert all(hit["category"] == "event" and hit["date"].startswith("2019") for hit in hits)


def test_filters_narrow_the_hits_by_category_and_date(search_sim: LiveServer) -> None:
    with EnvClient(search_sim.url) as env:
        env.reset(seed=1)
        news = observe(env, "search", query="company chief executive", category="news", k=50).structured_content
        assert len(news["hits"]) == 50 and {hit["category"] for hit in news["hits"]} == {"news"}
        window = observe(
            env, "search", query="cup final", category="event", date_from="2019-01-01", date_to="2019-12-31", k=50
        ).structured_content["hits"]
        assert_only_2019_events(window)
        since = observe(env, "search", query="acquire", date_from="2024-06-01", k=50).structured_content["hits"]
        assert since and all(hit["date"] >= "2024-06-01" for hit in since)
        none = observe(env, "search", query="cup final", category="product").structured_content["hits"]
        assert none == []


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"query": "velmora", "k": 0}, "k: Input should be greater than or equal to 1"),
        ({"query": "velmora", "k": 51}, "k: Input should be less than or equal to 50"),
        ({"query": ""}, "query: String should have at least 1 character"),
        ({"query": "velmora", "category": "planet"}, "category: Input should be"),
        ({"query": "velmora", "date_from": "yesterday"}, "date_from: Input should be a valid date"),
        ({"k": 3}, "missing required argument 'query'"),
    ],
)
def test_invalid_search_arguments_are_rejected_with_the_reason(
    search_sim: LiveServer, arguments: dict[str, Any], problem: str
) -> None:
    with EnvClient(search_sim.url) as env:
        env.reset(seed=1)
        with pytest.raises(InvalidToolArguments, match=problem):
            env.step("search", arguments)
        assert env.state().step_count == 0


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("search", {"query": "the of who?"}, "no searchable words"),
        ("search", {"query": "velmora", "date_from": "2020-01-01", "date_to": "2019-01-01"}, "is after date_to"),
        ("fetch", {"doc_id": "doc-9999"}, "No document with doc_id 'doc-9999'"),
        ("fetch", {"doc_id": "'; DROP TABLE documents; --"}, "No document with doc_id"),
        ("submit_answer", {"answer": "   "}, "The answer is blank"),
    ],
)
def test_refused_calls_say_why_and_do_not_end_the_episode(
    search_sim: LiveServer, tool: str, arguments: dict[str, Any], message: str
) -> None:
    with EnvClient(search_sim.url) as env:
        env.reset(seed=1)
        refused = env.step(tool, arguments)
        assert refused.observation.is_error and message in refused.observation.text
        assert (refused.reward, refused.done) == (0.0, False)
        assert observe(env, "fetch", doc_id="doc-0001").structured_content["doc_id"] == "doc-0001"


def test_every_task_is_solved_by_its_gold_answer_and_a_wrong_answer_earns_less(search_sim: LiveServer) -> None:
    with EnvClient(search_sim.url) as env:
        for task in TASKS:
            for answer in task["answers"]:
                env.reset(task_id=task["id"])
                result = env.step("submit_answer", {"answer": answer})
                assert (result.reward, result.done) == (1.0, True), (task["id"], answer)
                env.close_episode()
            env.reset(task_id=task["id"])
            wrong = env.step("submit_answer", {"answer": "Nobody knows"})
            assert wrong.reward < 1.0 and wrong.done, task["id"]
            env.close_episode()


def test_a_partly_right_answer_earns_its_token_f1(search_sim: LiveServer) -> None:
    task = next(t for t in TASKS if len(t["answers"][0].split()) == 2 and t["answers"][0][0].isalpha())
    with EnvClient(search_sim.url) as env:
        env.reset(task_id=task["id"])
        result = env.step("submit_answer", {"answer": task["answers"][0].split()[0]})
    assert result.reward == pytest.approx(2 * 1.0 * 0.5 / 1.5, abs=1e-4) and result.done


def test_the_episode_ends_at_the_step_limit_without_an_answer(search_sim: LiveServer) -> None:
    with EnvClient(search_sim.url) as env:
        env.reset(seed=3)
        results = [env.step("search", {"query": "river"}) for _ in range(environment.max_steps)]
    assert [r.done for r in results] == [False] * (environment.max_steps - 1) + [True]
    assert sum(r.reward for r in results) == 0.0


def test_same_seed_gives_same_task_and_observations(search_sim: LiveServer) -> None:
    def play(seed: int) -> list[Any]:
        with EnvClient(search_sim.url) as env:
            first = env.reset(seed=seed)
            seen: list[Any] = [first.info["task_id"], first.observation.model_dump()]
            for name, arguments in [
                ("search", {"query": "founded museum river", "k": 7}),
                ("search", {"query": "chief executive", "category": "news", "date_to": "2018-12-31"}),
                ("fetch", {"doc_id": "doc-0100"}),
            ]:
                seen.append(env.step(name, arguments).observation.model_dump())
            env.close_episode()
            return seen

    assert play(1234) == play(1234)
    assert play(1234)[0] != play(77)[0] or play(1234)[1] == play(77)[1]


def test_the_index_is_built_once_and_shared_by_every_episode() -> None:
    async def scenario() -> None:
        runtime = build_runtime(environment, Settings(mode="sim"))
        async with runtime.run():
            ids = [(await runtime.reset(seed=seed)).episode_id for seed in range(20)]
            backends = [runtime.episodes.get(episode_id).backend for episode_id in ids]
            assert all(backend._index is sim_index() for backend in backends)
            await runtime.close_episode(ids[0])
            assert sim_index().fetch("doc-0001").doc_id == "doc-0001"  # closing an episode leaves the index

    anyio.run(scenario)
    assert sim_index.cache_info().misses == 1


def test_sim_serves_the_same_tools_over_mcp(search_sim: LiveServer) -> None:
    found = mcp_call(search_sim, "search", {"query": TASKS[0]["hops"][0]["query"], "k": 10})
    assert not found["error"] and TASKS[0]["hops"][0]["doc_id"] in [h["doc_id"] for h in found["data"]["hits"]]
    assert [tool["name"] for tool in mcp_tool_list(search_sim)] == [
        "collection_info",
        "search",
        "fetch",
        "submit_answer",
    ]


# prod: PostgreSQL full-text search and Sphinx searchd on this machine ----------------------------------

ENGINES = ["postgresql", "sphinx"]


@pytest.fixture(scope="module")
def sphinx() -> Iterator[SphinxService]:
    with sphinx_service() as service:
        yield service


def engine_url(request: pytest.FixtureRequest, engine: str) -> str:
    if engine == "postgresql":
        database: SearchDatabase = request.getfixturevalue("search_db")
        return database.reader_url
    service: SphinxService = request.getfixturevalue("sphinx")
    return service.url


@pytest.fixture(scope="module", params=ENGINES)
def search_prod(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SEARCH_DATABASE_URL", engine_url(request, request.param))
        with live_server(environment, mode="prod") as server:
            yield server


@pytest.mark.prod
def test_prod_finds_every_tasks_answer_document_in_the_top_10(search_prod: LiveServer) -> None:
    results = mcp_calls(search_prod, [("search", {"query": query, "k": 10}) for _, query, _ in HOPS])
    for (task_id, query, doc_id), result in zip(HOPS, results, strict=True):
        assert not result["error"], result["text"]
        assert doc_id in [hit["doc_id"] for hit in result["data"]["hits"]], (task_id, query)


@pytest.mark.prod
def test_prod_returns_the_same_shapes_and_documents_as_sim(search_sim: LiveServer, search_prod: LiveServer) -> None:
    query = {"query": TASKS[1]["hops"][0]["query"], "k": 5}
    with EnvClient(search_sim.url) as env:
        env.reset(seed=1)
        sim_hits = observe(env, "search", **query).structured_content
        sim_doc = observe(env, "fetch", doc_id="doc-0042").structured_content
        sim_info = observe(env, "collection_info").structured_content
    prod_hits, prod_doc, prod_info = (
        r["data"]
        for r in mcp_calls(search_prod, [("search", query), ("fetch", {"doc_id": "doc-0042"}), ("collection_info", {})])
    )
    assert set(prod_hits) == set(sim_hits) and len(prod_hits["hits"]) == 5
    assert [set(hit) for hit in prod_hits["hits"]] == [set(hit) for hit in sim_hits["hits"]]
    assert all("**" in hit["snippet"] for hit in prod_hits["hits"])
    assert prod_doc == sim_doc
    assert prod_info == sim_info


@pytest.mark.prod
def test_prod_filters_by_category_and_date(search_prod: LiveServer) -> None:
    news, window, one = mcp_calls(
        search_prod,
        [
            ("search", {"query": "company chief executive", "category": "news", "k": 50}),
            ("search", {"query": "cup final", "category": "event", "date_from": "2019-01-01", "date_to": "2019-12-31"}),
            ("search", {"query": "cup final", "date_from": "2019-05-15", "date_to": "2019-05-15", "k": 1}),
        ],
    )
    assert len(news["data"]["hits"]) == 50 and {hit["category"] for hit in news["data"]["hits"]} == {"news"}
    assert_only_2019_events(window["data"]["hits"])
    assert [hit["date"] for hit in one["data"]["hits"]] == ["2019-05-15"]  # both bounds are inclusive


@pytest.mark.prod
def test_prod_refuses_bad_input_with_the_same_messages(search_prod: LiveServer) -> None:
    unknown, stop_words, backwards, too_many = mcp_calls(
        search_prod,
        [
            ("fetch", {"doc_id": "doc-9999"}),
            ("search", {"query": "the of who?"}),
            ("search", {"query": "velmora", "date_from": "2020-01-01", "date_to": "2019-01-01"}),
            ("search", {"query": "velmora", "k": 51}),
        ],
    )
    assert unknown["error"] and "No document with doc_id 'doc-9999'" in unknown["text"]
    assert stop_words["error"] and "no searchable words" in stop_words["text"]
    assert backwards["error"] and "is after date_to" in backwards["text"]
    assert too_many["error"] and "less than or equal to 50" in too_many["text"]


@pytest.mark.prod
def test_prod_lists_exactly_the_tools_sim_lists(search_sim: LiveServer, search_prod: LiveServer) -> None:
    assert mcp_tool_list(search_prod) == mcp_tool_list(search_sim)


@pytest.mark.prod
@pytest.mark.parametrize(
    ("scheme", "reported"),
    [
        ("postgresql://reader@", "PostgreSQL at postgresql+psycopg://reader@127.0.0.1:{port}/search is unavailable"),
        ("sphinx://", "Sphinx searchd at sphinx://127.0.0.1:{port} is unavailable"),
    ],
    ids=ENGINES,
)
def test_prod_with_the_engine_down_is_not_ready_and_says_why(
    monkeypatch: pytest.MonkeyPatch, scheme: str, reported: str
) -> None:
    port = free_port()
    monkeypatch.setenv("SEARCH_DATABASE_URL", f"{scheme}127.0.0.1:{port}/search")
    with live_server(environment, mode="prod") as server:
        ready = httpx.get(f"{server.url}/readyz")
        assert ready.status_code == 503
        assert reported.format(port=port) in ready.json()["backends"]["search"]
        first, second = mcp_calls(server, [("search", {"query": "velmora"}), ("fetch", {"doc_id": "doc-0001"})])
        assert first["error"] and reported.format(port=port) in first["text"]
        assert second["error"] and "unavailable" in second["text"]
        assert httpx.get(f"{server.url}/healthz").status_code == 200


@pytest.mark.prod
@pytest.mark.parametrize(
    ("engine", "missing", "how"),
    [
        ("postgresql", "no table 'not_loaded'", "python -m openenv_mcp.servers.search.load"),
        ("sphinx", "no index 'not_loaded'", "python -m openenv_mcp.servers.search.sphinx"),
    ],
    ids=ENGINES,
)
def test_prod_without_the_corpus_says_how_to_load_it(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, engine: str, missing: str, how: str
) -> None:
    monkeypatch.setenv("SEARCH_DATABASE_URL", engine_url(request, engine))
    monkeypatch.setenv("SEARCH_TABLE", "not_loaded")
    with live_server(environment, mode="prod") as server:
        ready = httpx.get(f"{server.url}/readyz")
        assert ready.status_code == 503
        assert missing in ready.json()["backends"]["search"]
        refused = mcp_call(server, "search", {"query": "velmora"})
        assert refused["error"] and how in refused["text"]


@pytest.mark.prod
def test_prod_sphinx_reconnects_after_searchd_restarts(sphinx: SphinxService, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEARCH_DATABASE_URL", sphinx.url)
    with live_server(environment, mode="prod") as server:
        assert not mcp_call(server, "fetch", {"doc_id": "doc-0001"})["error"]  # leaves an idle connection
        sphinx.restart()
        again = mcp_call(server, "fetch", {"doc_id": "doc-0001"})
        assert not again["error"], again["text"]
        assert httpx.get(f"{server.url}/readyz").status_code == 200


@pytest.mark.prod
def test_the_loader_creates_or_updates_a_table_and_reports_failures(
    search_db: SearchDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    assert load_main([search_db.admin_url, "--table", "copy_of_documents"]) == 0
    assert load_main([search_db.admin_url, "--table", "copy_of_documents"]) == 0  # idempotent: upserts
    assert load_main([search_db.admin_url, "--table", "copy_of_documents", "--replace"]) == 0
    assert f"Loaded {len(corpus())} documents into copy_of_documents" in capsys.readouterr().out
    with psycopg.connect(search_db.admin_url) as conn:
        assert conn.execute("SELECT COUNT(*) FROM copy_of_documents").fetchone() == (len(corpus()),)
    assert load_main([f"postgresql://nobody@127.0.0.1:{free_port()}/x"]) == 1
    assert "could not load the corpus" in capsys.readouterr().err


def test_the_sphinx_config_writer_prints_the_commands_to_run(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert sphinx_main([str(tmp_path / "idx"), "--port", "9412", "--index", "docs"]) == 0
    out = capsys.readouterr().out
    assert "indexer --config" in out and "SEARCH_DATABASE_URL=sphinx://127.0.0.1:9412 SEARCH_TABLE=docs" in out
    config = (tmp_path / "idx" / "sphinx.conf").read_text()
    assert "listen = 127.0.0.1:9412:mysql41" in config and "index docs" in config
    assert (tmp_path / "idx" / "corpus.xml").read_text().count("<sphinx:document ") == len(corpus())


def test_prod_without_a_database_url_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEARCH_DATABASE_URL", raising=False)
    with pytest.raises(ConfigError, match="set SEARCH_DATABASE_URL"):
        build_runtime(environment, Settings(mode="prod"))
