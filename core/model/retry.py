"""How long to wait before asking a server again: exponential backoff with jitter, capped.

A local server loading a model, a proxy restarting or a provider's brief overload all
answer 503 (or 429, or drop the connection) for anything from a second to a minute. The
loop retries such a request up to `retries` times (`request_retries`, default 6): 1, 2,
4, 8, 16, 32 s, each ±25 % so that many clients do not come back in step, and never more
than `max_wait` seconds of waiting in all (`request_retry_wait`, default 60). A server
that says how long to wait (`Retry-After`) is taken at its word, unless that is more
than the waiting left: then waiting cannot end in an answer, so the loop stops at once
and says why.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Wait:
    """The decision after a failed attempt: wait `seconds`, or (None) give up, saying `why`."""

    seconds: float | None
    why: str = ""


@dataclass
class RetryPolicy:
    retries: int = 6
    first_delay: float = 1.0
    """Seconds before the first retry; doubles each time."""
    max_wait: float = 60.0
    """Seconds of waiting in all, across one request's retries."""
    rng: random.Random = field(default_factory=random.Random, repr=False)

    def next_wait(self, retry: int, waited: float, retry_after: float | None) -> Wait:
        """Before retry number `retry` (from 1), having waited `waited` s so far."""
        if retry > self.retries:
            return Wait(None, f"gave up after {_count(self.retries)} in {waited:.0f} s" if self.retries else "")
        left = self.max_wait - waited
        if retry_after is not None and retry_after > 0:
            if retry_after > left:
                return Wait(
                    None,
                    f"the server asks to wait {retry_after:.0f} s, more than the {max(left, 0):.0f} s "
                    "request_retry_wait leaves",
                )
            return Wait(retry_after)
        if left <= 0:
            return Wait(None, f"gave up after {_count(retry - 1)} in {waited:.0f} s (request_retry_wait)")
        nominal = self.first_delay * 2 ** (retry - 1)
        return Wait(min(nominal * self.rng.uniform(0.75, 1.25), left))


def _count(retries: int) -> str:
    return f"{retries} {'retry' if retries == 1 else 'retries'}"
