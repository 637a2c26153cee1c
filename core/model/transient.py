"""Which server failures are worth waiting out, what to call them, and how long the server asks to wait.

Plain HTTP knowledge, apart from the OpenAI client (`openai_chat.py` uses it): the loop
retries these in view (`core/model/retry.py`), with the words here on the status line.
"""

from __future__ import annotations

import email.utils
import math
from collections.abc import Mapping
from datetime import UTC, datetime

BUSY = frozenset({503, 529})
"""Busy, overloaded or still loading the model: 529 is Anthropic's (and its proxies') "overloaded"."""
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 504, 520, 521, 522, 523, 524}) | BUSY
"""Statuses that say "try again later": timeouts, conflicts, rate limits, a server or a
proxy in front of it (Cloudflare's 52x) that failed or is restarting. Not 501 or 505, and
never 400/401/403/404: asking the same way again cannot work."""
_BRIEF = {408: "request timed out", 409: "conflict", 429: "rate limited", 502: "bad gateway", 504: "gateway timeout"}


def brief(status: int) -> str:
    """`server busy (503)`: what a status means, in a few words for the status line."""
    what = "server busy" if status in BUSY else _BRIEF.get(status, "server error" if status >= 500 else "HTTP error")
    return f"{what} ({status})"


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks to wait: `retry-after-ms` (OpenAI's), `Retry-After` in
    seconds or as an HTTP date; None when it does not say (or says nonsense)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
