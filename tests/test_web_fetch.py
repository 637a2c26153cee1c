"""WebFetch against a real HTTP server on this machine: HTML to Markdown, redirects, the
private-address refusal (also through a name that resolves to 127.0.0.1), the size cap,
the permission rules, and the answer from a separate request."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import aclosing, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from todo_agent.core.events import Event, ToolFinished
from todo_agent.core.model.scripted import ScriptedModel
from todo_agent.core.permissions.policy import PermissionPolicy
from todo_agent.core.runtime import Runtime
from todo_agent.core.settings import Config
from todo_agent.core.tools import web_fetch
from todo_agent.core.tools.context import ToolContext
from todo_agent.core.tools.results import ToolError
from todo_agent.core.tools.web_fetch import WEB_FETCH

PAGE = """<!doctype html><html><head><title>Pagination guide</title><style>body{color:red}</style>
<script>alert('x')</script></head><body><h2>Pages</h2><p>Use <code>page_size</code>, see the
<a href="/api">API</a>.</p><ul><li>first</li><li>second</li></ul>
<pre><code>list_posts(posts, page=2)</code></pre></body></html>"""

Route = tuple[int, dict[str, str], bytes]


@contextmanager
def serve(routes: dict[str, Callable[[str], Route]]) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1; yields its port as a string. Unknown paths are 404."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            status, headers, body = routes.get(path, lambda host: (404, {}, b"not here"))(self.headers["Host"])
            self.send_response(status)
            for key, value in {"Content-Type": "text/html; charset=utf-8", **headers}.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield str(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def page(body: str | bytes, status: int = 200, **headers: str) -> Callable[[str], Route]:
    data = body.encode() if isinstance(body, str) else body
    return lambda host: (status, headers, data)


def context(workspace: Path, *names: str) -> ToolContext:
    """A call context whose allow rules name `names` (no model: the page comes back whole)."""
    return ToolContext("c", workspace, host_allowed=lambda host: host in names)


async def fetched(ctx: ToolContext, url: str) -> str:
    result = await WEB_FETCH.run({"url": url, "prompt": "what does it say?"}, ctx)
    assert isinstance(result, str)
    return result


async def test_a_local_page_is_refused_unless_a_rule_names_its_host(workspace: Path) -> None:
    with serve({"/guide": page(PAGE)}) as port:
        url = f"http://localhost:{port}/guide"
        with pytest.raises(ToolError, match=r"localhost is a private or local address \(127\.0\.0\.1"):
            await fetched(context(workspace), url)
        text = await fetched(context(workspace, "localhost"), url)
    assert text.startswith(f"{url} (HTTP 200, text/html, ")
    markdown = text.split("\n\n", 1)[1]
    assert markdown.startswith("# Pagination guide\n\n## Pages\n\nUse `page_size`, see the")
    assert "see the [API](/api)." in " ".join(markdown.split())
    assert "- first\n- second" in markdown and "```\nlist_posts(posts, page=2)\n```" in markdown
    assert "alert" not in markdown and "color:red" not in markdown


async def test_a_name_that_resolves_to_a_local_address_is_refused(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As DNS rebinding or an internal name would: the check is on the address, after lookup."""
    real = socket.getaddrinfo

    def resolve(host: Any, *args: Any, **kwargs: Any) -> Any:
        return real("127.0.0.1" if host == "docs.example.org" else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    with serve({"/": page("<p>internal admin</p>")}) as port:
        url = f"http://docs.example.org:{port}/"
        with pytest.raises(ToolError, match=r"docs\.example\.org is a private or local address"):
            await fetched(context(workspace, "localhost"), url)  # another host's rule does not count
        assert "internal admin" in await fetched(context(workspace, "docs.example.org"), url)


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "::1",
     "fe80::1", "fd00::1", "::ffff:127.0.0.1", "224.0.0.1",
     # IPv6 forms that carry a private IPv4 address: NAT64, 6to4, IPv4-translated, -compatible
     "64:ff9b::7f00:1", "64:ff9b::10.0.0.1", "64:ff9b::169.254.169.254", "64:ff9b:1::8.8.8.8",
     "2002:7f00:1::1", "2002:a9fe:a9fe::", "::ffff:0:127.0.0.1", "::ffff:0:a00:1", "::127.0.0.1",
     "::10.0.0.1", "::", "::ffff:192.168.1.1"],
)  # fmt: skip
def test_which_addresses_are_private(address: str) -> None:
    assert not web_fetch._public(address)


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "2606:2800:220:1::1", "64:ff9b::8.8.8.8", "2002:808:808::1", "::ffff:0:8.8.8.8"]
)
def test_public_addresses_are_public(address: str) -> None:
    assert web_fetch._public(address)


async def test_a_url_naming_a_private_ipv4_in_ipv6_form_is_refused(workspace: Path) -> None:
    with pytest.raises(
        ToolError,
        match=r"::ffff:0:127\.0\.0\.1 is a private or local address \(::ffff:0:7f00:1, which carries 127\.0\.0\.1\)",
    ):
        await fetched(context(workspace), "http://[::ffff:0:127.0.0.1]/")


