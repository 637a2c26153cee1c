"""A tool's path arguments are part of its declaration, and the permission gate follows
the declaration, not a list of names: a tool added by the recipe in `core/tools/base.py`
is asked about outside paths and held by the path rules without touching the gate, and
a tool built from outside (an MCP server's) that declares nothing asks."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest
from gate import TOOL, gate

from todo_agent.core.engine.batch import BatchDeps, BatchRunner
from todo_agent.core.events import ToolFinished
from todo_agent.core.lifecycle import Lifecycle
from todo_agent.core.model.base import ToolCall
from todo_agent.core.permissions.modes import ApprovalAnswer, ApprovalRequest
from todo_agent.core.permissions.policy import PermissionPolicy
from todo_agent.core.tools import base
from todo_agent.core.tools.arguments import Arguments, PathText, object_schema
from todo_agent.core.tools.base import Tool, ToolError, declare
from todo_agent.core.tools.context import ToolContext

EXAMPLE = (base.__doc__ or "").split("```python\n", 1)[1].split("```", 1)[0]
"""The tool example in `core/tools/base.py`'s docstring, exactly as documented."""


def example_namespace() -> dict[str, Any]:
    """Run the documented example as the module it says it is; its names, `EXAMPLE_WORD_COUNT` among them."""
    namespace: dict[str, Any] = {
        "__name__": "todo_agent.core.tools.example_word_count",
        "__package__": "todo_agent.core.tools",
    }
    exec(compile(EXAMPLE, "core/tools/base.py (example)", "exec", dont_inherit=True), namespace)
    return namespace


def declare_example() -> Tool:
    """The documented example's tool (its description file aside: the caller stubs it)."""
    tool = example_namespace()["EXAMPLE_WORD_COUNT"]
    assert isinstance(tool, Tool)
    return tool


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch) -> Tool:
    monkeypatch.setattr(base, "load_description", lambda package, name: "Count the words in a file.")
    return declare_example()


EVERY = [*sorted(TOOL), "ExampleWordCount"]
"""Every built-in tool (both task-tool sets), and one added by the documented recipe."""


@pytest.fixture
def tools(example: Tool) -> dict[str, Tool]:
    return {**TOOL, example.name: example}


PATH_LIKE = re.compile(r"path|file|dir|folder|cwd|root", re.IGNORECASE)


def _path_like(tool: Tool) -> set[str]:
    properties = tool.parameters.get("properties", {})
    return {name for name, spec in properties.items() if spec.get("type") == "string" and PATH_LIKE.search(name)}


def _sample(tool: Tool) -> dict[str, Any]:
    """Plausible values for the required arguments."""
    samples = {"string": "x", "integer": 1, "number": 1, "boolean": False, "array": [], "object": {}}
    properties = tool.parameters.get("properties", {})
    return {name: samples.get(properties[name].get("type"), "x") for name in tool.parameters.get("required", ())}


def _judged(policy: PermissionPolicy, tool: Tool, args: dict[str, Any]) -> str | None:
    """The verdict on a call with `args`; None when the arguments never reach the gate."""
    try:
        checked = tool.check(args)
    except ToolError:
        return None  # refused as bad arguments: it never runs
    return policy.decide(tool, checked).verdict


@pytest.mark.parametrize("name", EVERY)
def test_every_argument_that_names_a_path_is_declared(tools: dict[str, Tool], name: str) -> None:
    tool = tools[name]
    assert _path_like(tool) <= set(tool.paths), f"{name}: a path argument is not in its declaration"
    assert set(tool.paths) <= set(tool.parameters.get("properties", {})), f"{name} declares a path it does not take"


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "plan"])
@pytest.mark.parametrize("name", EVERY)
def test_no_tool_reaches_outside_the_workspace_unasked(
    tools: dict[str, Tool], name: str, mode: str, tmp_path: Path
) -> None:
    workspace, outside = tmp_path / "project", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    tool, policy = tools[name], gate(workspace, mode)
    for argument in _path_like(tool) | set(tool.paths):
        glob = tool.paths.get(argument) == "glob"
        for path in (str(outside / "secret.txt"), "../outside/secret.txt", "~/../../.."):
            value = f"{path}/*" if glob else path
            verdict = _judged(policy, tool, {**_sample(tool), argument: value})
            assert verdict != "allow", f"{name}({argument}={value!r}) in {mode} mode ran without asking"


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "bypassPermissions"])
@pytest.mark.parametrize("name", EVERY)
def test_deny_rules_on_reading_and_writing_hold_every_declared_path(
    tools: dict[str, Tool], name: str, mode: str, tmp_path: Path
) -> None:
    policy = gate(tmp_path, mode, deny=["Read(denied/**)", "Edit(denied/**)"])
    policy.know(tools.values())
    tool = tools[name]
    for argument, use in tool.paths.items():
        value = "denied/*.txt" if use == "glob" else "denied/file.txt"
        verdict = _judged(policy, tool, {**_sample(tool), argument: value})
        assert verdict in ("deny", None), f"{name}({argument}={value!r}) passed a deny rule in {mode} mode"


