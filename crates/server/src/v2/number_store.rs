//! The number store: countries, types and prefixes on offer; reservations (reserve, view,
//! buy, cancel).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use dialtone_domain::country;
use dialtone_domain::number::{NumberClass, NumberType, is_store_area, is_store_prefix};
use dialtone_store::numbers::inventory;
use dialtone_store::numbers::reservations::{Reservation, Wanted};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::numbers::NumberView;
use crate::error::{AppError, AppResult};
use crate::http::auth::Caller;
use crate::http::extract::{Checks, QueryString};
use crate::numbers;
use crate::state::AppState;

/// A country on offer.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StoreCountry {
    /// ISO 3166 alpha-2 code.
    #[schema(example = "GB")]
    pub code: String,
    /// English name.
    pub name: String,
}

/// A number type on offer in a country, with its classes.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StoreType {
    /// Line type.
    #[serde(rename = "type")]
    pub number_type: String,
    /// Classes offered.
    pub classes: Vec<String>,
}

/// A prefix on offer.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StorePrefix {
    /// E.164 prefix.
    #[schema(example = "+4420")]
    pub prefix: String,
    /// Area name.
    pub area: String,
    /// Free numbers under it.
    pub available: i64,
}

/// One number of a reservation.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ReservationItem {
    /// The number.
    pub e164: String,
}

/// What the reserved numbers cost.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ReservationCost {
    /// One-off price of all the numbers, in cents.
    pub setup: String,
    /// Monthly price of all the numbers, in cents.
    pub monthly: String,
    /// ISO 4217 code.
    pub currency: String,
}

/// A number store reservation.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ReservationView {
    /// Names the reservation (at least 40 URL-safe characters).
    pub token: String,
    /// `reserved`, `bought`, `cancelled` or `expired`.
    pub status: String,
    /// End of the hold (5 minutes after reserving).
    pub expires: String,
    /// Country.
    pub country: String,
    /// Line type.
    #[serde(rename = "type")]
    pub number_type: String,
    /// Class.
    pub class: String,
    /// The numbers held.
    pub items: Vec<ReservationItem>,
    /// Their price.
    pub cost: ReservationCost,
}

fn view(r: Reservation, currency: &str) -> ReservationView {
    ReservationView {
        token: r.token,
        status: r.status,
        expires: r.expires.to_rfc3339(),
        country: r.country,
        number_type: r.number_type,
        class: r.class,
        items: r
            .items
            .into_iter()
            .map(|e164| ReservationItem { e164 })
            .collect(),
        cost: ReservationCost {
            setup: r.setup_total.to_cents_string(),
            monthly: r.monthly_total.to_cents_string(),
            currency: currency.to_owned(),
        },
    }
}

/// What buying gave.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct BuyResult {
    /// The numbers now owned.
    pub numbers: Vec<NumberView>,
    /// What was debited (setup and first month), in cents.
    pub debit: String,
}

/// `country` alone.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct CountryQuery {
    /// ISO 3166 alpha-2 country code.
    #[param(required = true, pattern = "^[A-Z]{2}$")]
    country: Option<String>,
}

/// `country` and `type`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct CountryTypeQuery {
    /// ISO 3166 alpha-2 country code.
    #[param(required = true, pattern = "^[A-Z]{2}$")]
    country: Option<String>,
    /// Line type.
    #[serde(rename = "type")]
    #[param(rename = "type", required = true)]
    number_type: Option<String>,
}

/// What to reserve.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ReserveQuery {
    /// ISO 3166 alpha-2 country code.
    #[param(required = true, pattern = "^[A-Z]{2}$")]
    country: Option<String>,
    /// Line type.
    #[serde(rename = "type")]
    #[param(rename = "type", required = true)]
    number_type: Option<String>,
    /// How many numbers, 1 to 100 (default 1).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    quantity: Option<String>,
    /// `classic` (default) or `gold`.
    class: Option<String>,
    /// Only numbers starting with this prefix.
    #[param(pattern = r"^\+[1-9][0-9]{0,8}$")]
    prefix: Option<String>,
    /// Only numbers of this area: 1 to 32 letters, digits, spaces, apostrophes or hyphens.
    #[param(pattern = "^[A-Za-z0-9 '-]{1,32}$")]
    area: Option<String>,
}