@contextmanager
def trickle(interval: float) -> Iterator[str]:
    """A server that answers with headers at once, then one byte every `interval` seconds."""
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            while not stop.wait(interval):
                try:
                    self.wfile.write(b"x")
                    self.wfile.flush()
                except OSError:
                    return

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield str(server.server_address[1])
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


async def test_the_deadline_is_for_the_whole_fetch_not_each_read(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each byte comes well within the per-read timeout; the fetch still ends at the deadline."""
    monkeypatch.setattr(web_fetch, "TIMEOUT", 1.0)
    with trickle(0.1) as port:
        started = time.monotonic()
        with pytest.raises(ToolError, match=r"took longer than 1 s in all: stopped; \d+ bytes had come"):
            await fetched(context(workspace, "127.0.0.1"), f"http://127.0.0.1:{port}/")
    assert time.monotonic() - started < 10  # the page would go on for as long as it is read


async def test_deeply_nested_html_comes_back_as_plain_text(workspace: Path) -> None:
    depth = 100_000
    html = (
        f"<html><head><title>Deep</title></head><body><h1>Top</h1>{'<div>' * depth}core{'</div>' * depth}</body></html>"
    )
    with serve({"/": page(html)}) as port:
        text = await fetched(context(workspace, "127.0.0.1"), f"http://127.0.0.1:{port}/")
    markdown = text.split("\n\n", 1)[1]
    assert markdown == (
        f"# Deep\n\n(The page nests its elements {depth + 2:,} deep, past {web_fetch.MAX_NESTING}: "
        "shown as plain text.)\n\nTop\ncore"
    )


def test_html_up_to_the_nesting_limit_is_markdown() -> None:
    levels = web_fetch.MAX_NESTING - 2  # <html><body> are two
    html = f"<html><body>{'<div>' * (levels - 1)}<b>core</b>{'</div>' * (levels - 1)}</body></html>"
    assert web_fetch.to_markdown(web_fetch.Page("u", 200, "text/html", html)) == "**core**"


def test_headless_never_prints_a_traceback_for_a_hostile_page(workspace: Path, tmp_path: Path) -> None:
    """Deep nesting, an address in IPv6 dress and a page that is not there, through `-p`."""
    from todo_agent.core.settings import user_settings_path

    settings = user_settings_path()
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text('[permissions]\nallow = ["WebFetch(domain:127.0.0.1)"]\n', encoding="utf-8")
    depth = 50_000
    with serve({"/deep": page(f"<html><body>{'<i>' * depth}down here{'</i>' * depth}</body></html>")}) as port:
        urls = [
            f"http://127.0.0.1:{port}/deep",
            f"http://[::ffff:0:127.0.0.1]:{port}/",
            f"http://127.0.0.1:{port}/gone",
        ]
        steps = [{"tool_calls": [{"name": "WebFetch", "arguments": {"url": u, "prompt": "?"}}]} for u in urls]
        steps = [steps[0], "It is deep.", steps[1], steps[2], "Done."]
        script = tmp_path / "script.json"
        script.write_text(json.dumps(steps), encoding="utf-8")
        argv = [sys.executable, "-m", "todo_agent.frontends.cli", "--model", f"script:{script}", "-p", "go"]
        done = subprocess.run(
            [*argv, "--output-format", "stream-json", "--permission-mode", "bypassPermissions"],
            check=False,
            cwd=workspace,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr, done.stderr
    finished = [e for e in map(json.loads, done.stdout.splitlines()) if e.get("type") == "ToolFinished"]
    assert [e["status"] for e in finished] == ["ok", "error", "error"], finished
    assert finished[0]["output"].endswith("It is deep.")  # converted (as plain text) and answered from
    assert "is a private or local address" in finished[1]["output"]
    assert "HTTP 404" in finished[2]["output"]
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://localhost/x", "gopher://localhost/", "localhost:80/x"])
async def test_other_schemes_are_refused(workspace: Path, url: str) -> None:
    with pytest.raises(ToolError, match="only http and https URLs can be fetched"):
        await fetched(context(workspace, "localhost"), url)


async def test_redirects_on_the_same_host_are_followed_up_to_five(workspace: Path) -> None:
    hops = {f"/hop{n}": page("", 302, Location=f"/hop{n + 1}") for n in range(7)}
    hops["/hop3"] = page("<p>arrived</p>")
    with serve(hops) as port:
        assert "arrived" in await fetched(context(workspace, "localhost"), f"http://localhost:{port}/hop0")
        hops["/hop3"] = page("", 302, Location="/hop4")
        with pytest.raises(ToolError, match="more than 5 redirects"):
            await fetched(context(workspace, "localhost"), f"http://localhost:{port}/hop0")


async def test_a_redirect_to_another_host_is_reported_not_followed(workspace: Path) -> None:
    moved = page("", 301, Location="http://127.0.0.1:1/admin")
    reported = r"redirects \(HTTP 301\) to another host: http://127\.0\.0\.1:1/admin"
    with serve({"/moved": moved}) as port, pytest.raises(ToolError, match=reported):
        await fetched(context(workspace, "localhost", "127.0.0.1"), f"http://localhost:{port}/moved")


async def test_a_big_page_is_cut_and_binary_content_refused(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(web_fetch, "MAX_BYTES", 10_000)
    routes = {
        "/big": page("x" * 50_000, **{"Content-Type": "text/plain"}),
        "/logo": page(b"\x89PNG", **{"Content-Type": "image/png"}),
        "/gone": page("no such page", 404),
    }
    with serve(routes) as port:
        ctx = context(workspace, "localhost")
        big = await fetched(ctx, f"http://localhost:{port}/big")
        head, body = big.split("\n\n", 1)
        assert head.endswith("cut at 10,000 bytes)") and body == "x" * 10_000
        with pytest.raises(ToolError, match="is image/png, not a text page"):
            await fetched(ctx, f"http://localhost:{port}/logo")
        with pytest.raises(ToolError, match=r"HTTP 404 from .*: no such page"):
            await fetched(ctx, f"http://localhost:{port}/gone")


def test_the_rules() -> None:
    def decide(mode: str = "default", allow: tuple[str, ...] = (), deny: tuple[str, ...] = (), url: str = "") -> str:
        policy = PermissionPolicy.from_strings(Path("/w"), mode, allow, deny, [WEB_FETCH])  # type: ignore[arg-type]
        return policy.decide(WEB_FETCH, {"url": url or "https://docs.python.org/3/"}).verdict

    assert decide() == "ask"  # a read of the network: it asks in default mode
    assert decide("acceptEdits") == "ask" and decide("plan") == "ask"
    assert decide("bypassPermissions") == "allow"
    assert decide(allow=("WebFetch(domain:docs.python.org)",)) == "allow"
    assert decide(allow=("WebFetch(domain:*.python.org)",)) == "allow"
    assert decide(allow=("WebFetch(domain:python.org)",)) == "ask"  # another host
    assert decide(allow=("WebFetch",)) == "allow"
    # deny wins, even over bypassPermissions
    assert decide(allow=("WebFetch",), deny=("WebFetch(domain:docs.python.org)",)) == "deny"
    assert decide("bypassPermissions", deny=("WebFetch",)) == "deny"
    rules = ["WebFetch(domain:localhost)", "WebFetch"]
    policy = PermissionPolicy.from_strings(Path("/w"), "default", rules, tools=[WEB_FETCH])
    assert policy.host_named("localhost") and not policy.host_named("127.0.0.1")  # a bare rule names no host
    assert policy.suggest_rule(WEB_FETCH, {"url": "http://LocalHost:8000/x"}) == "WebFetch(domain:localhost)"


async def test_in_a_turn_the_prompt_is_answered_in_a_separate_request(workspace: Path) -> None:
    with serve({"/guide": page(PAGE)}) as port:
        url = f"http://localhost:{port}/guide"
        call = {
            "tool_calls": [{"name": "WebFetch", "arguments": {"url": url, "prompt": "Which parameter sets the size?"}}]
        }
        model = ScriptedModel.from_data([call, "page_size sets it.", "Use page_size."])
        config = Config(workspace=workspace, model="script:x", allow=["WebFetch(domain:localhost)"])
        runtime = Runtime.create(config, model=model)
        async with aclosing(runtime.turn.run("how do I page?")) as turn:
            events: list[Event] = [event async for event in turn]
    [done] = [e for e in events if isinstance(e, ToolFinished)]
    assert done.status == "ok" and done.output.endswith("\n\npage_size sets it.")
    side = model.requests[1]
    assert [m["role"] for m in side] == ["system", "user"] and model.tools_sent[1] == 0
    assert "Which parameter sets the size?" in side[1]["content"] and "## Pages" in side[1]["content"]
    tool_message = next(m for m in runtime.sessions.history if m["role"] == "tool")
    assert "## Pages" not in tool_message["content"]  # the page never enters the conversation


async def test_headless_and_default_mode_ask_and_the_answer_always_adds_the_host(workspace: Path) -> None:
    with serve({"/": page("<h1>Local docs</h1>")}) as port:
        url = f"http://localhost:{port}/"
        call = {"tool_calls": [{"name": "WebFetch", "arguments": {"url": url, "prompt": "title?"}}]}
        model = ScriptedModel.from_data([call, "No page.", call, "Local docs", "It is Local docs."])
        runtime = Runtime.create(Config(workspace=workspace, model="script:x"), model=model)
        async with aclosing(runtime.turn.run("read it")) as turn:
            first = [e async for e in turn if isinstance(e, ToolFinished)]
        assert first[0].status == "denied" and "WebFetch(domain:localhost)" in first[0].output

        async def always(request: Any) -> Any:
            from todo_agent.core.permissions.modes import ApprovalAnswer

            assert request.suggested_rule == "WebFetch(domain:localhost)"
            return ApprovalAnswer("always")

        runtime.set_approver(always)
        async with aclosing(runtime.turn.run("read it now")) as turn:
            second = [e async for e in turn if isinstance(e, ToolFinished)]
    assert second[0].status == "ok" and second[0].output.endswith("Local docs")
