"""Tool calls written as text, read by each parser as the formats real models write them."""

from __future__ import annotations

import json

import pytest

from openenv_mcp.rollout.parsers import PARSERS, TextCall, parse_text
from openenv_mcp.servers.sql import environment

TOOLS = {tool.name: tool.input_schema for tool in environment.tools}
LIST_TABLES_SCHEMA = {"type": "object", "properties": {}, "additionalProperties": False}
QUERY_SCHEMA = {"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]}


def fenced(value: object) -> str:
    return f"```json\n{json.dumps(value)}\n```"


@pytest.mark.parametrize(
    ("text", "parser", "calls", "content"),
    [
        (  # Qwen2.5-Coder 0.5B: a sentence, then the call in a fence
            f"I will list the tables.\n{fenced({'name': 'list_tables', 'arguments': {}})}",
            "json",
            [TextCall("list_tables", {})],
            "I will list the tables.",
        ),
        (  # 1.5B: a numbered plan with fenced calls, the second with its arguments as a JSON string
            "1. Look.\n"
            + fenced({"name": "list_tables", "arguments": {}})
            + "\n2. Answer.\n"
            + fenced({"name": "run_query", "arguments": json.dumps({"sql": "SELECT 1"})}),
            "json",
            [TextCall("list_tables", {}), TextCall("run_query", {"sql": "SELECT 1"}, written='{"sql": "SELECT 1"}')],
            "1. Look.\n\n2. Answer.",
        ),
        (  # Qwen's and Hermes' own format
            'Sure.\n<tool_call>\n{"name": "run_query", "arguments": {"sql": "SELECT 2"}}\n</tool_call>',
            "hermes",
            [TextCall("run_query", {"sql": "SELECT 2"}, written='{"sql": "SELECT 2"}')],
            "Sure.",
        ),
        (  # Llama 3
            '<|python_tag|>{"name": "run_query", "parameters": {"sql": "SELECT 3"}}',
            "json",
            [TextCall("run_query", {"sql": "SELECT 3"}, written='{"sql": "SELECT 3"}')],
            None,
        ),
        (  # Mistral, both tokenizer generations
            '[TOOL_CALLS][{"name": "list_tables", "arguments": {}}][TOOL_CALLS]run_query[ARGS]{"sql": "SELECT 4"}',
            "mistral",
            [TextCall("list_tables", {}), TextCall("run_query", {"sql": "SELECT 4"}, written='{"sql": "SELECT 4"}')],
            None,
        ),
        (  # the OpenAI shape written out
            fenced({"type": "function", "function": {"name": "list_tables", "arguments": "{}"}}),
            "json",
            [TextCall("list_tables", {})],
            None,
        ),
    ],
)
def test_auto_reads_every_format_and_leaves_the_prose(
    text: str, parser: str, calls: list[TextCall], content: str | None
) -> None:
    found = parse_text(text, parser="auto", tools=TOOLS)
    assert (found.parser, found.calls, found.content, found.problems) == (parser, calls, content, [])
    assert parse_text(text, parser=parser, tools=TOOLS).calls == calls
    assert parse_text(text, parser="none", tools=TOOLS).calls == []


def test_a_schema_copied_as_arguments_is_no_arguments_where_none_are_needed_and_refused_otherwise() -> None:
    echo = parse_text(fenced({"name": "list_tables", "arguments": LIST_TABLES_SCHEMA}), parser="auto", tools=TOOLS)
    assert echo.calls == [TextCall("list_tables", {}, note="schema_echo", written=json.dumps(LIST_TABLES_SCHEMA))]
    [query] = parse_text(fenced({"name": "run_query", "arguments": QUERY_SCHEMA}), parser="auto", tools=TOOLS).calls
    assert query.arguments is None and query.problem == (
        """The arguments of 'run_query' are its JSON schema, not values: send the values themselves, """
        """e.g. {"sql": "..."}"""
    )
    real = {"sql": "SELECT type, properties FROM t"}  # values, even ones that name schema words, are values
    assert parse_text(fenced({"name": "run_query", "arguments": real}), parser="auto", tools=TOOLS).calls[0].arguments


def test_what_cannot_be_read_is_a_problem_for_the_model_and_an_answer_in_json_is_just_text() -> None:
    template = '<tool_call>\n{{"name": <function-name>, "arguments": <args-json-object>}}\n</tool_call>'
    echoed = parse_text(template, parser="auto", tools=TOOLS)  # the 1.5B copying the template's example
    assert (echoed.parser, echoed.calls, echoed.content) == ("hermes", [], template)
    assert echoed.problems[0].startswith("A <tool_call> block is not JSON")
    cut = parse_text('<tool_call>\n{"name": "run_query", "arguments": {"sql": "SEL', parser="auto", tools=TOOLS)
    assert cut.calls == [] and len(cut.problems) == 1  # cut at the token limit
    bad = parse_text(fenced({"name": "run_query", "arguments": "SELECT 1"}), parser="auto", tools=TOOLS)
    assert bad.calls[0].problem is not None and "not valid JSON" in bad.calls[0].problem
    answer = parse_text('The count is {"customers": 60}. ```json\n[60]\n```', parser="auto", tools=TOOLS)
    assert (answer.parser, answer.calls, answer.problems) == (None, [], [])
    assert parse_text('{"name": "Ada"}', parser="json", tools=TOOLS).calls == []  # a name alone is no call
    assert parse_text('{"name": "list_tables"}', parser="json", tools=TOOLS).calls == [TextCall("list_tables", {})]
    assert PARSERS == ("auto", "none", "hermes", "mistral", "json")
    with pytest.raises(ValueError, match="No tool parser 'qwen'"):
        parse_text("x", parser="qwen", tools=TOOLS)
