import io

import pytest

from agent_platform.models import ApiKey
from agent_platform.services.rate_limits import SlidingWindowLimiter
from conftest import Caller, assert_error


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


def test_max_keys_forgets_the_least_recently_used_key():
    clock = Clock()
    limiter = SlidingWindowLimiter(2, 60, clock=clock, max_keys=3)
    for key in ("a", "b", "c", "a", "d"):  # "b", the least recently used, makes room for "d"
        limiter.hit(key)
    assert len(limiter) == 3
    assert limiter.hit("a").remaining == 0  # kept: its two requests
    assert limiter.hit("b").remaining == 1  # forgotten: a new window


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
        "LIMITS_MAX_BODY_BYTES": 1024,
    }


@pytest.fixture
def clock(app):
    clock = Clock()
    app.extensions["rate_limiter"].clock = clock
    app.extensions["address_rate_limiter"].clock = clock
    return clock


def assert_headers(response, remaining, clock, limit=3):
    assert response.headers["X-RateLimit-Limit"] == str(limit)
    assert response.headers["X-RateLimit-Remaining"] == str(remaining)
    assert response.headers["X-RateLimit-Reset"] == str(int(clock.now) + 60)


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


def mint(parent, name):
    response = parent.post(
        "/workspaces/permissions",
        json={"name": name, "scopes": ["agents:read", "permissions:read", "permissions:write"]},
    )
    assert response.status_code == 201, response.get_json()
    return response, Caller(
        parent.client, response.get_json()["data"]["permission"]["key"], parent.workspace_id
    )


def test_minted_keys_count_against_their_roots_window(caller, other, clock):
    """Limit 3: the root mints a child (1), the child a grandchild (2), the
    grandchild reads (3); the window is full for all three, and not for
    another workspace's key."""
    minted, child = mint(caller, "child")
    assert_headers(minted, 2, clock)
    minted, grandchild = mint(child, "grandchild")
    assert_headers(minted, 1, clock)  # the child's request counted against the root
    assert_headers(grandchild.get("/v1/me"), 0, clock)
    for key in (caller, child, grandchild):
        response = key.get("/v1/me")
        assert_error(response, 429, "RATE_LIMIT_EXCEEDED")
        assert response.headers["Retry-After"] == "60"
    assert other.get("/v1/me").status_code == 200
    clock.now += 60
    assert_headers(grandchild.get("/v1/me"), 2, clock)


def test_more_minted_keys_do_not_make_room(caller, clock):
    _, child = mint(caller, "child")
    child.get("/v1/me")
    caller.get("/v1/me")
    refused = child.post("/workspaces/permissions", json={"name": "n", "scopes": ["agents:read"]})
    assert_error(refused, 429, "RATE_LIMIT_EXCEEDED")
    assert ApiKey.select().where(ApiKey.workspace == caller.workspace_id).count() == 2


def test_an_unknown_path_carries_the_headers_and_counts(caller, clock):
    for remaining in (2, 1, 0):
        response = caller.get("/v1/no-such-thing")
        assert_error(response, 404, "NOT_FOUND")
        assert_headers(response, remaining, clock)
    assert_error(caller.get("/v1/me"), 429, "RATE_LIMIT_EXCEEDED")
    response = caller.get("/nowhere/at/all")
    assert_error(response, 429, "RATE_LIMIT_EXCEEDED")
    assert_headers(response, 0, clock)


def test_a_method_not_allowed_carries_the_headers_and_counts(caller, clock):
    response = caller.delete("/v1/me")
    assert response.status_code == 405
    assert_headers(response, 2, clock)
    assert_headers(caller.get("/v1/me"), 1, clock)


def test_a_body_too_large_carries_the_headers_and_counts(caller, clock):
    response = caller.post("/v1/agents", data=b"x" * 1025, content_type="application/json")
    assert_error(response, 413, "PAYLOAD_TOO_LARGE")
    assert_headers(response, 2, clock)
    chunked = caller.post(
        "/v1/agents",
        input_stream=io.BytesIO(b"x" * 1025),
        headers={"Transfer-Encoding": "chunked", "Content-Type": "application/json"},
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert_error(chunked, 413, "PAYLOAD_TOO_LARGE")
    assert_headers(chunked, 1, clock)


def test_a_bad_key_is_401_with_the_headers_of_the_clients_address(client, caller, clock):
    """Unknown, malformed and revoked keys count against the client's
    address (a bounded count, apart from any key's), and stay 401: never
    429, which would tell a client with a bad key to wait."""
    minted, revoked = mint(caller, "soon revoked")
    caller.delete(f"/workspaces/permissions/{minted.get_json()['data']['permission']['id']}")
    presented = ["apk_0123456789ab_nothing", "not a key at all", revoked.key, "apk_x", "apk_y"]
    for index, key in enumerate(presented):
        response = client.get("/v1/me", headers={"x-api-key": key})
        assert_error(response, 401, "INVALID_API_KEY")
        assert_headers(response, max(0, 2 - index), clock)
    # The same for an unknown path, a wrong method and a body too large.
    bad = {"x-api-key": "apk_0123456789ab_nothing"}
    for response in (
        client.get("/v1/no-such-thing", headers=bad),
        client.delete("/v1/me", headers=bad),
        client.post("/v1/agents", data=b"x" * 1025, headers=bad),
    ):
        assert_error(response, 401, "INVALID_API_KEY")
        assert_headers(response, 0, clock)
    # The caller's own window is untouched: it made two requests.
    assert_headers(caller.get("/v1/me"), 0, clock)


def test_a_request_without_a_key_has_no_rate_limit_headers(client, clock):
    for response in (client.get("/v1/me"), client.get("/v1/no-such-thing")):
        assert response.status_code in (401, 404)
        assert "X-RateLimit-Limit" not in response.headers


def test_by_the_real_clock_only_the_key_itself_counts_against_its_window(client, caller):
    """Without a test clock: on PostgreSQL the key's lookup and its hit are
    then one statement (migration 0029), which counts only when the secret
    is the key's and the key is live. Limit 3: minting and revoking a key
    take two; the revoked key and the caller's lookup id with another
    secret are 401 and count nothing against the window they name."""
    minted, revoked = mint(caller, "soon revoked")
    caller.delete(f"/workspaces/permissions/{minted.get_json()['data']['permission']['id']}")
    forged = caller.key[: len("apk_") + 12] + "_" + "A" * 43
    for key in (revoked.key, forged) * 3:
        assert_error(client.get("/v1/me", headers={"x-api-key": key}), 401, "INVALID_API_KEY")
    response = caller.get("/v1/me")
    assert (response.status_code, response.headers["X-RateLimit-Remaining"]) == (200, "0")
    assert_error(caller.get("/v1/me"), 429, "RATE_LIMIT_EXCEEDED")
