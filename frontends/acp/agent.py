"""`todo-agent --acp`: the Agent Client Protocol's agent side, one `Runtime` per session.

The SDK (`agent-client-protocol`, imported here and in this folder alone) reads JSON-RPC
from stdin and writes it to stdout; `server.py` keeps everything else off stdout. Each
`session/new` builds a runtime for the client's `cwd` with the flags the process was
started with (settings files read as the app reads them); `session/load` resumes an
earlier todo-agent session of that workspace and replays it. A prompt's text, resource
links (as `@` mentions) and embedded resources (their text) make the turn's prompt.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from todo_agent.core import __version__
from todo_agent.core.model.base import ModelError
from todo_agent.core.model.scripted import ScriptError
from todo_agent.core.runtime import Runtime
from todo_agent.core.session.directory import SessionError, list_sessions
from todo_agent.core.settings import SettingsError, load_config

from .files import ClientFiles
from .mcp import add_client_servers
from .prompts import prompt_text
from .session import AcpSession
from .tasks import apply_task_update

log = logging.getLogger(__name__)

NO_MODEL = "no model configured: start todo-agent --acp with --model (and --base-url), or set one in settings"

LIST_PAGE = 50
"""Sessions a `session/list` page holds."""
TASK_UPDATE = "todo_agent/task_update"
"""The client's edit of the plan (`_todo_agent/task_update` on the wire; the SDK drops the `_`)."""


