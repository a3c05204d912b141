"""The channel-type registry (channels/adapters.py) through its public
functions, in this process: what registering a type or an adapter makes
known, the order of the types, and what is said of a type that cannot carry
messages. tests/test_channel_contract.py shows the same through the whole API,
in a process of its own (the API's schemas are built from the registry when
they are imported)."""

import pytest

from agent_platform.channels import adapters, senders
from agent_platform.channels.adapters import Adapter, ChannelType
from agent_platform.errors import ApiError
from agent_platform.models import channels as channel_models
from agent_platform.models.channels import Channel

BUILT_IN = ("whatsapp", "telegram", "email", "website")


class FaxType(ChannelType):
    type = "fax"
    secret_settings = ("fax_pin",)
    link_setting = "number"
    link_prefix = "fax:"


class PagerAdapter(Adapter):
    type = "pager"
    order = 0  # before every built-in type
    secret_settings = ("pager_token",)

    def send(self, channel, message):
        return senders.SendResult(external_id="p-1")


@pytest.fixture
def registry(monkeypatch):
    """The registry as the package left it, restored after the test."""
    adapters.load()
    monkeypatch.setattr(adapters, "_TYPES", dict(adapters._TYPES))
    monkeypatch.setattr(adapters, "_ADAPTERS", dict(adapters._ADAPTERS))
    monkeypatch.setattr(senders, "_SENDERS", dict(senders._SENDERS))
    monkeypatch.setattr(channel_models, "SECRET_SETTINGS", dict(channel_models.SECRET_SETTINGS))
    names = set(channel_models._SECRET_NAMES)  # read live by the settings column
    yield adapters
    channel_models._SECRET_NAMES.intersection_update(names)


def test_the_built_in_types_come_in_their_order():
    assert adapters.type_names() == BUILT_IN
    assert [kind.type for kind in adapters.types()] == list(BUILT_IN)


def test_a_registered_type_is_offered_last_without_an_order_and_hides_its_secrets(registry):
    fax = FaxType()
    registry.register_type(fax)
    assert registry.type_names() == (*BUILT_IN, "fax")
    assert registry.channel_type("fax") is fax
    assert registry.get_adapter("fax") is None
    channel = Channel(type="fax", settings={"number": "+551133334444", "fax_pin": "1234"})
    assert channel.public_settings() == {"number": "+551133334444", "fax_pin_set": True}
    assert fax.public_link(channel, "https://agents.example.com") == "fax:+551133334444"


def test_a_type_without_an_adapter_says_which_types_can_carry_messages(registry):
    registry.register_type(FaxType())
    can = ", ".join(sorted(senders._SENDERS))
    assert registry.unavailable_reason("fax") == (
        f"Channels of type fax cannot carry messages yet (types that can: {can})."
    )
    assert registry.send_refusal(Channel(type="fax", settings={})) == (
        f"Channels of type fax cannot send messages yet (types that can: {can})."
    )
    assert registry.unavailable_reason("telegram") is None


def test_a_registered_adapter_is_its_types_sender_and_takes_its_order(registry):
    pager = PagerAdapter()
    registry.register_adapter(pager)
    assert registry.type_names() == ("pager", *BUILT_IN)
    assert registry.channel_type("pager") is pager
    assert registry.get_adapter("pager") is pager
    assert registry.adapter_for("pager") is pager
    assert senders.get_sender("pager") is pager
    assert registry.unavailable_reason("pager") is None
    assert registry.send_refusal(Channel(type="pager", settings={})) is None
    channel = Channel(type="pager", settings={"pager_token": "t"})
    assert channel.public_settings() == {"pager_token_set": True}


def test_an_adapter_without_a_callback_url_refuses_callbacks():
    with pytest.raises(ApiError) as refused:
        PagerAdapter().receive("c-1", adapters.Callback(b"{}", {}))
    assert (refused.value.status, refused.value.code) == (404, "NOT_FOUND")
    assert refused.value.message == "Channels of type pager have no callback URL."


def test_a_type_with_no_link_yet_names_the_setting():
    channel = Channel(id="c-1", type="fax", settings={})
    with pytest.raises(ApiError) as refused:
        FaxType().public_link(channel, "https://agents.example.com")
    assert (refused.value.status, refused.value.code) == (409, "CHANNEL_NOT_CONFIGURED")
    assert refused.value.message == "Channel c-1 has no link yet: set settings.number first."
