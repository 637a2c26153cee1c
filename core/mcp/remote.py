"""What a server offers and answers, as plain values: the adapter turns the SDK's types into
these, so nothing outside `adapter.py` knows the SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO

MAX_RESULT_BYTES = 16_000_000
"""The most of one call's result todo-agent takes: past what the model is ever shown (its
first and last 15,000 characters, images of 4 MB at most), room for a long text kept whole
beside the session (`results.py`) or a few images."""
MESSAGE_MARGIN = 1_000_000
"""Room for the JSON-RPC envelope around a result, and JSON's escapes in it."""
MAX_MESSAGE_BYTES = MAX_RESULT_BYTES + MESSAGE_MARGIN
"""Bytes of one message from a server read at most: a Streamable HTTP answer's body, one
line of a local server's stdout. Past it the call fails and says so (an endless body grew
memory by ~250 MB/s; an endless line kept a core busy splitting it)."""


@dataclass(frozen=True)
class RemoteTool:
    """One tool as the server lists it."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True)
class Part:
    """One piece of a call's result.

    `text`: text content, or a text resource's text. `image`/`audio`: `data` is base64 and
    `size` the decoded bytes. `link`: a resource link or a binary resource (`uri`).
    """

    kind: Literal["text", "image", "audio", "link"]
    text: str = ""
    mime: str = ""
    data: str = ""
    size: int = 0
    uri: str = ""


@dataclass(frozen=True)
class CallResult:
    parts: tuple[Part, ...]
    structured: Any = None
    """The result's `structuredContent` (any JSON value), or None."""
    is_error: bool = False


class CallFailed(Exception):
    """A call that got no result: one line for the model. `lost`: the connection is gone
    (the server died or stopped answering), so the next call reconnects first."""

    def __init__(self, message: str, *, lost: bool = False) -> None:
        super().__init__(message)
        self.lost = lost


class ConnectFailed(Exception):
    """The server could not be started or did not answer the handshake; one line."""


@dataclass(frozen=True)
class Target:
    """How to reach one server, variables expanded: a command to run, or a URL."""

    transport: Literal["stdio", "http"]
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    """The whole environment of the child (not added to ours)."""
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    errlog: TextIO | None = None
    """Where the child's stderr goes (the write end of the server's stderr pipe)."""
    startup_timeout: float = 30.0