fn country_param(checks: &mut Checks, value: Option<&str>) -> Option<String> {
    let v = checks.required("country", value)?;
    if country::is_code(v) {
        Some(v.to_owned())
    } else {
        checks.fail("country", "must be an ISO 3166 alpha-2 code such as GB");
        None
    }
}

fn type_param(checks: &mut Checks, value: Option<&str>) -> Option<NumberType> {
    let types: Vec<_> = NumberType::ALL.iter().map(|t| (t.as_str(), *t)).collect();
    let value = checks.required("type", value);
    checks.choice("type", value, &types)
}

/// Countries with numbers on offer.
#[utoipa::path(get, path = "/numbers/store/countries", tag = "Phone number store",
    responses((status = 200, description = "countries", body = Vec<StoreCountry>)))]
pub(crate) async fn countries(
    State(state): State<AppState>,
    _caller: Caller,
) -> AppResult<Json<Vec<StoreCountry>>> {
    let codes = state.store.read(inventory::countries).await?;
    Ok(Json(
        codes
            .into_iter()
            .map(|code| StoreCountry {
                name: country::name(&code).to_owned(),
                code,
            })
            .collect(),
    ))
}

/// Number types on offer in a country.
#[utoipa::path(get, path = "/numbers/store/types", tag = "Phone number store", params(CountryQuery),
    responses((status = 200, description = "types", body = Vec<StoreType>)))]
pub(crate) async fn types(
    State(state): State<AppState>,
    _caller: Caller,
    QueryString(q): QueryString<CountryQuery>,
) -> AppResult<Json<Vec<StoreType>>> {
    let mut checks = Checks::default();
    let country = country_param(&mut checks, q.country.as_deref());
    checks.finish()?;
    let country = country.unwrap_or_default();
    let pairs = state
        .store
        .read(move |c| inventory::types(c, &country))
        .await?;
    let mut out: Vec<StoreType> = Vec::new();
    for (t, class) in pairs {
        match out.last_mut() {
            Some(last) if last.number_type == t => last.classes.push(class),
            _ => out.push(StoreType {
                number_type: t,
                classes: vec![class],
            }),
        }
    }
    Ok(Json(out))
}

/// Prefixes on offer for a country and type, with free numbers.
#[utoipa::path(get, path = "/numbers/store/prefixes", tag = "Phone number store", params(CountryTypeQuery),
    responses((status = 200, description = "prefixes", body = Vec<StorePrefix>)))]
pub(crate) async fn prefixes(
    State(state): State<AppState>,
    _caller: Caller,
    QueryString(q): QueryString<CountryTypeQuery>,
) -> AppResult<Json<Vec<StorePrefix>>> {
    let mut checks = Checks::default();
    let country = country_param(&mut checks, q.country.as_deref());
    let number_type = type_param(&mut checks, q.number_type.as_deref());
    checks.finish()?;
    let (country, number_type) = (
        country.unwrap_or_default(),
        number_type.map_or("", |t| t.as_str()),
    );
    let rows = state
        .store
        .read(move |c| inventory::prefixes(c, &country, number_type))
        .await?;
    Ok(Json(
        rows.into_iter()
            .map(|p| StorePrefix {
                prefix: p.prefix,
                area: p.area,
                available: p.available,
            })
            .collect(),
    ))
}

/// Reserve numbers for 5 minutes (one reservation at a time).
#[utoipa::path(post, path = "/numbers/store", tag = "Phone number store", params(ReserveQuery),
    responses((status = 200, description = "the reservation", body = ReservationView)))]
