"""What an OpenAI-compatible server says about itself: its models and its context window.

`probe()` asks once, with short timeouts, and never raises: any failure means "unknown".
It is blocking (stdlib `urllib`), so it runs off the event loop and off the first frame:
in the TUI's warm-up thread, or before a headless run's first request (`Runtime.warm_up`).

- `GET {base}/models`: the model ids (vLLM and llama.cpp serve one; Ollama lists all it
  has) and vLLM's `max_model_len` for each.
- `GET {base without /v1}/props`: llama.cpp's `default_generation_settings.n_ctx` (the
  window) and `chat_template_caps.supports_tool_calls` (False when the chat template
  cannot call tools: llama-server then ignores `tools` and answers in plain text).
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

TIMEOUT = 2.0
"""Seconds per request: a server that is slower to describe itself is not waited for."""
_MAX_BYTES = 1_000_000


@dataclass(frozen=True)
class ServerInfo:
    model_ids: tuple[str, ...] = ()
    windows: tuple[tuple[str, int], ...] = ()
    """(model id, context window) pairs from `/models` (vLLM's `max_model_len`)."""
    n_ctx: int | None = None
    """llama.cpp's window from `/props`."""
    supports_tool_calls: bool | None = None

    def window_for(self, model: str) -> int | None:
        """The window the server gives `model` (or its only model), if it said."""
        if self.n_ctx:
            return self.n_ctx
        windows = dict(self.windows)
        if model in windows:
            return windows[model]
        return next(iter(windows.values())) if len(windows) == 1 else None


def probe(base_url: str, api_key: str | None, timeout: float = TIMEOUT) -> ServerInfo:
    """Ask the server at `base_url` (e.g. `http://127.0.0.1:8080/v1`) about itself."""
    base = base_url.rstrip("/")
    root = base.removesuffix("/v1")
    # Both at once: against a remote server each is a connection and a TLS handshake.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="todo-agent-probe") as pool:
        asked = pool.submit(_get_json, f"{base}/models", api_key, timeout)
        props = _get_json(f"{root}/props", api_key, timeout)
        models = asked.result()
    ids: list[str] = []
    windows: list[tuple[str, int]] = []
    for entry in _list(models.get("data")):
        model_id = entry.get("id")
        if isinstance(model_id, str) and model_id:
            ids.append(model_id)
            if _positive(entry.get("max_model_len")):
                windows.append((model_id, entry["max_model_len"]))
    settings = props.get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    caps = props.get("chat_template_caps")
    tools = caps.get("supports_tool_calls") if isinstance(caps, dict) else None
    return ServerInfo(
        model_ids=tuple(ids),
        windows=tuple(windows),
        n_ctx=n_ctx if _positive(n_ctx) else None,
        supports_tool_calls=tools if isinstance(tools, bool) else None,
    )


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _list(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _get_json(url: str, api_key: str | None, timeout: float) -> dict[str, Any]:
    """The JSON object at `url`, or {} for anything else (refused, 404, not JSON, slow)."""
    if not url.startswith(("http://", "https://")):
        return {}
    try:
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        if api_key:
            request.add_header("Authorization", f"Bearer {api_key}")
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data = json.loads(response.read(_MAX_BYTES))
    except (OSError, ValueError, urllib.error.URLError) as exc:  # a bad URL, HTTP errors, timeouts, refusals
        log.debug("probe of %s failed: %s", url, exc)
        return {}
    return data if isinstance(data, dict) else {}
