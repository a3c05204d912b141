"""The admins' agent pages at /app/agents over HTTP: the list with credits,
create and edit (the provider key write-only), activate, the default, the
knowledge (add, search, edit, delete, a document upload), the gaps turned
into Q&As, and the test chat with its reasons; 403 for the agent role, 404
for another workspace's agent."""

import io
import json
import re

import pytest

from agent_platform.models import Agent, Conversation, Message, Training
from agent_platform.services import credits, trainings
from agent_platform.web.knowledge import LISTED, PREVIEW_CHARS
from conversations_helpers import data
from loopback import QuietHandler, serving
from replies_helpers import (
    add_qa,
    agent_channel,
    at,
    customer_says,
    fake,  # noqa: F401  (fixture)
    make_agent,
    run_replies,
)
from web_helpers import make_user, page_token, sign_in, text

HOURS = ("What are your opening hours?", "We open every day from 11am to 11pm.")
KEY = "sk-very-secret-provider-key"


def post(client, path, **form):
    return client.post(path, data={"csrf_token": page_token(client, "/app/agents"), **form})


@pytest.fixture
def admin(client, caller):
    make_user(caller.workspace_id)
    sign_in(client)
    return client


@pytest.fixture
def agent_id(caller):
    found = make_agent(caller, name="Pizza bot")
    add_qa(caller, found, *HOURS)
    return found


def edit_form(**changes):
    form = {
        "name": "Pizza bot",
        "language": "en",
        "tone": "friendly",
        "greeting_message": "",
        "fallback_message": "",
        "handoff_on_fallback": "on",
        "model_provider": "knowledge",
        "model_name": "gpt-4o-mini",
        "base_url": "",
    }
    return {**form, **changes}


def test_the_list_shows_the_workspaces_agents_with_credits_this_month(admin, caller, other):
    mine = make_agent(caller, name="<b>Mine</b>", language="pt-BR")
    make_agent(other, name="Theirs")
    credits.record_usage(caller.workspace_id, mine, 2.5)
    page = text(admin.get("/app/agents"))
    assert "&lt;b&gt;Mine&lt;/b&gt;" in page and "<b>Mine</b>" not in page
    assert "pt-BR" in page and "2.5" in page and "Theirs" not in page


def test_create_an_agent_and_refusals_in_words(admin):
    made = post(admin, "/app/agents", name="Ana's bot", language="pt-br", tone="casual")
    assert made.status_code == 303
    agent = Agent.get(Agent.name == "Ana's bot")
    assert (agent.language, agent.tone) == ("pt-BR", "casual")
    assert made.headers["Location"].endswith(f"/app/agents/{agent.id}?done=created")
    assert "The agent is created" in text(admin.get(made.headers["Location"]))
    bad = post(admin, "/app/agents", name="Bo", language="not a language")
    assert bad.status_code == 400 and "language: must be a BCP 47" in text(bad)
    assert 'value="Bo"' in text(bad)
    nameless = post(admin, "/app/agents", name="", language="en")
    assert nameless.status_code == 400 and "name: Missing data" in text(nameless)
    assert Agent.select().count() == 1


def test_edit_the_agent_and_its_provider_key_is_never_shown(admin, caller, agent_id):
    path = f"/app/agents/{agent_id}"
    form = edit_form(
        name="Pizza bot 2",
        language="es",
        tone="formal",
        greeting_message="Hi!",
        fallback_message="Ask Ana.",
        handoff_on_fallback="",
        model_provider="openai",
        api_key=KEY,
    )
    saved = post(admin, path, **form)
    assert saved.status_code == 303
    settings = data(caller.get(f"/v1/agents/{agent_id}/settings"))
    assert settings["api_key_set"] and settings["model_provider"] == "openai"
    assert settings["fallback_message"] == "Ask Ana." and not settings["handoff_on_fallback"]
    agent = data(caller.get(f"/v1/agents/{agent_id}"))
    assert (agent["name"], agent["language"], agent["tone"]) == ("Pizza bot 2", "es", "formal")
    assert agent["greeting_message"] == "Hi!"
    page = text(admin.get(path))
    assert KEY not in page and "Provider API key: set" in page
    post(admin, path, **edit_form(model_provider="openai"))  # no key typed: kept
    assert data(caller.get(f"/v1/agents/{agent_id}/settings"))["api_key_set"]
    post(admin, path, **edit_form(remove_api_key="on"))
    assert "Provider API key: not set" in text(admin.get(path))


