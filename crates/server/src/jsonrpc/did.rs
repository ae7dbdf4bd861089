//! `did.*`, `did/areacode.*` and `did/store.*`: numbers through the earlier interface, on the
//! same use cases as v2.0.

use dialtone_domain::Timestamp;
use dialtone_store::numbers::reservations::{Reservation, Wanted};
use dialtone_store::numbers::{inventory, owned};
use dialtone_store::search::Paging;
use serde_json::{Value, json};

use super::call::{Call, int_option};
use super::error::{RpcError, codes};
use crate::numbers::{self, legacy};

fn item(n: &str, hash: Option<String>) -> Value {
    json!({"hash": hash, "intl_number": n, "local_number": n.trim_start_matches('+')})
}

fn reservation(r: &Reservation, currency: &str) -> Value {
    json!({
        "token": r.token,
        "status": r.status.to_ascii_uppercase(),
        "expire": r.expires.to_legacy(),
        "items": r.items.iter().map(|e| item(e, None)).collect::<Vec<_>>(),
        "cost": {
            "quantity": r.items.len(),
            "amount_assignment": r.setup_total.to_cents_string(),
            "amount_per_month": r.monthly_total.to_cents_string(),
            "currency": currency,
        },
    })
}

/// `did.search [filters, options]` -> `{hits, total, offset, has_more}` of DID objects.
pub(super) async fn search(call: &Call<'_>) -> Result<Value, RpcError> {
    let options = call.param(1).clone();
    let offset = int_option(&options, "offset", 0, 1_000_000_000)?;
    let limit = int_option(&options, "limit", 10, 100)?.max(1);
    let paging = Paging {
        sort_column: "n.assigned",
        descending: true,
        offset,
        limit,
    };
    let account = call.caller.account.id;
    let (total, hits) = call
        .state
        .store
        .read(move |c| owned::search(c, account, &owned::OwnedFilter::default(), &paging))
        .await?;
    Ok(json!({
        "hits": hits.iter().map(legacy::did).collect::<Vec<_>>(),
        "total": total,
        "offset": offset,
        "has_more": offset + (hits.len() as i64) < total,
    }))
}

/// `did/areacode.countries []`.
pub(super) async fn countries(call: &Call<'_>) -> Result<Value, RpcError> {
    let codes = call.state.store.read(inventory::countries).await?;
    Ok(codes
        .iter()
        .map(|c| json!({"code": c, "name": dialtone_domain::country::name(c)}))
        .collect())
}

/// `did/areacode.types [country]`.
pub(super) async fn types(call: &Call<'_>) -> Result<Value, RpcError> {
    let country = call.string(0, "country")?;
    let pairs = call
        .state
        .store
        .read(move |c| inventory::types(c, &country))
        .await?;
    let mut seen: Vec<String> = pairs
        .into_iter()
        .map(|(t, _)| t.to_ascii_uppercase())
        .collect();
    seen.dedup();
    Ok(seen.into())
}

/// `did/areacode.get_list [country, type|null]`.
pub(super) async fn area_codes(call: &Call<'_>) -> Result<Value, RpcError> {
    let country = call.string(0, "country")?;
    let number_type = match call.param(1) {
        Value::Null => None,
        Value::String(t) => Some(t.to_ascii_lowercase()),
        _ => return Err(RpcError::invalid_param(1, "type must be a string or null")),
    };
    let list = call
        .state
        .store
        .read(move |c| inventory::area_codes(c, &country, number_type.as_deref()))
        .await?;
    Ok(list
        .iter()
        .map(|a| json!({"id": a.id, "country_code": a.country, "type": a.number_type.to_ascii_uppercase(), "prefix": a.prefix, "name": a.area}))
        .collect())
}

/// `did/store.reserve [areaCodeId, class, quantity, mode]`.
pub(super) async fn reserve(call: &Call<'_>) -> Result<Value, RpcError> {
    let id = call.int(0, "areaCodeId")?;
    let class = call.string(1, "class")?.to_ascii_lowercase();
    if dialtone_domain::number::NumberClass::parse(&class).is_none() {
        return Err(RpcError::invalid_param(1, "class must be CLASSIC or GOLD"));
    }
    let quantity = Some(call.int(2, "quantity")?)
        .filter(|q| (1..=100).contains(q))
        .ok_or_else(|| RpcError::invalid_param(2, "quantity must be 1 to 100"))?;
    if call.caller.account.status == dialtone_domain::account::AccountStatus::Suspended {
        return Err(RpcError::new(
            codes::NOT_ALLOWED,
            "the account is suspended",
        ));
    }
    let area = call
        .state
        .store
        .read(move |c| inventory::area_code(c, id))
        .await?
        .ok_or_else(|| RpcError::new(codes::NOT_FOUND, "area code not found"))?;
    let wanted = Wanted {
        country: area.country,
        number_type: area.number_type,
        class,
        prefix: Some(area.prefix),
        area: Some(area.area).filter(|a| !a.is_empty()),
        quantity,
    };
    let r = numbers::reserve(call.state, call.caller.account.id, wanted).await?;
    Ok(reservation(&r, &call.caller.account.currency))
}

/// `did/store.view_order [token]`.
pub(super) async fn view_order(call: &Call<'_>) -> Result<Value, RpcError> {
    let token = call.string(0, "token")?;
    let r = numbers::reservation(call.state, call.caller.account.id, token).await?;
    Ok(reservation(&r, &call.caller.account.currency))
}

/// `did/store.buy_order [token]`.
pub(super) async fn buy_order(call: &Call<'_>) -> Result<Value, RpcError> {
    let token = call.string(0, "token")?;
    let (bought, debit) = numbers::buy(call.state, call.caller.account.id, token).await?;
    Ok(json!({
        "success": bought.iter().map(|n| item(&n.e164, Some(legacy::did_hash(n.id)))).collect::<Vec<_>>(),
        "customer_debit": debit.to_cents_string(),
        "date": Timestamp::to_legacy(call.state.clock.now()),
    }))
}

/// `did/store.cancel_order [token]`.
pub(super) async fn cancel_order(call: &Call<'_>) -> Result<Value, RpcError> {
    let token = call.string(0, "token")?;
    numbers::cancel(call.state, call.caller.account.id, token).await?;
    Ok(Value::Bool(true))
}

/// `did/store.cancel_subscription [didHash]`.
pub(super) async fn cancel_subscription(call: &Call<'_>) -> Result<Value, RpcError> {
    let hash = call.string(0, "did hash")?;
    let id =
        legacy::did_id(&hash).ok_or_else(|| RpcError::new(codes::NOT_FOUND, "DID not found"))?;
    let account = call.caller.account.id;
    let number = call
        .state
        .store
        .read(move |c| owned::by_id(c, account, id))
        .await?
        .ok_or_else(|| RpcError::new(codes::NOT_FOUND, "DID not found"))?;
    numbers::release(call.state, account, number.e164).await?;
    Ok(Value::Bool(true))
}
