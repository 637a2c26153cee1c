"""The retry policy: exponential backoff with jitter, a cap on the waiting, the server's word."""

from __future__ import annotations

import random

from todo_agent.core.model.retry import RetryPolicy


def _waits(policy: RetryPolicy) -> list[float]:
    waited, waits = 0.0, []
    for retry in range(1, policy.retries + 2):
        wait = policy.next_wait(retry, waited, None)
        if wait.seconds is None:
            break
        waits.append(wait.seconds)
        waited += wait.seconds
    return waits


def test_six_retries_over_about_a_minute_doubling_with_jitter() -> None:
    for seed in range(200):
        waits = _waits(RetryPolicy(rng=random.Random(seed)))
        assert len(waits) == 6
        for n, wait in enumerate(waits[:5]):
            assert 0.75 * 2**n <= wait <= 1.25 * 2**n
        assert 45 <= sum(waits) <= 60  # the last wait is cut to what the minute leaves
    spread = {round(_waits(RetryPolicy(rng=random.Random(seed)))[2], 3) for seed in range(20)}
    assert len(spread) > 10  # clients that failed together do not come back together


def test_the_total_wait_is_capped_and_then_it_gives_up() -> None:
    policy = RetryPolicy(retries=10, first_delay=4, max_wait=20, rng=random.Random(1))
    waits = _waits(policy)
    assert sum(waits) <= 20 and len(waits) < 10
    gave_up = policy.next_wait(len(waits) + 1, sum(waits), None)
    assert gave_up.seconds is None and "request_retry_wait" in gave_up.why


def test_retry_after_is_honoured_up_to_the_waiting_left() -> None:
    policy = RetryPolicy(rng=random.Random(1))
    assert policy.next_wait(1, 0, 12.5).seconds == 12.5  # more than the backoff's 1 s: the server knows
    assert policy.next_wait(1, 0, 0.2).seconds == 0.2
    assert policy.next_wait(3, 50, 10).seconds == 10
    refused = policy.next_wait(3, 50, 11)
    assert refused.seconds is None and refused.why == (
        "the server asks to wait 11 s, more than the 10 s request_retry_wait leaves"
    )
    assert 0.75 <= (policy.next_wait(1, 0, 0).seconds or 0) <= 1.25  # "0": no advice, the backoff decides


def test_retries_run_out() -> None:
    policy = RetryPolicy(retries=2, rng=random.Random(1))
    assert policy.next_wait(3, 3, None).why == "gave up after 2 retries in 3 s"
    assert RetryPolicy(retries=1).next_wait(2, 1, None).why == "gave up after 1 retry in 1 s"
    assert RetryPolicy(retries=0).next_wait(1, 0, 5) == RetryPolicy(retries=0).next_wait(1, 0, None)
    assert RetryPolicy(retries=0).next_wait(1, 0, None).seconds is None