def test_a_rule_on_the_new_tool_covers_its_family(example: Tool, tmp_path: Path) -> None:
    """`ExampleWordCount(.env)` is a rule on reading: it denies Read too, as `Read(.env)` denies ExampleWordCount."""
    policy = gate(tmp_path, deny=["ExampleWordCount(.env)"])
    policy.know([example])
    assert policy.decide(TOOL["Read"], {"file_path": ".env"}).verdict == "deny"
    assert policy.decide(TOOL["Grep"], {"pattern": "x", "path": ".env"}).verdict == "deny"
    assert policy.decide(TOOL["Write"], {"file_path": ".env", "content": ""}).verdict == "ask"  # writing: other family
    policy = gate(tmp_path, deny=["Read(.env)"])
    assert (
        policy.decide(example, {"file_path": ".env"}).reason
        == "ExampleWordCount is denied by the permission rule Read(.env)"
    )


# --- tools from outside: built as Tool values, not declared --------------------------------


async def _never(args: dict[str, Any], ctx: ToolContext) -> str:
    raise AssertionError("not run")


MCP_TOOL = Tool(
    "mcp__files__read_file",
    "Read a file (from an MCP server)",
    object_schema({"path": {"type": "string"}}, ["path"]),
    _never,
)


@pytest.mark.parametrize(
    ("mode", "expected"), [("default", "ask"), ("acceptEdits", "ask"), ("plan", "deny"), ("bypassPermissions", "allow")]
)
def test_a_tool_built_outside_declare_asks_by_default(tmp_path: Path, mode: str, expected: str) -> None:
    assert MCP_TOOL.kind == "execute" and not MCP_TOOL.paths
    assert gate(tmp_path, mode).decide(MCP_TOOL, {"path": "notes.txt"}).verdict == expected
    assert gate(tmp_path, mode).suggest_rule(MCP_TOOL, {"path": "notes.txt"}) == "mcp__files__read_file"


def test_a_declaration_the_gate_could_misread_is_refused() -> None:
    class Args(Arguments):
        file_path: PathText

    with pytest.raises(ValueError, match="say which arguments are paths"):
        declare("Peek", Args, _never, kind="read", description="peek")
    with pytest.raises(ValueError, match="filepath in paths is not an argument"):
        declare("Peek", Args, _never, kind="read", paths={"filepath": "read"}, description="peek")
    with pytest.raises(ValueError, match="a read tool cannot declare a path it writes"):
        declare("Peek", Args, _never, kind="read", paths={"file_path": "write"}, description="peek")
    with pytest.raises(ValueError, match="unknown kind"):
        Tool("x", "", {}, _never, "network")  # type: ignore[arg-type]  # what an adapter could pass
    with pytest.raises(ValueError, match="unknown use"):
        Tool("x", "", {}, _never, "read", paths={"path": "reads"})  # type: ignore[dict-item]  # likewise


# --- end to end: the batch judges what the tool will read -----------------------------------


class _AliasArgs(Arguments):
    aliases: ClassVar[Mapping[str, str]] = {"path": "file_path"}
    file_path: PathText


async def _show(args: _AliasArgs, ctx: ToolContext) -> str:
    return ctx.resolve(args.file_path).read_text()


def _batch(tool: Tool, policy: PermissionPolicy, workspace: Path, arguments: dict[str, Any]) -> BatchRunner:
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer("no")

    deps = BatchDeps(
        tools=[tool],
        permissions=policy,
        approver=approver,
        lifecycle=Lifecycle(),
        context=lambda call_id: ToolContext(call_id, workspace),
        record=lambda call_id, output, status: output,
    )
    runner = BatchRunner(deps, [ToolCall("c1", tool.name, json.dumps(arguments))])
    runner.asked = asked  # type: ignore[attr-defined]  # for the test to read
    return runner


async def _finished(runner: BatchRunner) -> ToolFinished:
    finished = [e async for e in runner.run() if isinstance(e, ToolFinished)]
    assert len(finished) == 1
    return finished[0]