def test_a_bad_edit_says_why_and_changes_nothing(admin, caller, agent_id):
    path = f"/app/agents/{agent_id}"
    bad = post(admin, path, **edit_form(name="Renamed", model_provider="skynet", api_key=KEY))
    assert bad.status_code == 400 and "model_provider: Must be one of" in text(bad)
    assert KEY not in text(bad)
    url = post(admin, path, **edit_form(name="Renamed", base_url="ftp://x"))
    assert url.status_code == 400 and "base_url" in text(url)
    empty = post(admin, path, **edit_form(name=""))
    assert empty.status_code == 400 and "name:" in text(empty)
    assert data(caller.get(f"/v1/agents/{agent_id}"))["name"] == "Pizza bot"


def test_activate_deactivate_and_make_the_default(admin, caller, agent_id):
    first = make_agent(caller, name="First", is_default=True)
    post(admin, f"/app/agents/{agent_id}/active", active="false")
    assert not Agent.get_by_id(agent_id).is_active
    page = text(admin.get(f"/app/agents/{agent_id}?done=deactivated"))
    assert "no longer answers" in page and ">Activate<" in page
    post(admin, f"/app/agents/{agent_id}/active", active="true")
    assert Agent.get_by_id(agent_id).is_active
    post(admin, f"/app/agents/{agent_id}/default")
    assert Agent.get_by_id(agent_id).is_default and not Agent.get_by_id(first).is_default


def test_knowledge_add_search_edit_delete(admin, agent_id):
    path = f"/app/agents/{agent_id}/knowledge"
    added = post(admin, path, type="qa", question="Do you deliver?", answer="Yes, <b>free</b>.")
    assert added.status_code == 303
    page = text(admin.get(added.headers["Location"]))
    assert "Do you deliver?" in page and "Yes, &lt;b&gt;free&lt;/b&gt;." in page
    assert "The training is added" in page
    post(admin, path, type="text", title="Parking", content="Park at the Oak lot behind us.")
    found = text(admin.get(path, query_string={"q": "parking"}))
    assert "Oak lot" in found and "score" in found and "Do you deliver?" not in found
    training = Training.get(Training.question == "Do you deliver?")
    edit = f"{path}/{training.id}"
    assert "Do you deliver?" in text(admin.get(edit))
    post(admin, edit, question="Do you deliver pizza?", answer="Yes.")
    assert Training.get_by_id(training.id).question == "Do you deliver pizza?"
    empty = post(admin, edit, question="", answer="Yes.")
    assert empty.status_code == 400 and "question:" in text(empty)
    post(admin, f"{edit}/delete")
    assert Training.get_or_none(Training.id == training.id) is None


def test_knowledge_lists_the_start_of_a_long_text_without_reading_it_whole(admin, caller, agent_id):
    # 40 texts of 4.9 MB each, read whole to show 300 characters of each,
    # took 200 MB of the server's memory for one page.
    long = "Parking at the Oak lot. " + "Spaces are free after six. " * 4000 + "Tail mark."
    created = caller.post(
        f"/v1/agents/{agent_id}/trainings", json={"type": "text", "content": long}
    )
    assert created.status_code == 201
    path = f"/app/agents/{agent_id}/knowledge"
    for page in (text(admin.get(path)), text(admin.get(path, query_string={"q": "parking"}))):
        assert "Parking at the Oak lot. Spaces are free" in page and "..." in page
        assert "Tail mark." not in page
    training_id = created.get_json()["data"]["id"]
    assert "Tail mark." in text(admin.get(f"{path}/{training_id}"))  # the whole, to edit
    listed = trainings.previews(caller.workspace_id, agent_id, LISTED, PREVIEW_CHARS)
    found = trainings.search(caller.workspace_id, agent_id, "parking", 5, "any", PREVIEW_CHARS)
    assert [len(t.content) for t in listed if t.type == "text"] == [PREVIEW_CHARS]
    assert [len(t.content) for t in found] == [PREVIEW_CHARS]
    assert len(trainings.search(caller.workspace_id, agent_id, "parking")[0].content) == len(long)


def test_a_long_text_is_added_from_the_knowledge_page_as_through_the_api(admin, agent_id):
    # The page's form is multipart (it carries a file too): Flask kept its
    # text fields to 500 KB, and refused what the API takes (5,000,000).
    long = "Parking at the Oak lot. " * 200_000
    form = {"csrf_token": page_token(admin, "/app/agents"), "type": "text", "content": long}
    body = "".join(
        f'--B\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
        for name, value in form.items()
    )
    path = f"/app/agents/{agent_id}/knowledge"
    added = admin.post(
        path, data=body + "--B--\r\n", content_type="multipart/form-data; boundary=B"
    )
    assert added.status_code == 303, text(added)[:500]
    assert Training.get(Training.type == "text").content == long.strip()


