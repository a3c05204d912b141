import pytest

from conftest import assert_error
from sql_trace import statements_traced


@pytest.fixture
def fields(caller):
    names = [f"field {index:02d}" for index in range(25)]
    for order, name in enumerate(names):
        response = caller.post(
            "/v1/custom-fields",
            json={"name": name, "field_type": "text", "display_order": 100 - order},
        )
        assert response.status_code == 201
    return names


def test_defaults_newest_first_twenty_per_page(caller, fields):
    body = caller.get("/v1/custom-fields").get_json()
    assert [f["name"] for f in body["data"]] == fields[::-1][:20]
    assert body["pagination"] == {"page": 1, "limit": 20, "total": 25, "total_pages": 2}
    assert body["meta"] == {"page": 1, "per_page": 20, "total": 25, "total_pages": 2}


def test_second_page_and_page_past_the_end(caller, fields):
    second = caller.get("/v1/custom-fields?page=2").get_json()
    assert [f["name"] for f in second["data"]] == fields[::-1][20:]
    assert second["pagination"]["total"] == 25  # a partial last page: counted from the page
    exactly_full = caller.get("/v1/custom-fields?page=5&limit=5").get_json()
    assert len(exactly_full["data"]) == 5 and exactly_full["pagination"]["total"] == 25
    past = caller.get("/v1/custom-fields?page=9")
    assert past.status_code == 200
    assert past.get_json()["data"] == []
    assert past.get_json()["pagination"]["total"] == 25


def test_an_empty_listing_has_no_pages(caller):
    body = caller.get("/v1/custom-fields").get_json()
    assert body["data"] == []
    assert body["pagination"] == {"page": 1, "limit": 20, "total": 0, "total_pages": 0}


def test_per_page_is_an_alias_of_limit(caller, fields):
    by_limit = caller.get("/v1/custom-fields?limit=7&order=asc").get_json()
    by_per_page = caller.get("/v1/custom-fields?per_page=7&order=asc").get_json()
    assert by_limit == by_per_page
    assert [f["name"] for f in by_limit["data"]] == fields[:7]
    assert by_limit["meta"]["total_pages"] == 4
    assert_error(
        caller.get("/v1/custom-fields?limit=5&per_page=6"), 400, "VALIDATION_ERROR", "per_page"
    )


def test_sort_by_an_allowed_field(caller, fields):
    body = caller.get("/v1/custom-fields?sort=display_order&order=asc&limit=3").get_json()
    assert [f["display_order"] for f in body["data"]] == [76, 77, 78]
    body = caller.get("/v1/custom-fields?sort=name&order=desc&limit=2").get_json()
    assert [f["name"] for f in body["data"]] == ["field 24", "field 23"]


@pytest.mark.parametrize(
    "query, parameter",
    [
        ("page=0", "page"),
        ("page=abc", "page"),
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("per_page=500", "per_page"),
        ("order=sideways", "order"),
        ("sort=password", "sort"),
        ("include_archived=perhaps", "include_archived"),
    ],
)
def test_bad_values_are_400_naming_the_parameter(caller, query, parameter):
    error = assert_error(caller.get(f"/v1/custom-fields?{query}"), 400, "VALIDATION_ERROR")
    assert error["message"].startswith(parameter)


def test_limit_bounds_are_inclusive(caller, fields):
    assert caller.get("/v1/custom-fields?limit=1").get_json()["pagination"]["total_pages"] == 25
    assert len(caller.get("/v1/custom-fields?limit=100").get_json()["data"]) == 25


@pytest.fixture
def six_contacts(caller):
    for number in range(6):
        assert caller.post("/v1/contacts", json={"name": f"c{number}"}).status_code == 201


def statements_run(request):
    """The SQL statements a request ran on this thread's connection."""
    with statements_traced() as statements:
        body = request().get_json()
    return body, statements


def test_a_partial_last_page_tells_the_total_without_counting(caller, six_contacts):
    body, statements = statements_run(lambda: caller.get("/v1/contacts?limit=5&page=2"))
    assert len(body["data"]) == 1 and body["pagination"]["total"] == 6
    assert not [sql for sql in statements if "COUNT(*)" in sql]
    body, statements = statements_run(lambda: caller.get("/v1/contacts?limit=5&page=1"))
    assert len(body["data"]) == 5 and body["pagination"]["total"] == 6
    assert [sql for sql in statements if "COUNT(*)" in sql]  # a full page must count


def test_a_page_past_the_end_counts_its_total(caller, six_contacts):
    past = caller.get("/v1/contacts?limit=5&page=9").get_json()
    assert past["data"] == [] and past["pagination"]["total"] == 6


def test_an_empty_listing_past_its_first_page(caller):
    body = caller.get("/v1/contacts?limit=1&page=2").get_json()
    assert body["data"] == [] and body["pagination"]["total"] == 0