class TodoAgentAcp:
    """The ACP `Agent` the SDK calls (duck-typed: an unknown method answers -32601)."""

    def __init__(self, flags: dict[str, Any], *, demo_workspace: Path | None = None) -> None:
        self.demo = bool(flags.get("demo"))
        self.demo_workspace = demo_workspace
        """`--acp --demo`: the demo project every session works in (the script knows no other)."""
        self.flags = {k: v for k, v in flags.items() if k != "demo"}
        self.conn: Client | None = None
        self.client = ClientCapabilities()
        self.sessions: dict[str, AcpSession] = {}
        self._later: set[asyncio.Future[None]] = set()
        """Announcements sent after a response, kept until they are done."""

    def on_connect(self, conn: Client) -> None:
        self.conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self.client = client_capabilities or ClientCapabilities()
        log.info("initialize: protocol %s, client %s", protocol_version, client_info)
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=False, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            agent_info=Implementation(name="todo-agent", title="todo-agent", version=__version__),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None  # the model's key comes from the environment and settings, as in the app

    async def new_session(
        self,
        cwd: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        session = await self._open(cwd, resume=None, servers=mcp_servers)
        # After the response (which gives the client the id), on the loop's next turns.
        asyncio.get_running_loop().call_soon(self._announce_soon, session)
        return NewSessionResponse(session_id=session.id, modes=session.modes(), config_options=session.config_options())

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        """`session/list`: the saved sessions of `cwd`, newest first, a page at a time."""
        if cwd is None or not Path(cwd).is_absolute():
            raise RequestError.invalid_params({"cwd": "session/list needs the project folder (cwd)"})
        found = await asyncio.to_thread(list_sessions, Path(cwd))
        start = int(cursor) if cursor and cursor.isdigit() else 0
        page = found[start : start + LIST_PAGE]
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=info.id,
                    cwd=cwd,
                    title=info.title or None,
                    updated_at=datetime.fromtimestamp(info.updated, UTC).isoformat(),
                )
                for info in page
            ],
            next_cursor=str(start + LIST_PAGE) if start + LIST_PAGE < len(found) else None,
        )

    def _announce_soon(self, session: AcpSession) -> None:
        task = asyncio.ensure_future(_announce(session))
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        if (open_one := self.sessions.get(session_id)) is not None:
            await open_one.replay()
            return LoadSessionResponse(modes=open_one.modes(), config_options=open_one.config_options())
        session = await self._open(cwd, resume=session_id, servers=mcp_servers)
        await session.replay()  # before the response: the client shows the history, then the prompt
        return LoadSessionResponse(modes=session.modes(), config_options=session.config_options())

    async def _open(self, cwd: str, resume: str | None, servers: list[Any] | None) -> AcpSession:
        assert self.conn is not None
        workspace = self.demo_workspace or Path(cwd)
        if not workspace.is_absolute() or not await asyncio.to_thread(workspace.is_dir):
            raise RequestError.invalid_params({"cwd": f"not an absolute path to a folder: {cwd[:200]!r}"})
        try:
            config = await asyncio.to_thread(load_config, workspace, flags=self.flags)
        except SettingsError as exc:
            raise RequestError.invalid_params({"settings": str(exc)}) from None
        config.demo = self.demo
        add_client_servers(config, servers)
        if not config.has_model:
            raise RequestError.invalid_params({"model": NO_MODEL})
        try:
            runtime = await asyncio.to_thread(Runtime.create, config, resume=resume)
        except SessionError as exc:
            raise (
                RequestError.resource_not_found(resume)
                if resume
                else RequestError.internal_error({"session": str(exc)})
            ) from None
        except ScriptError as exc:
            raise RequestError.internal_error({"model": str(exc)}) from None
        try:
            await asyncio.to_thread(runtime.warm_up)
        except (ModelError, ScriptError) as exc:
            runtime.close()  # the session's lock goes with it: the client may try again
            raise RequestError.internal_error({"model": getattr(exc, "message", str(exc))}) from None
        session = AcpSession(runtime, self.conn, started_in_bypass=config.permission_mode == "bypassPermissions")
        runtime.set_approver(session.approve)
        if self.demo_workspace is None:  # the demo's project is a copy no editor has open
            runtime.set_file_channel(ClientFiles(self.conn, session.id, self.client, runtime.config.workspace))
        else:
            config.warnings.append(f"the demo works in its own copy of the demo project, {workspace}, not {cwd}")
        self.sessions[session.id] = session
        _log_beside(runtime.sessions.path)
        if resume is None:
            await asyncio.to_thread(runtime.sessions.keep, "acp")  # the client holds its id: loadable from now on
        runtime.mcp.start()  # project servers wait for the person's yes (asked before the first prompt)
        log.info("session %s in %s (%s)", session.id, workspace, "resumed" if resume else "new")
        return session

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"sessionId": f"no such session: {session_id[:80]!r}"})
        return session

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        session = self._session(session_id)
        text = prompt_text(prompt, session.workspace)
        if not text.strip():
            return PromptResponse(stop_reason="end_turn")
        return PromptResponse(stop_reason=await session.prompt(text))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        if (session := self.sessions.get(session_id)) is not None:
            session.cancel()

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        await self._session(session_id).set_mode(mode_id)
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        options = await self._session(session_id).set_config(config_id, value)
        return SetSessionConfigOptionResponse(config_options=options)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method != TASK_UPDATE:
            raise RequestError.method_not_found("_" + method)
        session = self._session(str(params.get("sessionId", "")))
        result = await apply_task_update(session.runtime, params)
        await session.send_plan()
        return result

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        log.info("extension notification %s ignored", method[:80])

    async def close(self) -> None:
        """stdin ended: every session's background commands and MCP servers stop, then it is let go."""
        for session in list(self.sessions.values()):
            session.cancel()
            try:
                await session.runtime.stop_background()
            finally:
                session.runtime.close()
        self.sessions.clear()


async def _announce(session: AcpSession) -> None:
    try:
        await session.announce()
    except Exception:  # a client gone at once: nothing to tell
        log.exception("could not announce session %s", session.id)


def _log_beside(session_path: Path) -> None:
    """The process's log goes to a file beside each session it serves (`<id>.acp.log`)."""
    path = session_path.with_name(session_path.stem + ".acp.log")
    root = logging.getLogger()
    if any(isinstance(h, logging.FileHandler) and Path(h.baseFilename) == path for h in root.handlers):
        return
    try:
        handler = logging.FileHandler(path, encoding="utf-8")
    except OSError:
        return
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
