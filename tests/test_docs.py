def test_openapi_document(client):
    spec = client.get("/openapi.json").get_json()
    assert spec["info"]["title"] == "Agent Platform API"
    assert "/v1/custom-fields/{field_id}/archive" in spec["paths"]
    schemes = spec["components"]["securitySchemes"]
    assert schemes["ApiKeyHeader"] == {"type": "apiKey", "in": "header", "name": "x-api-key"}
    archive = spec["paths"]["/v1/custom-fields/{field_id}/archive"]["put"]
    assert archive["x-required-scope"] == "custom-fields:write"
    assert "custom-fields:write" in archive["description"]
    error = spec["components"]["schemas"]["Error"]
    assert "error" in error["properties"]
    listing = spec["paths"]["/v1/custom-fields"]["get"]
    names = {parameter["name"] for parameter in listing["parameters"]}
    assert {"page", "limit", "per_page", "order", "sort", "include_archived"} <= names
    assert spec["paths"]["/v1/health"]["get"]["security"] == []


def test_interactive_docs_work_offline(client):
    page = client.get("/docs")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "/docs/assets/swagger-ui-bundle.js" in html
    assert "https://" not in html and "http://" not in html
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css", "swagger-ui-standalone-preset.js"):
        response = client.get(f"/docs/assets/{asset}")
        assert response.status_code == 200 and len(response.data) > 1000
        response.close()


def test_the_document_is_the_same_each_time_and_asked_again_costs_nothing(client):
    first = client.get("/openapi.json")
    again = client.get("/openapi.json")
    assert first.status_code == again.status_code == 200
    assert first.data == again.data and first.mimetype == "application/json"
    etag = first.headers["ETag"]
    assert etag == again.headers["ETag"] and len(etag) > 10
    unchanged = client.get("/openapi.json", headers={"If-None-Match": etag})
    assert (unchanged.status_code, unchanged.data) == (304, b"")
    assert unchanged.headers["ETag"] == etag
    other = client.get("/openapi.json", headers={"If-None-Match": '"not-this-one"'})
    assert other.status_code == 200 and other.data == first.data
    assert client.get("/openapi.json", headers={"If-None-Match": "*"}).status_code == 304
    # Only If-None-Match is a document's: If-Match and a range change nothing.
    for headers in ({"If-Match": '"not-this-one"'}, {"Range": "bytes=0-10"}):
        whole = client.get("/openapi.json", headers=headers)
        assert (whole.status_code, whole.data) == (200, first.data)
