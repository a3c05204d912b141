"""The key service's decisions, through its public functions: what a new key
looks like, what is refused and how, the first admin key, revocation, and
authentication of revoked, unknown and tampered keys."""

from datetime import timedelta

import pytest

from agent_platform.errors import NotFound, Unauthorized, ValidationError
from agent_platform.models import ApiKey, Company, Workspace
from agent_platform.models.base import utcnow
from agent_platform.scopes import SCOPES
from agent_platform.services import keys

ALL = ", ".join(sorted(SCOPES))


@pytest.fixture
def workspace(app):
    return keys.create_workspace("Shop")


def test_a_new_key_is_prefixed_and_long_and_only_its_hash_is_stored(workspace):
    key, raw = keys.create_key(workspace.id, "ci", ["agents:read"])
    prefix, lookup, secret = raw.split("_", 2)
    assert (prefix + "_", len(lookup), len(secret)) == (keys.KEY_PREFIX, 12, 43)
    stored = ApiKey.get_by_id(key.id)
    assert (stored.name, stored.lookup_id, list(stored.scopes)) == ("ci", lookup, ["agents:read"])
    assert stored.key_hash == keys.hash_key(raw) and raw not in stored.key_hash


def test_scopes_are_sorted_and_deduplicated(workspace):
    key, _ = keys.create_key(workspace.id, "k", ["webhooks:read", "agents:read", "agents:read"])
    assert list(ApiKey.get_by_id(key.id).scopes) == ["agents:read", "webhooks:read"]


@pytest.mark.parametrize(
    "scopes, message",
    [
        (["agents:fly", "zz"], f"unknown scopes: agents:fly, zz; the scopes are: {ALL}"),
        ([], "at least one scope is required"),
    ],
)
def test_bad_scopes_are_refused_naming_the_field(workspace, scopes, message):
    with pytest.raises(ValidationError) as refused:
        keys.create_key(workspace.id, "k", scopes)
    assert (refused.value.field, refused.value.message) == ("scopes", f"scopes: {message}")
    assert ApiKey.select().count() == 0


def test_a_workspace_gets_a_company_named_after_it_unless_told(app):
    plain = keys.create_workspace("Shop")
    named = keys.create_workspace("Shop 2", "Acme")
    assert (plain.company.name, named.company.name) == ("Shop", "Acme")


def test_the_first_admin_key_is_made_once_with_every_scope(app):
    raw = keys.ensure_first_admin_key()
    key = keys.authenticate(raw)
    assert (key.name, list(key.scopes)) == ("admin", keys.all_scopes())
    workspace = Workspace.get_by_id(key.workspace_id)
    assert (workspace.name, workspace.company.name) == ("Default workspace", "Default company")
    assert keys.ensure_first_admin_key() is None
    assert (Company.select().count(), ApiKey.select().count()) == (1, 1)


def test_an_unknown_workspace_is_not_found(app):
    with pytest.raises(NotFound) as missing:
        keys.get_workspace("6f1c4b9e-8a47-4a1e-9f0e-3e2b1c0d9a88")
    assert missing.value.code == "WORKSPACE_NOT_FOUND"
    assert "6f1c4b9e-8a47-4a1e-9f0e-3e2b1c0d9a88 does not exist" in missing.value.message


def test_revoked_unknown_and_tampered_keys_do_not_authenticate(workspace):
    key, raw = keys.create_key(workspace.id, "k", ["agents:read"])
    for presented in (raw[:-1] + ("A" if raw[-1] != "A" else "B"), "apk_unknown0000_x", "x" + raw):
        with pytest.raises(Unauthorized) as refused:
            keys.authenticate(presented)
        assert refused.value.code == "INVALID_API_KEY"
        assert refused.value.message == "The API key is invalid or has been revoked."
    assert keys.revoke_key(key.id)[0].is_revoked
    assert keys.revoke_key(key.id)[0].is_revoked  # again: still revoked, no error
    with pytest.raises(Unauthorized):
        keys.authenticate(raw)
    with pytest.raises(NotFound) as missing:
        keys.revoke_key("6f1c4b9e-8a47-4a1e-9f0e-3e2b1c0d9a88")
    assert missing.value.code == "API_KEY_NOT_FOUND"
    assert missing.value.message == "API key 6f1c4b9e-8a47-4a1e-9f0e-3e2b1c0d9a88 does not exist"


def test_last_use_is_written_at_most_once_a_minute(workspace):
    key, raw = keys.create_key(workspace.id, "k", ["agents:read"])
    start = utcnow()
    keys.authenticate(raw, now=start)
    keys.authenticate(raw, now=start + timedelta(seconds=59))
    assert ApiKey.get_by_id(key.id).last_used_at == start
    keys.authenticate(raw, now=start + timedelta(seconds=60))
    assert ApiKey.get_by_id(key.id).last_used_at == start + timedelta(seconds=60)


def test_keys_are_listed_oldest_first(workspace):
    first, _ = keys.create_key(workspace.id, "a", ["agents:read"])
    second, _ = keys.create_key(workspace.id, "b", ["agents:read"])
    assert [key.id for key in keys.list_keys()] == [first.id, second.id]


def test_a_workspace_is_found_by_its_id(app):
    keys.create_workspace("Other")
    shop = keys.create_workspace("Shop")
    assert keys.get_workspace(shop.id).name == "Shop"


def test_a_workspaces_keys_are_listed_by_creation_time(app):
    shop, other = keys.create_workspace("Shop"), keys.create_workspace("Other")
    older, _ = keys.create_key(shop.id, "older", ["agents:read"])
    newer, _ = keys.create_key(shop.id, "newer", ["agents:read"])
    keys.create_key(other.id, "elsewhere", ["agents:read"])
    # Written in one order, created in the other (a restored backup, say).
    ApiKey.update(created_at=utcnow() - timedelta(days=1)).where(ApiKey.id == newer.id).execute()
    assert [key.name for key in keys.list_keys(shop.id)] == ["newer", "older"]
    assert [key.name for key in keys.list_keys(other.id)] == ["elsewhere"]
    assert [key.name for key in keys.list_keys()] == ["newer", "older", "elsewhere"]
    with pytest.raises(NotFound):
        keys.list_keys("6f1c4b9e-8a47-4a1e-9f0e-3e2b1c0d9a88")


def test_workspaces_are_listed_by_creation_time_then_id(app):
    company = Company.create(name="C")
    at = utcnow()
    ids = ["ffffffff-0000-7000-8000-000000000000", "00000000-0000-7000-8000-000000000000"]
    for number, workspace_id in enumerate(ids):
        Workspace.create(id=workspace_id, company=company, name=f"W{number}", created_at=at)
    Workspace.create(
        id="88888888-0000-7000-8000-000000000000",
        company=company,
        name="earliest",
        created_at=at - timedelta(seconds=1),
    )
    assert [w.name for w in keys.list_workspaces()] == ["earliest", "W1", "W0"]


def test_a_workspace_starts_on_the_configured_plan_and_trial(app):
    app.config.update(PLAN_DEFAULT="pro", PLAN_TRIAL_DAYS=14)
    before = utcnow()
    workspace = Workspace.get_by_id(keys.create_workspace("Trial shop").id)
    assert workspace.plan == "pro"
    assert before + timedelta(days=14) <= workspace.trial_ends_at <= utcnow() + timedelta(days=14)
