import pytest

from agent_platform.api.ratelimit import SlidingWindowLimiter
from conftest import assert_error


class Clock:
    def __init__(self, now=1_000_000.0):
        self.now = now

    def __call__(self):
        return self.now


def test_window_slides_exactly():
    clock = Clock()
    limiter = SlidingWindowLimiter(3, 60, clock=clock)
    for _ in range(3):
        assert limiter.hit("k").allowed
        clock.now += 10
    # Requests at t=0, 10, 20; now t=30.
    refused = limiter.hit("k")
    assert not refused.allowed
    assert refused.remaining == 0
    assert refused.retry_after == 30  # the first request leaves the window in 30 s
    clock.now += 29.5
    assert not limiter.hit("k").allowed
    clock.now += 0.5
    assert limiter.hit("k").allowed  # t=60: the request of t=0 has left the window
    assert not limiter.hit("k").allowed  # those of t=10, 20 and 60 are still in it


def test_retry_after_is_at_least_one_second():
    clock = Clock()
    limiter = SlidingWindowLimiter(1, 60, clock=clock)
    limiter.hit("k")
    clock.now += 59.99
    assert limiter.hit("k").retry_after == 1


def test_keys_are_counted_apart_and_idle_ones_evicted():
    clock = Clock()
    limiter = SlidingWindowLimiter(2, 60, clock=clock)
    for index in range(1000):
        limiter.hit(f"key-{index}")
    assert len(limiter) == 1000
    assert limiter.hit("key-1").remaining == 0
    clock.now += 61
    limiter.hit("fresh")
    assert len(limiter) == 1  # every idle key is gone


def test_an_allowed_request_has_nothing_to_wait_for():
    limiter = SlidingWindowLimiter(1, 60, clock=Clock())
    assert limiter.hit("k").retry_after == 0


def test_a_key_whose_last_request_just_left_the_window_is_evicted():
    # Exactly `window` seconds old is outside, as for the count itself.
    clock = Clock()
    limiter = SlidingWindowLimiter(2, 60, clock=clock)
    limiter.hit("old")
    clock.now += 60
    limiter.hit("new")
    assert len(limiter) == 1


def test_remaining_and_reset():
    clock = Clock(1000.0)
    limiter = SlidingWindowLimiter(5, 60, clock=clock)
    first = limiter.hit("k")
    assert (first.remaining, first.reset_at) == (4, 1060)
    clock.now += 10
    assert limiter.hit("k").reset_at == 1060  # the oldest request still decides


@pytest.fixture
def settings(tmp_path):
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "RATE_LIMIT_REQUESTS": 3,
        "RATE_LIMIT_WINDOW_SECONDS": 60,
    }


@pytest.fixture
def clock(app):
    clock = Clock()
    app.extensions["rate_limiter"].clock = clock
    return clock


def test_http_headers_and_429(caller, clock):
    for remaining in (2, 1, 0):
        response = caller.get("/v1/me")
        assert response.status_code == 200
        assert response.headers["X-RateLimit-Limit"] == "3"
        assert response.headers["X-RateLimit-Remaining"] == str(remaining)
        assert response.headers["X-RateLimit-Reset"] == str(int(clock.now) + 60)
    clock.now += 15
    response = caller.get("/v1/me")
    error = assert_error(response, 429, "RATE_LIMIT_EXCEEDED")
    assert response.headers["Retry-After"] == "45"
    assert "3 requests per 60 seconds" in error["message"] and "45 seconds" in error["message"]
    assert response.headers["X-RateLimit-Remaining"] == "0"
    clock.now += 45
    assert caller.get("/v1/me").status_code == 200


def test_errors_carry_the_headers_and_count(caller, clock):
    response = caller.get("/v1/custom-fields/not-there")
    assert response.status_code == 404
    assert response.headers["X-RateLimit-Remaining"] == "2"


def test_each_key_has_its_own_window(caller, make_caller, clock):
    for _ in range(3):
        caller.get("/v1/me")
    assert caller.get("/v1/me").status_code == 429
    assert make_caller(workspace_id=caller.workspace_id).get("/v1/me").status_code == 200


def test_health_is_never_limited(client, caller, clock):
    for _ in range(3):
        caller.get("/v1/me")
    assert all(client.get("/v1/health").status_code == 200 for _ in range(10))
