//! The v2.0 conventions of CONTRACT section 2.

use reqwest::Method;
use serde_json::{Value, json};

use crate::both_backends;
use crate::helpers::{TestApp, assert_error, send};

both_backends!(
    every_search_control_is_validated,
    unknown_parameters_and_properties_are_named,
    wrong_method_is_405_with_allow,
    request_ids_are_echoed_or_assigned,
    openapi_document_is_3_1_and_lists_what_exists,
    openapi_references_resolve_and_bodies_are_closed,
    search_envelope_pages_and_sorts,
    health_and_metrics,
    end_user_crud,
    bad_json_is_invalid_json,
);

async fn every_search_control_is_validated(app: TestApp) {
    let acct = app.account().await;
    let cases = [
        ("sort=size", "sort"),
        ("order=up", "order"),
        ("offset=-1", "offset"),
        ("offset=x", "offset"),
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=1.5", "limit"),
        ("name=123456789012345678901234567890123", "name"),
    ];
    for (q, param) in cases {
        let (status, body) =
            send(app.req(&acct, Method::GET, &format!("/v2.0/end-users?{q}"))).await;
        let params = assert_error(status, &body, 400, "validation_error");
        assert_eq!(params, [param], "{q}: {body}");
    }
    // Several at once are all named.
    let (status, body) = send(app.req(
        &acct,
        Method::GET,
        "/v2.0/end-users?limit=0&order=x&offset=-3",
    ))
    .await;
    let mut params = assert_error(status, &body, 400, "validation_error");
    params.sort();
    assert_eq!(params, ["limit", "offset", "order"]);
    for ok in [
        "limit=1",
        "limit=100",
        "offset=0",
        "sort=name&order=asc",
        "sort=created",
        "sort=updated&order=desc",
    ] {
        let (status, body) =
            send(app.req(&acct, Method::GET, &format!("/v2.0/end-users?{ok}"))).await;
        assert_eq!(status, 200, "{ok}: {body}");
    }
}

async fn unknown_parameters_and_properties_are_named(app: TestApp) {
    let acct = app.account().await;
    let (status, body) = send(app.req(&acct, Method::GET, "/v2.0/end-users?colour=red")).await;
    assert_eq!(
        assert_error(status, &body, 400, "validation_error"),
        ["colour"]
    );
    let (status, body) = send(app.req(&acct, Method::GET, "/v2.0/ping?x=1")).await;
    assert_eq!(
        assert_error(status, &body, 400, "validation_error"),
        ["x"],
        "ping takes no parameters, like every operation refuses unknown ones"
    );
    let (status, body) = send(
        app.req(&acct, Method::POST, "/v2.0/end-users")
            .json(&json!({"name": "A", "age": 3})),
    )
    .await;
    assert_eq!(
        assert_error(status, &body, 400, "validation_error"),
        ["age"]
    );
    let (status, body) = send(
        app.req(&acct, Method::POST, "/v2.0/end-users")
            .json(&json!({})),
    )
    .await;
    assert_eq!(
        assert_error(status, &body, 400, "validation_error"),
        ["name"]
    );
    let (status, body) = send(
        app.req(&acct, Method::POST, "/v2.0/end-users")
            .json(&json!({"name": ""})),
    )
    .await;
    assert_eq!(
        assert_error(status, &body, 400, "validation_error"),
        ["name"]
    );
    let long = "x".repeat(65);
    let (status, body) = send(
        app.req(&acct, Method::POST, "/v2.0/end-users")
            .json(&json!({"name": long})),
    )
    .await;
    assert_eq!(
        assert_error(status, &body, 400, "validation_error"),
        ["name"]
    );
    // Nothing was stored by the refused requests.
    let (_, list) = send(app.req(&acct, Method::GET, "/v2.0/end-users")).await;
    assert_eq!(list["total"], 0);
}

async fn wrong_method_is_405_with_allow(app: TestApp) {
    let acct = app.account().await;
    let resp = app
        .req(&acct, Method::DELETE, "/v2.0/ping")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 405);
    let allow = resp
        .headers()
        .get("allow")
        .expect("Allow header")
        .to_str()
        .unwrap()
        .to_owned();
    assert!(allow.contains("GET"), "{allow}");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["code"], "method_not_allowed");
    let resp = app
        .req(&acct, Method::PUT, "/v2.0/end-users")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 405);
    let allow = resp
        .headers()
        .get("allow")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert!(allow.contains("GET") && allow.contains("POST"), "{allow}");
    // An unknown path is 404 in the same shape.
    let (status, body) = send(app.req(&acct, Method::GET, "/v2.0/nothing-here")).await;
    assert_error(status, &body, 404, "not_found");
}

