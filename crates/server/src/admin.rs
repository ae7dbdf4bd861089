//! The operator API under `/admin`, guarded by `Authorization: Bearer ADMIN_TOKEN`. Without a
//! configured token the whole prefix answers 404, as if it did not exist.

use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use dialtone_domain::account::{BillingMode, is_currency};
use dialtone_domain::{Money, Sid};
use dialtone_store::accounts::{self, Account};
use serde::{Deserialize, Serialize};

use crate::error::{AppError, AppResult};
use crate::http::extract::{Checks, JsonBody, json_body};
use crate::provisioning::{self, AccountRequest, ProvisionError};
use crate::state::AppState;

/// The `/admin` routes (mounted only when an admin token is configured).
pub(crate) fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/admin/accounts", post(create_account).get(list_accounts))
        .route("/admin/accounts/{sid}/api-keys", post(create_key))
        .route(
            "/admin/accounts/{sid}/api-keys/{key_id}",
            delete(revoke_key),
        )
        .route(
            "/admin/accounts/{sid}",
            get(get_account).patch(change_account),
        )
        .route("/admin/accounts/{sid}/credit", post(top_up))
        .route("/admin/inventory", post(import_inventory))
        .route("/admin/rates", post(import_rates))
        .route(
            "/admin/smpp",
            get(crate::admin_smpp::list).post(crate::admin_smpp::add),
        )
        .route("/admin/smpp/waiting", get(crate::admin_smpp::waiting))
        .route(
            "/admin/smpp/waiting/fail",
            post(crate::admin_smpp::fail_waiting),
        )
        .route("/admin/smpp/receipts", get(crate::admin_smpp::receipts))
        .route("/admin/smpp/{name}", delete(crate::admin_smpp::remove))
        .route(
            "/admin/sip",
            get(crate::admin_sip::list).post(crate::admin_sip::add),
        )
        .route("/admin/sip/{name}", delete(crate::admin_sip::remove))
        .route(
            "/admin/accounts/{sid}/senders",
            post(approve_sender).get(list_senders),
        )
        .route_layer(axum::middleware::from_fn_with_state(state, require_admin))
}

async fn require_admin(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let Some(expected) = state.config.admin_token.as_deref() else {
        return AppError::not_found("path").into_response();
    };
    let bearer = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let Some(presented) = bearer else {
        return match operator_session(&state, req.headers()).await {
            Ok(()) => next.run(req).await,
            Err(e) => e.into_response(),
        };
    };
    if !crate::http::guard::same_secret(presented, expected) {
        return AppError::auth("missing or wrong admin token (Authorization: Bearer ADMIN_TOKEN)")
            .into_response();
    }
    next.run(req).await
}

/// The operator's console session (signed in with the admin token, its CSRF token echoed).
async fn operator_session(state: &AppState, headers: &axum::http::HeaderMap) -> AppResult<()> {
    use crate::http::console_session;
    use dialtone_store::console_sessions::SessionKind;
    let signed_in = console_session::find(state, headers)
        .await?
        .ok_or_else(|| {
            AppError::auth("missing or wrong admin token (Authorization: Bearer ADMIN_TOKEN)")
        })?;
    if signed_in.session.kind != SessionKind::Admin {
        return Err(AppError::auth(
            "an account's console session is not the operator's",
        ));
    }
    console_session::check_csrf(headers, &signed_in)
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateAccountBody {
    name: String,
    parent: Option<String>,
    credit: Option<String>,
    currency: Option<String>,
    billing_mode: Option<String>,
}

/// An account as the operator sees it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AccountView {
    sid: String,
    name: String,
    parent: Option<String>,
    login: String,
    status: &'static str,
    currency: String,
    billing_mode: &'static str,
    credit: String,
    warning_level: String,
    shutdown_level: String,
    rate_limit: Option<i64>,
    rate_burst: Option<i64>,
    created: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    password: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    api_key: Option<String>,
}