def test_knowledge_refusals_in_words(admin, agent_id):
    path = f"/app/agents/{agent_id}/knowledge"
    missing = post(admin, path, type="qa", question="Only a question")
    assert missing.status_code == 400 and "answer: required for qa trainings" in text(missing)
    assert "Only a question" in text(missing)
    no_file = post(admin, path, type="document")
    assert no_file.status_code == 400 and "file: required for document" in text(no_file)
    assert Training.select().count() == 1


def test_a_document_upload_becomes_a_training(admin, agent_id):
    form = {
        "csrf_token": page_token(admin, "/app/agents"),
        "type": "document",
        "file": (io.BytesIO(b"We deliver within 5 km of the shop."), "delivery.txt"),
    }
    added = admin.post(f"/app/agents/{agent_id}/knowledge", data=form)
    assert added.status_code == 303
    training = Training.get(Training.type == "document")
    assert training.filename == "delivery.txt" and "5 km" in training.content
    wrong = {
        "csrf_token": form["csrf_token"],
        "type": "document",
        "file": (io.BytesIO(b"\x00\x01"), "photo.png"),
    }
    refused = admin.post(f"/app/agents/{agent_id}/knowledge", data=wrong)
    assert refused.status_code == 400 and "file: must be a .txt" in text(refused)


class Site(QuietHandler):
    """A shop's own web pages: one to learn from, one that is gone."""

    def do_GET(self):
        if self.path == "/hours.html":
            page = b"<title>Hours</title><p>Open <b>Sundays</b> from noon.</p>"
            self.reply(200, "text/html; charset=utf-8", page)
        else:
            self.reply(404, "text/html", b"<p>no such page</p>")


def test_a_web_page_is_read_into_a_training_or_says_why_not(admin, app, agent_id):
    path = f"/app/agents/{agent_id}/knowledge"
    with serving(Site) as site:
        private = post(admin, path, type="url", url=f"{site}/hours.html")
        assert private.status_code == 400
        assert "url: refused" in text(private) and "trainings.allow_private_urls" in text(private)
        assert Training.select().where(Training.type == "url").count() == 0
        app.config["TRAININGS_ALLOW_PRIVATE_URLS"] = True  # a shop's page on loopback
        assert post(admin, path, type="url", url=f"{site}/hours.html").status_code == 303
        assert post(admin, path, type="url", url=f"{site}/gone", title="Old").status_code == 303
    page = text(admin.get(path))
    assert "Web page" in page and "Open Sundays from noon." in page and "<b>Sundays" not in page
    assert "Not used: the page answered HTTP 404" in page
    chat = text(post(admin, f"{path[: -len('/knowledge')]}/test-chat", text="open on sundays?"))
    assert "Open Sundays from noon." in chat and "passage of a text" in chat


def transcript_of(page):
    found = re.search(r'name="transcript" value="([^"]*)"', page).group(1)
    return json.loads(found.replace("&#34;", '"').replace("&quot;", '"').replace("&amp;", "&"))


def test_the_test_chat_answers_with_its_reason_and_stores_nothing(admin, caller, agent_id):
    path = f"/app/agents/{agent_id}/test-chat"
    conversations, messages = Conversation.select().count(), Message.select().count()
    first = text(post(admin, path, text="when are you open?"))
    assert "We open every day from 11am to 11pm." in first
    assert "Answered from a Q&amp;A, score" in first and "What are your opening hours?" in first
    second = text(
        post(
            admin, path, text="can I pay with bitcoin", transcript=json.dumps(transcript_of(first))
        )
    )
    assert "We open every day" in second  # the transcript goes on
    assert "The fallback: no training passed" in second and "handed to a person" in second
    third = text(post(admin, path, text="I want to talk to a person"))
    assert "Handed off to a person: the message has the keyword &#34;talk to a person&#34;" in third
    assert (Conversation.select().count(), Message.select().count()) == (conversations, messages)
    assert credits.usage_report(caller.workspace_id, agent_id)["total_credits"] == 0
    empty = post(admin, path, text="  ")
    assert empty.status_code == 400 and "text:" in text(empty)
    forged = post(admin, path, text="hello", transcript='[{"question": 1}]')
    assert forged.status_code == 200 and "Small talk" in text(forged)
    surrogate = '[{"question": "\\ud800", "why": "w", "text": "a", "trainings": []}]'
    for forged in ("[" * 5000 + "]" * 5000, surrogate):
        # Nested thousands deep (a 500 before), a lone surrogate: started anew.
        page = post(admin, path, text="hello", transcript=forged)
        assert page.status_code == 200
        assert [turn["question"] for turn in transcript_of(text(page))] == ["hello"]