async fn request_ids_are_echoed_or_assigned(app: TestApp) {
    let acct = app.account().await;
    let resp = app
        .req(&acct, Method::GET, "/v2.0/ping")
        .header("x-request-id", "abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["x-request-id"], "abc-123");
    let resp = app.anon(Method::GET, "/v2.0/ping").send().await.unwrap();
    assert_eq!(resp.status(), 401);
    let id = resp.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert!(id.len() >= 8);
    let resp = app.anon(Method::GET, "/nowhere").send().await.unwrap();
    assert!(resp.headers().contains_key("x-request-id"));
}

async fn openapi_document_is_3_1_and_lists_what_exists(app: TestApp) {
    let (status, doc) = send(app.anon(Method::GET, "/v2.0/openapi.json")).await;
    assert_eq!(status, 200);
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    let paths = doc["paths"].as_object().unwrap();
    for p in ["/ping", "/end-users", "/end-users/{sid}", "/billing/credit"] {
        assert!(paths.contains_key(p), "missing {p}");
    }
    assert_eq!(
        doc["paths"]["/ping"]["get"]["responses"]["401"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/ErrorBody"
    );
    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(schemes["ApiKeyAuth"]["name"], "x-api-key");
    assert_eq!(schemes["BasicAuth"]["scheme"], "basic");
}

/// Every `$ref` of `value`, with where it was found.
fn refs(value: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push((at.to_owned(), r.clone())),
                    _ => refs(v, &format!("{at}/{k}"), out),
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                refs(v, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

async fn openapi_references_resolve_and_bodies_are_closed(app: TestApp) {
    let (status, doc) = send(app.anon(Method::GET, "/v2.0/openapi.json")).await;
    assert_eq!(status, 200);
    let mut found = Vec::new();
    refs(&doc, "#", &mut found);
    assert!(found.len() > 50, "{} references", found.len());
    let unresolved: Vec<_> = found
        .iter()
        .filter(|(_, r)| {
            // A JSON pointer into the document itself.
            let Some(pointer) = r.strip_prefix('#') else {
                return true;
            };
            doc.pointer(pointer).is_none()
        })
        .collect();
    assert!(
        unresolved.is_empty(),
        "unresolved references: {unresolved:?}"
    );
    // What the search controls accept, as the server checks it.
    let params = doc["paths"]["/end-users"]["get"]["parameters"]
        .as_array()
        .unwrap();
    let offset = params.iter().find(|p| p["name"] == "offset").unwrap();
    assert_eq!(offset["schema"]["maximum"], 1_000_000_000);
    let order = params.iter().find(|p| p["name"] == "order").unwrap();
    let order_ref = order["schema"]["$ref"].as_str().unwrap();
    assert_eq!(
        doc.pointer(&order_ref[1..]).unwrap()["enum"],
        json!(["asc", "desc"])
    );
    // Words the code lists reach the document.
    let types = doc["paths"]["/numbers/store"]["post"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "type")
        .unwrap();
    assert_eq!(types["required"], true);
    assert!(
        types["schema"]["enum"]
            .as_array()
            .unwrap()
            .contains(&json!("mobile"))
    );
    // Unknown properties are refused, so request bodies are closed.
    assert_eq!(
        doc["components"]["schemas"]["UpdateBody"]["additionalProperties"],
        false
    );
    assert_eq!(
        doc["components"]["schemas"]["SigningOptions"]["additionalProperties"],
        false
    );
}

async fn search_envelope_pages_and_sorts(app: TestApp) {
    let acct = app.account().await;
    for name in ["carol", "alice", "bob"] {
        app.clock.advance_ms(1000);
        let (status, _) = send(
            app.req(&acct, Method::POST, "/v2.0/end-users")
                .json(&json!({"name": name})),
        )
        .await;
        assert_eq!(status, 201);
    }
    let names = |v: &Value| {
        v["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["name"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let (_, page) = send(app.req(&acct, Method::GET, "/v2.0/end-users?limit=2")).await;
    assert_eq!(page["offset"], 0);
    assert_eq!(page["total"], 3);
    assert_eq!(page["hasMore"], true);
    assert_eq!(
        names(&page),
        ["bob", "alice"],
        "default sort is updated, newest first"
    );
    let (_, page) = send(app.req(&acct, Method::GET, "/v2.0/end-users?limit=2&offset=2")).await;
    assert_eq!(page["hasMore"], false);
    assert_eq!(names(&page), ["carol"]);
    let (_, page) = send(app.req(&acct, Method::GET, "/v2.0/end-users?sort=name&order=asc")).await;
    assert_eq!(names(&page), ["alice", "bob", "carol"]);
    let (_, page) = send(app.req(&acct, Method::GET, "/v2.0/end-users?name=O")).await;
    assert_eq!(names(&page), ["bob", "carol"], "partial, case-insensitive");
    let (_, page) = send(app.req(&acct, Method::GET, "/v2.0/end-users?name=%25")).await;
    assert_eq!(page["total"], 0, "LIKE wildcards are literal");
    let (_, page) = send(app.req(&acct, Method::GET, "/v2.0/end-users?offset=50")).await;
    assert_eq!(page["total"], 3);
    assert_eq!(page["hits"], json!([]));
}

async fn health_and_metrics(app: TestApp) {
    let (status, _) = send(app.anon(Method::GET, "/livez")).await;
    assert_eq!(status, 200);
    let (status, body) = send(app.anon(Method::GET, "/readyz")).await;
    assert_eq!(status, 200, "{body}");
    let acct = app.account().await;
    send(app.req(&acct, Method::GET, "/v2.0/ping")).await;
    let text = app
        .anon(Method::GET, "/metrics")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.contains(
            r#"dialtone_http_requests_total{route="/v2.0/ping",method="GET",status="200"} 1"#
        ),
        "{text}"
    );
    assert!(
        text.contains("dialtone_http_request_duration_seconds_bucket"),
        "{text}"
    );
}

async fn end_user_crud(app: TestApp) {
    let acct = app.account().await;
    let (status, created) = send(
        app.req(&acct, Method::POST, "/v2.0/end-users")
            .json(&json!({"name": "Ada"})),
    )
    .await;
    assert_eq!(status, 201);
    let sid = created["sid"].as_str().unwrap();
    assert_eq!(sid.len(), 8);
    assert!(
        sid.bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
    );
    assert_eq!(created["created"], "2025-06-01T12:00:00.000Z");
    app.clock.advance_ms(1500);
    let path = format!("/v2.0/end-users/{sid}");
    let (status, updated) = send(
        app.req(&acct, Method::PATCH, &path)
            .json(&json!({"name": "Ada L."})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(updated["name"], "Ada L.");
    assert_eq!(updated["updated"], "2025-06-01T12:00:01.500Z");
    assert_eq!(updated["created"], "2025-06-01T12:00:00.000Z");
    let (_, got) = send(app.req(&acct, Method::GET, &path)).await;
    assert_eq!(got, updated);
    let (status, _) = send(app.req(&acct, Method::DELETE, &path)).await;
    assert_eq!(status, 204);
    for m in [Method::GET, Method::DELETE] {
        let (status, body) = send(app.req(&acct, m, &path)).await;
        assert_error(status, &body, 404, "not_found");
    }
    let (status, body) = send(
        app.req(&acct, Method::PATCH, &path)
            .json(&json!({"name": "x"})),
    )
    .await;
    assert_error(status, &body, 404, "not_found");
    let (status, body) = send(app.req(&acct, Method::GET, "/v2.0/end-users/NOT-A-SID")).await;
    assert_error(status, &body, 404, "not_found");
}

async fn bad_json_is_invalid_json(app: TestApp) {
    let acct = app.account().await;
    for body in ["{", "[]", "\"x\"", ""] {
        let (status, resp) = send(
            app.req(&acct, Method::POST, "/v2.0/end-users")
                .header("content-type", "application/json")
                .body(body),
        )
        .await;
        assert_error(status, &resp, 400, "invalid_json");
    }
    let big = format!("{{\"name\":\"{}\"}}", "x".repeat(3 * 1024 * 1024));
    let (status, resp) = send(
        app.req(&acct, Method::POST, "/v2.0/end-users")
            .header("content-type", "application/json")
            .body(big),
    )
    .await;
    assert_error(status, &resp, 400, "validation_error");
}
