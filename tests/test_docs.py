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