async def test_an_alias_of_a_path_argument_is_judged_as_the_path(tmp_path: Path) -> None:
    """The model writes `path` where the tool says `file_path`: the gate sees what the tool reads."""
    (tmp_path / "outside.txt").write_text("secret\n")
    workspace = tmp_path / "project"
    workspace.mkdir()
    tool = declare("Show", _AliasArgs, _show, kind="read", paths={"file_path": "read"}, description="show")
    finished = await _finished(_batch(tool, gate(workspace), workspace, {"path": str(tmp_path / "outside.txt")}))
    assert finished.status == "denied" and "secret" not in finished.output


async def test_a_sub_agents_fresh_gate_knows_the_families_of_the_tools_it_runs(tmp_path: Path) -> None:
    """A policy built without the tool list (as a sub-agent might) still lets `Grep(...)`
    deny a Read: the batch tells the gate what its tools declare."""
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "key").write_text("k\n")
    fresh = PermissionPolicy.from_strings(tmp_path, "bypassPermissions", deny=["Grep(secrets/**)"])
    runner = _batch(TOOL["Read"], fresh, tmp_path, {"file_path": "secrets/key"})
    runner.deps.permissions.know([TOOL["Grep"]])  # the parent agent's tools: the sub-agent has them too
    finished = await _finished(runner)
    assert finished.status == "denied" and "Grep(secrets/**)" in finished.output


async def test_bad_arguments_are_refused_before_anyone_is_asked(tmp_path: Path) -> None:
    runner = _batch(TOOL["Write"], gate(tmp_path), tmp_path, {"file_path": "", "content": "x"})
    finished = await _finished(runner)
    assert finished.status == "error" and "must not be empty" in finished.output
    assert runner.asked == []  # type: ignore[attr-defined]


async def test_the_recipes_tool_names_its_file_when_it_asks(example: Tool, tmp_path: Path) -> None:
    """The example declares no summary: the approval still says which file it would read."""
    outside = tmp_path / "elsewhere" / "notes.txt"
    workspace = tmp_path / "project"
    workspace.mkdir()
    runner = _batch(example, gate(workspace), workspace, {"file_path": str(outside)})
    assert (await _finished(runner)).status == "denied"
    (request,) = runner.asked  # type: ignore[attr-defined]
    assert request.summary.endswith("elsewhere/notes.txt") and len(request.summary) <= 60


def test_a_network_tools_default_summary_is_its_url() -> None:
    class _Get(Arguments):
        url: str

    async def get(args: _Get, ctx: ToolContext) -> str:
        return args.url

    tool = declare("ExampleGet", _Get, get, kind="read", paths={}, network="url", description="get")
    assert tool.summarize({"url": "https://example.org/a"}) == "https://example.org/a"


def test_two_tools_of_one_name_are_refused(example: Tool) -> None:
    from todo_agent.core.mcp.tools import ToolSet

    with pytest.raises(ValueError, match="two tools are named Read: a tool's name must be its own"):
        ToolSet(
            [
                *TOOL.values(),
                declare(
                    "Read", _AliasArgs, _show, kind="read", paths={"file_path": "read"}, description="a second Read"
                ),
            ],
            None,
            schema_room=lambda: 0,
            hidden=bool,
        )  # type: ignore[arg-type]


def test_no_real_tool_takes_the_examples_name(example: Tool) -> None:
    """The declaration tests add the example beside every real tool: a real tool of its name
    would be shadowed in them, and its checks would quietly test the example instead."""
    from todo_agent.core import runtime

    real = {tool.name for version in ("v1", "v2") for tool in runtime.build_tools(version)}
    assert example.name not in real and example.name.startswith("Example")


# --- through the real command: the documented recipe, added to the tools --------------------

_RUN_WITH_EXAMPLE = """
import sys
from todo_agent.core import runtime
from todo_agent.core.tools import base
sys.path.insert(0, sys.argv[1])
from test_tool_declarations import declare_example
base.load_description = lambda package, name: "Count the words in a file."
example_word_count = declare_example()
built = runtime.build_tools
runtime.build_tools = lambda version: [*built(version), example_word_count]
from todo_agent.frontends.cli import main
main(sys.argv[2:])
"""


@pytest.fixture
def outside_secret(tmp_path: Path) -> Iterator[Path]:
    secret = tmp_path / "outside" / "passwd"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0:one two three four five\n")
    yield secret


