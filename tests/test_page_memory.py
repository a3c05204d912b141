"""Pages of counted listings are served again from memory while the version
of their rows stands (models/pagination.py), and never once it has moved."""

import contextlib
import sqlite3

from agent_platform import create_app
from agent_platform.db import database, transaction
from agent_platform.db_postgresql import postgresql_statement
from agent_platform.models.pagination import RENDERED_PAGES, PageRequest, RenderedPages
from agent_platform.models.sqljson import RawJson
from agent_platform.services import custom_fields
from conftest import OFFLINE, ON_POSTGRESQL, Caller, new_postgres_database
from sql_trace import RENDERING, statements_traced

PAGE = "/v1/custom-fields?limit=3"


def create(caller, name):
    response = caller.post("/v1/custom-fields", json={"name": name, "field_type": "text"})
    assert response.status_code == 201, response.get_json()
    return response.get_json()["data"]["id"]


def page(caller, query=PAGE):
    response = caller.get(query)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def another_connection():
    """A connection of its own to the test's database (closed on leaving)."""
    if ON_POSTGRESQL:
        import psycopg

        return psycopg.connect(database.database)
    return contextlib.closing(sqlite3.connect(database.database))


def copied_database(tmp_path, request):
    """The settings naming a copy of the test's database, as it is now."""
    if ON_POSTGRESQL:
        database.close_all()  # a template database has no connections
        name = database.database.rsplit("/", 1)[1]
        return {
            "DATABASE_URL": new_postgres_database(request.getfixturevalue("postgres_server"), name)
        }
    copy = tmp_path / "copy.db"
    with sqlite3.connect(database.database) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    return {}


def assert_page_is_current(caller, query=PAGE):
    """The page shows each field as GET /v1/custom-fields/{id} does now, in
    the order and number the database holds now."""
    body = page(caller, query)
    archived = "include_archived=true" in query
    rows = database.execute_sql(
        'SELECT "id" FROM "custom_field" WHERE "workspace_id" = ?'
        + ("" if archived else ' AND NOT "is_archived"')
        + ' ORDER BY "created_at" DESC, "id" DESC',
        (caller.workspace_id,),
    ).fetchall()
    assert [item["id"] for item in body["data"]] == [row[0] for row in rows[:3]]
    for item in body["data"]:
        assert item == caller.get(f"/v1/custom-fields/{item['id']}").get_json()["data"]
    assert body["pagination"]["total"] == body["meta"]["total"] == len(rows)
    return body


def statements_run(caller, query=PAGE):
    """The SQL statements a request for `query` runs on this thread's connection."""
    with statements_traced() as seen:
        page(caller, query)
    return seen


def test_a_page_asked_again_is_not_rendered_again(caller):
    for i in range(5):
        create(caller, f"field {i}")
    first = statements_run(caller)
    again = statements_run(caller)
    assert any(RENDERING in sql for sql in first)
    assert not any(RENDERING in sql for sql in again)
    assert any('"row_count"' in sql for sql in again)
    kept = page(caller)
    RENDERED_PAGES._pages.clear()  # forgotten: the next page is rendered anew
    assert any(RENDERING in sql for sql in statements_run(caller))
    assert kept == page(caller)


def test_every_change_through_the_api_shows_on_the_next_page(caller, other):
    ids = [create(caller, f"field {i}") for i in range(4)]
    assert_page_is_current(caller)

    create(caller, "newest")
    assert assert_page_is_current(caller)["data"][0]["name"] == "newest"
    caller.patch(f"/v1/custom-fields/{ids[3]}", json={"name": "renamed"})
    assert assert_page_is_current(caller)["data"][1]["name"] == "renamed"
    caller.put(f"/v1/custom-fields/{ids[3]}/archive")
    assert_page_is_current(caller)
    assert_page_is_current(caller, PAGE + "&include_archived=true")
    caller.put(f"/v1/custom-fields/{ids[3]}/unarchive")
    assert_page_is_current(caller)

    # Another workspace's change moves none of this listing's versions.
    create(other, "theirs")
    assert not any(RENDERING in sql for sql in statements_run(caller))


def test_changes_by_another_writer_show_on_the_next_page(caller):
    ids = [create(caller, f"field {i}") for i in range(4)]
    assert_page_is_current(caller)
    assert_page_is_current(caller, PAGE + "&include_archived=true")

    # Another connection, as the CLI or a second process would write.
    with another_connection() as writer:
        for sql, params in (
            ('UPDATE "custom_field" SET "display_order" = 7 WHERE "id" = ?', (ids[3],)),
            ('UPDATE "custom_field" SET "is_archived" = ? WHERE "id" = ?', (True, ids[2])),
            ('DELETE FROM "custom_field" WHERE "id" = ?', (ids[1],)),
        ):
            writer.execute(postgresql_statement(sql) if ON_POSTGRESQL else sql, params)
            writer.commit()
            assert_page_is_current(caller)
            assert_page_is_current(caller, PAGE + "&include_archived=true")
    assert page(caller)["data"][0]["display_order"] == 7


