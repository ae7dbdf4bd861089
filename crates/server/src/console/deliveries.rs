//! Webhook deliveries in the console: a subscription's or an SMS's, newest first; one with
//! each try and the request that try sent (URL, headers with the signature, body, rebuilt
//! exactly as the deliverer builds them); and a redelivery on demand.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use dialtone_domain::Sid;
use dialtone_store::delivery_log::{self, DeliveriesOf, DeliveryRow};
use dialtone_store::webhooks;
use serde::Serialize;
use serde_json::{Value, json};

use super::lists::{Page, PageQuery, page};
use crate::error::{AppError, AppResult};
use crate::http::auth::Caller;
use crate::http::extract::QueryString;
use crate::state::AppState;
use crate::webhooks::delivery::envelope;
use crate::webhooks::signing::sign;

/// A delivery in a list.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DeliveryView {
    id: i64,
    endpoint: String,
    status: String,
    tries: i64,
    event_id: String,
    #[serde(rename = "type")]
    event_type: String,
    webhook: Option<String>,
    at: String,
}

impl From<DeliveryRow> for DeliveryView {
    fn from(d: DeliveryRow) -> Self {
        Self {
            id: d.id,
            endpoint: d.endpoint,
            status: d.status,
            tries: d.tries,
            event_id: d.event_id,
            event_type: d.event_type,
            webhook: d.hook_sid,
            at: d.created.to_rfc3339(),
        }
    }
}

async fn list(
    state: &AppState,
    account: i64,
    of: Of,
    q: PageQuery,
) -> AppResult<Json<Page<DeliveryView>>> {
    let keyset = q.keyset()?;
    let rows = state
        .store
        .read(move |c| {
            let of = match &of {
                Of::Webhook(sid) => {
                    let hook = webhooks::get(c, account, sid)?
                        .ok_or_else(|| AppError::not_found("webhook"))?;
                    DeliveriesOf::Webhook(hook.id)
                }
                Of::Sms(sid) => DeliveriesOf::Sms(sid.as_str()),
            };
            Ok::<_, AppError>(delivery_log::newest(c, account, of, &keyset)?)
        })
        .await?;
    Ok(Json(page(
        rows,
        keyset.limit,
        |d| d.id.to_string(),
        Into::into,
    )))
}

enum Of {
    Webhook(Sid),
    Sms(Sid),
}

fn sid(text: &str, what: &str) -> AppResult<Sid> {
    Sid::parse(text).ok_or_else(|| AppError::not_found(what))
}

/// `GET /console/api/webhooks/{sid}/deliveries`.
pub(super) async fn of_webhook(
    State(state): State<AppState>,
    caller: Caller,
    Path(hook): Path<String>,
    QueryString(q): QueryString<PageQuery>,
) -> AppResult<Json<Page<DeliveryView>>> {
    let of = Of::Webhook(sid(&hook, "webhook")?);
    list(&state, caller.account.id, of, q).await
}

/// `GET /console/api/sms/{sid}/deliveries`: the deliveries of the SMS's events.
pub(super) async fn of_sms(
    State(state): State<AppState>,
    caller: Caller,
    Path(sms): Path<String>,
    QueryString(q): QueryString<PageQuery>,
) -> AppResult<Json<Page<DeliveryView>>> {
    let of = Of::Sms(sid(&sms, "SMS")?);
    list(&state, caller.account.id, of, q).await
}

/// `GET /console/api/deliveries/{id}`: a delivery, its tries and each try's request.
pub(super) async fn one(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> AppResult<Json<Value>> {
    let account = caller.account.id;
    let (delivery, mut due, tries) = state
        .store
        .read(move |c| delivery_log::one(c, account, id))
        .await?
        .ok_or_else(|| AppError::not_found("delivery"))?;
    let brand = &state.config.header_brand;
    let mut rendered = Vec::with_capacity(tries.len().max(1));
    // The next try's request too, while one is still to come.
    let numbers: Vec<i64> = tries
        .iter()
        .map(|t| t.try_number)
        .chain((delivery.status == "pending").then_some(delivery.tries))
        .collect();
    for n in numbers {
        due.try_number = n;
        let body = envelope(&due);
        let mut headers = vec![
            json!(["content-type", "application/json"]),
            json!([format!("X-{brand}-EventId"), due.event_id]),
        ];
        if let Some(secret) = &due.secret {
            headers.push(json!([
                format!("X-{brand}-HmacSignature"),
                sign(&due.algo, secret, body.as_bytes())
            ]));
        }
        let answer = tries.iter().find(|t| t.try_number == n).map(|t| {
            json!({
                "statusCode": t.status_code,
                "durationMs": t.duration_ms,
                "error": t.error,
                "at": t.at.to_rfc3339(),
            })
        });
        rendered.push(json!({
            "try": n,
            "request": {"method": "POST", "url": due.endpoint, "headers": headers, "body": body},
            "answer": answer,
        }));
    }
    Ok(Json(json!({
        "delivery": DeliveryView::from(delivery),
        "tries": rendered,
    })))
}

/// `POST /console/api/deliveries/{id}/redeliver`: a finished delivery is tried again now
/// (202); 409 while it is still pending.
pub(super) async fn redeliver(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> AppResult<StatusCode> {
    let (account, now) = (caller.account.id, state.clock.now());
    let done = state
        .store
        .write(move |c| {
            if delivery_log::one(c, account, id)?.is_none() {
                return Err(AppError::not_found("delivery"));
            }
            Ok(delivery_log::redeliver(c, account, id, now)?)
        })
        .await?;
    if !done {
        return Err(AppError::invalid(
            "id",
            "the delivery is still pending: it will be tried",
        ));
    }
    state.delivery_wake.notify_one();
    Ok(StatusCode::ACCEPTED)
}