impl AccountView {
    /// The operator's view of an account, without secrets.
    pub fn of(a: &Account) -> Self {
        Self {
            sid: a.sid.to_string(),
            name: a.name.clone(),
            parent: a.parent_sid.as_ref().map(ToString::to_string),
            login: a.login.clone(),
            status: a.status.as_str(),
            currency: a.currency.clone(),
            billing_mode: a.billing_mode.as_str(),
            credit: a.credit.to_cents_string(),
            warning_level: a.warning_level.to_cents_string(),
            shutdown_level: a.shutdown_level.to_cents_string(),
            rate_limit: a.rate_limit,
            rate_burst: a.rate_burst,
            created: a.created.to_rfc3339(),
            password: None,
            api_key: None,
        }
    }
}

fn provision_error(e: ProvisionError) -> AppError {
    match e {
        ProvisionError::ParentNotFound(_) => AppError::invalid("parent", "no such account"),
        ProvisionError::ParentIsSub(_) => {
            AppError::invalid("parent", "a sub account cannot have sub accounts")
        }
        ProvisionError::LoginTaken(_) => AppError::invalid("login", "is taken"),
        ProvisionError::AccountNotFound(_) => AppError::not_found("account"),
        ProvisionError::Db(e) => AppError::from(e),
    }
}

async fn create_account(
    State(state): State<AppState>,
    body: Bytes,
) -> AppResult<(StatusCode, Json<AccountView>)> {
    let body: CreateAccountBody = json_body(&body)?;
    let mut checks = Checks::default();
    let name = checks
        .text("name", Some(&body.name), 1, 64)
        .map(str::to_owned);
    let parent = checks.sid("parent", body.parent.as_deref());
    let credit = match body.credit.as_deref() {
        Some(c) => match Money::parse_cents(c) {
            Ok(m) if m >= Money::ZERO => m,
            _ => {
                checks.fail(
                    "credit",
                    "must be a non-negative amount in cents, such as \"100000.00\"",
                );
                Money::ZERO
            }
        },
        None => Money::ZERO,
    };
    if let Some(c) = &body.currency
        && !is_currency(c)
    {
        checks.fail("currency", "must be an ISO 4217 code such as EUR");
    }
    let billing_mode = checks
        .choice(
            "billingMode",
            body.billing_mode.as_deref(),
            &[
                ("prepaid", BillingMode::Prepaid),
                ("postpaid", BillingMode::Postpaid),
            ],
        )
        .unwrap_or(BillingMode::Prepaid);
    checks.finish()?;
    let request = AccountRequest {
        name: name.unwrap_or_default(),
        parent,
        credit,
        currency: body.currency,
        login: None,
        billing_mode,
        levels: (state.config.credit_warning, state.config.credit_shutdown),
    };
    let made = provisioning::create_account(&state.store, state.clock.as_ref(), request)
        .await
        .map_err(provision_error)?;
    let mut view = AccountView::of(&made.account);
    view.password = Some(made.password);
    view.api_key = Some(made.api_key);
    Ok((StatusCode::CREATED, Json(view)))
}

async fn list_accounts(State(state): State<AppState>) -> AppResult<Json<Vec<AccountView>>> {
    let all = state.store.read(accounts::list).await?;
    Ok(Json(all.iter().map(AccountView::of).collect()))
}

fn path_sid(sid: &str) -> AppResult<Sid> {
    Sid::parse(sid)
        .filter(|s| s.as_str() == sid)
        .ok_or_else(|| AppError::not_found("account"))
}