def test_a_tool_added_by_the_recipe_asks_outside_and_obeys_deny_rules(
    workspace: Path, tmp_path: Path, outside_secret: Path
) -> None:
    """The attack of issue 19: a read tool added exactly as documented read /etc/passwd
    without asking and ignored `deny = ["Read(.env)"]`. Headless, asking means denied."""
    (workspace / ".env").write_text("API_KEY=hunter2 and more words\n")
    (workspace / "notes.txt").write_text("three little words\n")
    settings = workspace / ".todo-agent" / "settings.toml"
    settings.parent.mkdir()
    settings.write_text('[permissions]\ndeny = ["Read(.env)"]\n')
    calls = [
        {"name": "ExampleWordCount", "arguments": {"file_path": str(outside_secret)}},
        {"name": "ExampleWordCount", "arguments": {"file_path": ".env"}},
        {"name": "ExampleWordCount", "arguments": {"file_path": "notes.txt"}},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"tool_calls": calls}, {"text": "done"}]}))
    args = ["-p", "count", "--model", f"script:{script}", "--output-format", "stream-json"]
    result = subprocess.run(
        [sys.executable, "-c", _RUN_WITH_EXAMPLE, str(Path(__file__).parent), *args],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    finished = [e for e in events if e.get("type") == "ToolFinished"]
    assert [e["status"] for e in finished] == ["denied", "denied", "ok"], finished
    assert "outside the workspace" in finished[0]["output"]
    assert "Read(.env)" in finished[1]["output"]
    assert finished[2]["output"] == "notes.txt: 3 words"


# --- the documented example is the safe pattern ---------------------------------------------


async def _count(tool: Tool, workspace: Path, path: str) -> str:
    try:
        result = await asyncio.wait_for(tool.run({"file_path": path}, ToolContext("c", workspace)), timeout=10)
    except ToolError as exc:
        return f"Error: {exc}"
    return result if isinstance(result, str) else result.output


async def test_the_documented_example_refuses_what_would_hang_or_flood_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A FIFO (reading it waits for ever), a directory, a binary file, a file over the cap,
    a NUL byte: each is a one-line error, none is read, nothing blocks the event loop."""
    monkeypatch.setattr(base, "load_description", lambda package, name: "Count the words in a file.")
    namespace = example_namespace()
    namespace["MAX_BYTES"] = 1000
    tool = namespace["EXAMPLE_WORD_COUNT"]
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "dir").mkdir()
    (tmp_path / "blob.bin").write_bytes(b"\0\1\2" * 10)
    (tmp_path / "big.txt").write_text("word " * 1000)
    (tmp_path / "text.txt").write_text("three little words\n")
    assert await _count(tool, tmp_path, "text.txt") == "text.txt: 3 words"
    assert await _count(tool, tmp_path, "pipe") == "Error: pipe is not a regular file"
    assert "is a directory" in await _count(tool, tmp_path, "dir")
    assert "looks like a binary file" in await _count(tool, tmp_path, "blob.bin")
    assert "is over 1,000 bytes" in await _count(tool, tmp_path, "big.txt")
    assert "NUL byte" in await _count(tool, tmp_path, "a\0b")
    assert "File does not exist" in await _count(tool, tmp_path, "missing.txt")
    assert "asyncio.to_thread" in EXAMPLE  # the disk work is off the event loop


@pytest.mark.parametrize("name", sorted(n for n, t in TOOL.items() if t.network is not None))
def test_a_tool_that_reads_the_network_asks_and_only_a_named_host_reaches_a_local_one(
    name: str, workspace: Path
) -> None:
    """Declared with `network=` (WebFetch): asked in default and acceptEdits, held by a
    deny rule on its host, let through by an allow rule on it; a private host needs a rule
    naming that very host."""
    tool = TOOL[name]
    call = {tool.network or "": "http://intranet.example/admin"}
    assert tool.kind == "read"
    for mode in ("default", "acceptEdits", "plan"):
        assert gate(workspace, mode).decide(tool, call).verdict == "ask"
    assert gate(workspace, allow=[f"{name}(domain:intranet.example)"]).decide(tool, call).verdict == "allow"
    denied = gate(workspace, "bypassPermissions", deny=[f"{name}(domain:intranet.example)"])
    assert denied.decide(tool, call).verdict == "deny"
    assert gate(workspace, allow=[name]).host_named("intranet.example") is False
    assert gate(workspace, allow=[f"{name}(domain:intranet.example)"]).host_named("intranet.example")


def test_a_network_tool_must_be_a_read() -> None:
    with pytest.raises(ValueError, match="a tool that reads the network is a read tool"):
        Tool("Fetcher", "d", {}, lambda args, ctx: None, kind="execute", network="url")  # type: ignore[arg-type,return-value]