def test_each_page_and_order_is_kept_apart(caller):
    names = [f"field {i}" for i in range(5)]
    for name in names:
        create(caller, name)
    first, second = page(caller), page(caller, PAGE + "&page=2")
    oldest = page(caller, PAGE + "&order=asc")
    assert [item["name"] for item in first["data"] + second["data"]] == names[::-1]
    assert [item["name"] for item in oldest["data"]] == names[:3]
    assert page(caller) == first and page(caller, PAGE + "&page=2") == second


def test_the_bound_counts_each_kept_character_once():
    pages = RenderedPages(max_chars=10)
    pages.keep("a", 1, RawJson("[1,2]"))
    pages.keep("a", 2, RawJson("[3,4]"))  # replaces: 5 characters kept, not 10
    pages.keep("b", 1, RawJson("[5,6]"))  # 10 in all: at the bound, not past it
    assert pages.get("a", 2).text == "[3,4]" and pages.get("b", 1).text == "[5,6]"
    pages.keep("c", 1, RawJson("[7]"))  # 13: every page is forgotten, then c kept
    assert pages.get("a", 2) is None and pages.get("b", 1) is None
    pages.keep("d", 1, RawJson("[8,9,1]"))  # 3 + 7 = 10: both kept
    assert pages.get("c", 1).text == "[7]" and pages.get("d", 1).text == "[8,9,1]"


def test_a_replaced_page_gives_back_its_characters():
    pages = RenderedPages(max_chars=20)
    pages.keep("a", 1, RawJson("[1,2]"))
    pages.keep("a", 2, RawJson("[3,4]"))  # 5 characters kept, not 10 or 15
    pages.keep("b", 1, RawJson("[5,6,7]"))  # 5 + 7 = 12: no need to forget anything
    assert pages.get("a", 2).text == "[3,4]" and pages.get("b", 1).text == "[5,6,7]"


def test_a_page_read_inside_a_transaction_tells_its_total(caller):
    ids = [create(caller, name) for name in ("gone", "one", "two", "three", "four")]
    archived = caller.put(f"/v1/custom-fields/{ids[0]}/archive")
    assert archived.status_code == 200  # the rows' version moves on, their number back
    paging = PageRequest(page=2, limit=3, order="desc", sort="created_at")
    with transaction():
        listed = custom_fields.list_fields(caller.workspace_id, paging)
    assert (listed.total, listed.total_pages, listed.request) == (4, 2, paging)
    assert '"name":"one"' in listed.items.text and '"name":"two"' not in listed.items.text


def test_kept_pages_are_bounded_and_answer_only_their_version():
    pages = RenderedPages(max_chars=10)
    pages.keep("a", 1, RawJson("[1,2,3]"))
    assert pages.get("a", 1).text == "[1,2,3]"
    assert pages.get("a", 2) is None
    pages.keep("a", 2, RawJson("[4,5,6]"))  # replaces the page of version 1
    assert pages.get("a", 1) is None and pages.get("a", 2).text == "[4,5,6]"
    pages.keep("b", 1, RawJson("[7,8]"))  # 7 + 5 characters: more than 10
    assert pages.get("a", 2) is None
    assert pages.get("b", 1).text == "[7,8]"


def test_a_page_of_another_database_file_is_never_served(caller, tmp_path, request):
    ids = [create(caller, f"field {i}") for i in range(2)]
    copy = copied_database(tmp_path, request)
    # The same workspace at the same version in both files, with other rows.
    caller.patch(f"/v1/custom-fields/{ids[0]}", json={"name": "here"})
    assert page(caller)["data"][1]["name"] == "here"

    elsewhere = create_app({**OFFLINE, "DATABASE_PATH": str(tmp_path / "copy.db"), **copy})
    with elsewhere.app_context():
        there = Caller(elsewhere.test_client(), caller.key, caller.workspace_id)
        there.patch(f"/v1/custom-fields/{ids[0]}", json={"name": "there"})
        assert page(there)["data"][1]["name"] == "there"


def test_a_page_read_inside_a_transaction_rolled_back_is_never_served(caller):
    create(caller, "kept")
    paging = PageRequest(page=1, limit=3, order="desc", sort="created_at")
    try:
        with transaction():
            custom_fields.create_field(caller.workspace_id, {"name": "gone", "field_type": "text"})
            # The page shows the uncommitted row, at the version it moved to.
            listed = custom_fields.list_fields(caller.workspace_id, paging)
            assert '"name":"gone"' in listed.items.text
            raise RuntimeError("abandon")
    except RuntimeError:
        pass
    create(caller, "committed")  # moves the version to the same number again
    names = [item["name"] for item in assert_page_is_current(caller)["data"]]
    assert names == ["committed", "kept"]