async fn get_account(
    State(state): State<AppState>,
    Path(sid): Path<String>,
) -> AppResult<Json<AccountView>> {
    let sid = path_sid(&sid)?;
    let account = state
        .store
        .read(move |c| accounts::by_sid(c, &sid))
        .await?
        .ok_or_else(|| AppError::not_found("account"))?;
    Ok(Json(AccountView::of(&account)))
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct NewKey {
    api_key: String,
    key_id: String,
}

async fn create_key(
    State(state): State<AppState>,
    Path(sid): Path<String>,
) -> AppResult<(StatusCode, Json<NewKey>)> {
    let sid = path_sid(&sid)?;
    let key = provisioning::create_key(&state.store, state.clock.as_ref(), sid)
        .await
        .map_err(provision_error)?;
    let key_id = dialtone_domain::credentials::api_key_id(&key);
    Ok((
        StatusCode::CREATED,
        Json(NewKey {
            api_key: key,
            key_id,
        }),
    ))
}

async fn revoke_key(
    State(state): State<AppState>,
    Path((sid, key_id)): Path<(String, String)>,
) -> AppResult<StatusCode> {
    let sid = path_sid(&sid)?;
    let revoked = provisioning::revoke_key(&state.store, state.clock.as_ref(), sid, key_id)
        .await
        .map_err(provision_error)?;
    if revoked {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(AppError::not_found("API key"))
    }
}

#[derive(Debug, Serialize)]
struct Imported {
    added: u64,
    skipped: u64,
}

/// `POST /admin/inventory`: a CSV of ranges (country,type,class,prefix,area,first,last,
/// setupPrice,monthlyPrice). Every line is checked before anything is stored.
async fn import_inventory(State(state): State<AppState>, body: Bytes) -> AppResult<Json<Imported>> {
    let text = std::str::from_utf8(&body)
        .map_err(|_| AppError::invalid("body", "must be UTF-8 CSV text"))?;
    let ranges = crate::numbers::inventory::parse(text).map_err(|errors| {
        AppError::validation(
            errors
                .into_iter()
                .map(|e| crate::error::Detail::new(format!("line {}", e.line), e.message))
                .collect(),
        )
    })?;
    if ranges.is_empty() {
        return Err(AppError::invalid("body", "no ranges in the file"));
    }
    let count = crate::numbers::inventory::import(&state.store, ranges).await?;
    Ok(Json(Imported {
        added: count.added,
        skipped: count.skipped,
    }))
}

/// `POST /admin/rates`: a CSV of rates (label,country,type,prefix,smsPrice,callPricePerMinute,
/// numberMonthlyPrice); prefixes already priced are repriced.
async fn import_rates(
    State(state): State<AppState>,
    body: Bytes,
) -> AppResult<Json<serde_json::Value>> {
    let text = std::str::from_utf8(&body)
        .map_err(|_| AppError::invalid("body", "must be UTF-8 CSV text"))?;
    let list = crate::billing::rates::parse(text).map_err(|errors| {
        AppError::validation(
            errors
                .into_iter()
                .map(|e| crate::error::Detail::new(format!("line {}", e.line), e.message))
                .collect(),
        )
    })?;
    if list.is_empty() {
        return Err(AppError::invalid("body", "no rates in the file"));
    }
    let n = crate::billing::rates::import(&state.store, list).await?;
    Ok(Json(serde_json::json!({ "imported": n })))
}

#[derive(Debug, Deserialize)]
struct SenderBody {
    sender: String,
}

/// `POST /admin/accounts/{sid}/senders {sender}`: approves an alphanumeric sender.
async fn approve_sender(
    State(state): State<AppState>,
    Path(sid): Path<String>,
    JsonBody(b): JsonBody<SenderBody>,
) -> AppResult<StatusCode> {
    let sid = path_sid(&sid)?;
    match dialtone_domain::sms::Sender::parse(&b.sender) {
        Ok(dialtone_domain::sms::Sender::Alphanumeric(name)) => {
            let now = state.clock.now();
            state
                .store
                .write(move |c| {
                    let account =
                        accounts::by_sid(c, &sid)?.ok_or_else(|| AppError::not_found("account"))?;
                    dialtone_store::sms::approve_sender(c, account.id, &name, now)?;
                    Ok::<_, AppError>(())
                })
                .await?;
            Ok(StatusCode::NO_CONTENT)
        }
        _ => Err(AppError::invalid(
            "sender",
            "must be 1 to 11 letters, digits, spaces, dashes or underscores with at least one letter",
        )),
    }
}

/// `GET /admin/accounts/{sid}/senders`.
async fn list_senders(
    State(state): State<AppState>,
    Path(sid): Path<String>,
) -> AppResult<Json<Vec<String>>> {
    let sid = path_sid(&sid)?;
    let list = state
        .store
        .read(move |c| {
            let account =
                accounts::by_sid(c, &sid)?.ok_or_else(|| AppError::not_found("account"))?;
            Ok::<_, AppError>(dialtone_store::sms::approved_senders(c, account.id)?)
        })
        .await?;
    Ok(Json(list))
}

#[derive(Debug, Deserialize)]
struct TopUpBody {
    amount: String,
}

/// `POST /admin/accounts/{sid}/credit {amount}`: a top-up; emits `billing.credit`.
async fn top_up(
    State(state): State<AppState>,
    Path(sid): Path<String>,
    JsonBody(b): JsonBody<TopUpBody>,
) -> AppResult<Json<serde_json::Value>> {
    let sid = path_sid(&sid)?;
    let amount =
        Money::parse_cents(&b.amount).map_err(|e| AppError::invalid("amount", e.to_string()))?;
    let balance = crate::billing::top_up(&state, sid, amount).await?;
    Ok(Json(
        serde_json::json!({ "credit": balance.to_cents_string() }),
    ))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ChangeBody {
    status: Option<String>,
    warning_level: Option<String>,
    shutdown_level: Option<String>,
    #[serde(default, deserialize_with = "crate::http::extract::nullable")]
    rate_limit: Option<Option<i64>>,
    #[serde(default, deserialize_with = "crate::http::extract::nullable")]
    rate_burst: Option<Option<i64>>,
}

/// `PATCH /admin/accounts/{sid} {status?, warningLevel?, shutdownLevel?, rateLimit?,
/// rateBurst?}` (`rateLimit`/`rateBurst` null: back to the node's defaults; 0: no limit).
async fn change_account(
    State(state): State<AppState>,
    Path(sid): Path<String>,
    JsonBody(b): JsonBody<ChangeBody>,
) -> AppResult<Json<AccountView>> {
    let sid = path_sid(&sid)?;
    let mut checks = Checks::default();
    let suspended = checks.choice(
        "status",
        b.status.as_deref(),
        &[("active", false), ("suspended", true)],
    );
    let mut level = |name: &str, v: Option<&String>| {
        v.and_then(|v| match Money::parse_cents(v) {
            Ok(m) => Some(m),
            Err(e) => {
                checks.fail(name, e.to_string());
                None
            }
        })
    };
    let warning_level = level("warningLevel", b.warning_level.as_ref());
    let shutdown_level = level("shutdownLevel", b.shutdown_level.as_ref());
    for (name, v) in [("rateLimit", b.rate_limit), ("rateBurst", b.rate_burst)] {
        if let Some(Some(n)) = v
            && !(0..=1_000_000).contains(&n)
        {
            checks.fail(name, "must be an integer from 0 to 1000000, or null");
        }
    }
    checks.finish()?;
    let change = accounts::AccountChange {
        suspended,
        warning_level,
        shutdown_level,
        rate_limit: b.rate_limit,
        rate_burst: b.rate_burst,
    };
    let now = state.clock.now();
    let account = state
        .store
        .write(move |c| {
            let a = accounts::by_sid(c, &sid)?.ok_or_else(|| AppError::not_found("account"))?;
            accounts::change(c, a.id, &change, now)?;
            Ok::<_, AppError>(accounts::by_id(c, a.id)?.unwrap_or(a))
        })
        .await?;
    Ok(Json(AccountView::of(&account)))
}