def test_the_test_chat_says_when_it_asks_back_or_stays_silent(admin, caller, agent_id):
    add_qa(caller, agent_id, "How much does delivery cost?", "Delivery costs $5.")
    add_qa(caller, agent_id, "Which areas do you deliver to?", "Within 10 km.")
    path = f"/app/agents/{agent_id}/test-chat"
    asked = text(post(admin, path, text="do you deliver?"))
    assert "Asked back: several Q&amp;As match about as well" in asked
    assert "1. How much does delivery cost?" in asked and "Which areas do you deliver to?" in asked
    post(admin, f"/app/agents/{agent_id}/active", active="false")
    silent = text(post(admin, path, text="when are you open?"))
    assert "The agent is inactive: on a channel it would not answer at all." in silent
    assert "We open every day" not in silent


def test_the_test_chat_does_not_call_a_model_provider(admin, caller, agent_id):
    caller.put(f"/v1/agents/{agent_id}/settings", json={"model_provider": "openai"})
    page = text(post(admin, f"/app/agents/{agent_id}/test-chat", text="opening hours?"))
    assert "the openai model, which the test chat does not call" in page
    assert "What are your opening hours?" in page  # the training it would be given


def test_a_gap_becomes_a_qa_and_the_agent_answers_it(admin, caller, agent_id, fake):  # noqa: F811
    channel = agent_channel(caller, agent_id)
    message = customer_says(channel["id"], "do you have gluten free pizza?", at(0))
    run_replies(at(5))
    reply = "Yes, our gluten-free base is baked apart."
    data(
        caller.post(f"/v1/conversations/{message.conversation_id}/messages", json={"text": reply}),
        201,
    )
    page = text(admin.get(f"/app/agents/{agent_id}/gaps"))
    assert "do you have gluten free pizza?" in page and reply in page
    learned = post(
        admin,
        f"/app/agents/{agent_id}/gaps/{message.id}",
        question="do you have gluten free pizza?",
        answer=reply + " Ask for it.",
    )
    assert learned.status_code == 303
    after = text(admin.get(learned.headers["Location"]))
    assert "answers that question by itself" in after and "No gaps" in after
    chat = text(post(admin, f"/app/agents/{agent_id}/test-chat", text="gluten free pizza?"))
    assert "Ask for it." in chat and "Answered from a Q&amp;A" in chat
    gone = post(admin, f"/app/agents/{agent_id}/gaps/{message.id}", answer="again")
    assert gone.status_code == 404


def test_the_agent_role_is_refused(client, caller, agent_id):
    make_user(caller.workspace_id, email="bia@example.com", name="Bia", role="agent")
    sign_in(client, email="bia@example.com")
    for path in (
        "/app/agents",
        f"/app/agents/{agent_id}",
        f"/app/agents/{agent_id}/knowledge",
        f"/app/agents/{agent_id}/gaps",
        f"/app/agents/{agent_id}/test-chat",
    ):
        assert client.get(path).status_code == 403
    token = page_token(client, "/app")
    refused = client.post(f"/app/agents/{agent_id}/active", data={"csrf_token": token})
    assert refused.status_code == 403 and Agent.get_by_id(agent_id).is_active
    assert "Agents" not in text(client.get("/app"))


def test_another_workspaces_agent_and_training_are_404(admin, caller, other, agent_id):
    theirs = make_agent(other, name="Theirs")
    add_qa(other, theirs, "Secret?", "Their secret.")
    training = Training.get(Training.agent == theirs)
    for path in (
        f"/app/agents/{theirs}",
        f"/app/agents/{theirs}/knowledge",
        f"/app/agents/{theirs}/gaps",
        f"/app/agents/{agent_id}/knowledge/{training.id}",
    ):
        assert admin.get(path).status_code == 404
    assert post(admin, f"/app/agents/{theirs}/active", active="false").status_code == 404
    assert post(admin, f"/app/agents/{agent_id}/knowledge/{training.id}/delete").status_code == 404
    assert Agent.get_by_id(theirs).is_active and Training.get_by_id(training.id)