pub(crate) async fn reserve(
    State(state): State<AppState>,
    caller: Caller,
    QueryString(q): QueryString<ReserveQuery>,
) -> AppResult<Json<ReservationView>> {
    let mut checks = Checks::default();
    let country = country_param(&mut checks, q.country.as_deref());
    let number_type = type_param(&mut checks, q.number_type.as_deref());
    let quantity = checks
        .int("quantity", q.quantity.as_deref(), 1, 100)
        .unwrap_or(1);
    let classes: Vec<_> = NumberClass::ALL.iter().map(|c| (c.as_str(), *c)).collect();
    let class = checks
        .choice("class", q.class.as_deref(), &classes)
        .unwrap_or(NumberClass::Classic);
    if let Some(p) = &q.prefix
        && !is_store_prefix(p)
    {
        checks.fail("prefix", r"must match ^\+[1-9][0-9]{0,8}$");
    }
    if let Some(a) = &q.area
        && (a.is_empty() || !is_store_area(a))
    {
        checks.fail(
            "area",
            "must be 1 to 32 letters, digits, spaces, apostrophes or hyphens",
        );
    }
    checks.finish()?;
    caller.ensure_may_spend()?;
    let wanted = Wanted {
        country: country.unwrap_or_default(),
        number_type: number_type.map_or("", |t| t.as_str()).to_owned(),
        class: class.as_str().to_owned(),
        prefix: q.prefix,
        area: q.area,
        quantity,
    };
    let r = numbers::reserve(&state, caller.account.id, wanted).await?;
    Ok(Json(view(r, &caller.account.currency)))
}

/// A token from a path: at least 40 URL-safe characters.
fn path_token(token: &str) -> AppResult<String> {
    let ok = token.len() >= 40
        && token.len() <= 128
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(token.to_owned())
    } else {
        Err(AppError::invalid(
            "token",
            "must be at least 40 URL-safe characters",
        ))
    }
}

/// A reservation and its status.
#[utoipa::path(get, path = "/numbers/store/{token}", tag = "Phone number store",
    params(("token" = String, Path, description = "reservation token (40 to 128 URL-safe characters)", pattern = "^[A-Za-z0-9_-]{40,128}$")),
    responses((status = 200, description = "the reservation", body = ReservationView)))]
pub(crate) async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(token): Path<String>,
) -> AppResult<Json<ReservationView>> {
    let token = path_token(&token)?;
    let r = numbers::reservation(&state, caller.account.id, token).await?;
    Ok(Json(view(r, &caller.account.currency)))
}

/// Buy the reserved numbers.
#[utoipa::path(post, path = "/numbers/store/{token}", tag = "Phone number store",
    params(("token" = String, Path, description = "reservation token (40 to 128 URL-safe characters)", pattern = "^[A-Za-z0-9_-]{40,128}$")),
    responses((status = 200, description = "bought", body = BuyResult)))]
pub(crate) async fn buy(
    State(state): State<AppState>,
    caller: Caller,
    Path(token): Path<String>,
) -> AppResult<Json<BuyResult>> {
    let token = path_token(&token)?;
    caller.ensure_may_spend()?;
    let (bought, debit) = numbers::buy(&state, caller.account.id, token).await?;
    Ok(Json(BuyResult {
        numbers: bought.iter().map(Into::into).collect(),
        debit: debit.to_cents_string(),
    }))
}

/// Cancel a reservation.
#[utoipa::path(delete, path = "/numbers/store/{token}", tag = "Phone number store",
    params(("token" = String, Path, description = "reservation token (40 to 128 URL-safe characters)", pattern = "^[A-Za-z0-9_-]{40,128}$")),
    responses((status = 204, description = "cancelled")))]
pub(crate) async fn cancel(
    State(state): State<AppState>,
    caller: Caller,
    Path(token): Path<String>,
) -> AppResult<StatusCode> {
    let token = path_token(&token)?;
    numbers::cancel(&state, caller.account.id, token).await?;
    Ok(StatusCode::NO_CONTENT)
}
