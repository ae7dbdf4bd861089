//! Call export to CSV: a task writes the CSV in slices stored in the database (so memory
//! stays bounded whatever the size, and any node serves it), and its result carries a signed
//! download URL that works without credentials for 24 hours.

use dialtone_domain::Timestamp;
use dialtone_store::calls::Call;
use dialtone_store::tasks::{self, Task};
use dialtone_store::{Conn, SqlBuilder, params};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::error::{AppError, ErrorCode};
use crate::state::AppState;
use crate::voice::cdr::cdr;

/// The CSV header (CONTRACT section 3).
pub(crate) const HEADER: &str = "callid,direction,from,to,number,scenario,started,answered,ended,durationTotal,durationAnswered,durationBilled,hangupCause,hangupSource,billingDebit";
/// How long a download URL works.
pub(crate) const URL_TTL_MS: i64 = 24 * 3600 * 1000;
/// Exports an account may start per UTC day.
pub(crate) const PER_DAY: i64 = 5;
/// Longest range of one export.
pub(crate) const MAX_RANGE_MS: i64 = 31 * 86_400_000;

/// The name of the setting that holds the key signing download URLs.
pub(crate) const SIGNING_KEY: &str = "download_signing_key";

/// The key that signs download URLs: made once, kept in the database, shared by all nodes
/// (read first: it is made only once, by whichever node needs it first).
pub(crate) async fn secret(state: &AppState) -> anyhow::Result<String> {
    let kept = state
        .store
        .lookup(|c| {
            c.query_opt(
                "SELECT value FROM settings WHERE name = $1",
                dialtone_store::params![SIGNING_KEY],
            )?
            .map(|r| r.text(0))
            .transpose()
        })
        .await?;
    if let Some(key) = kept {
        return Ok(key);
    }
    Ok(state.store.write(secret_in).await?)
}

/// [`secret`] within a write transaction.
pub(crate) fn secret_in(
    conn: &mut dyn dialtone_store::Conn,
) -> Result<String, dialtone_store::DbError> {
    tasks::setting(
        conn,
        SIGNING_KEY,
        || hex::encode(rand::random::<[u8; 32]>()),
    )
}

/// The signature of a download of `taskid` until `expires` (ms).
pub(crate) fn sign(secret: &str, taskid: &str, expires: i64) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    mac.update(format!("{taskid}.{expires}").as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// Whether `signature` is the one of `taskid` until `expires` (constant time).
pub(crate) fn verify(secret: &str, taskid: &str, expires: i64, signature: &str) -> bool {
    let Ok(given) = hex::decode(signature) else {
        return false;
    };
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    mac.update(format!("{taskid}.{expires}").as_bytes());
    mac.verify_slice(&given).is_ok()
}

/// What to export.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    /// `inbound` or `outbound`.
    pub direction: String,
    /// From (inclusive).
    pub from: Timestamp,
    /// To (exclusive).
    pub to: Timestamp,
    /// Only calls handled by this scenario.
    pub scenario: Option<String>,
    /// Only calls received on (inbound) or forwarded by (outbound) this number.
    pub number: Option<String>,
}

fn filter(account_id: i64, r: &Value) -> SqlBuilder {
    let mut q = SqlBuilder::new(" FROM calls WHERE account_id = ");
    q.bind(account_id);
    q.push(" AND direction = ")
        .bind(r["direction"].as_str().unwrap_or_default());
    q.push(" AND started >= ")
        .bind(r["from"].as_i64().unwrap_or_default());
    q.push(" AND started < ")
        .bind(r["to"].as_i64().unwrap_or_default());
    if let Some(s) = r["scenario"].as_str() {
        q.push(" AND scenario_sid = ").bind(s);
    }
    if let Some(n) = r["number"].as_str() {
        q.push(" AND number = ").bind(n);
    }
    q
}

/// Validates and starts an export; 202 `{taskid}` for the caller.
pub(crate) async fn start(state: &AppState, account_id: i64, r: Request) -> Result<Task, AppError> {
    if r.to.millis() <= r.from.millis() {
        return Err(AppError::invalid("to", "must be after from"));
    }
    if r.to.millis() - r.from.millis() > MAX_RANGE_MS {
        return Err(AppError::new(
            ErrorCode::ExportRangeTooLong,
            "an export covers at most 31 days",
        ));
    }
    let now = state.clock.now();
    let day_start = Timestamp::from_millis(now.millis() - now.millis().rem_euclid(86_400_000));
    let params = json!({
        "direction": r.direction,
        "from": r.from.millis(),
        "to": r.to.millis(),
        "scenario": r.scenario,
        "number": r.number,
    });
    let task = state
        .store
        .write(move |c| {
            if let Some(s) = &params["scenario"].as_str() {
                let sid = dialtone_domain::Sid::parse(s)
                    .ok_or_else(|| AppError::not_found("scenario"))?;
                dialtone_store::scenarios::get(c, account_id, &sid)?
                    .ok_or_else(|| AppError::not_found("scenario"))?;
            }
            if let Some(n) = &params["number"].as_str() {
                dialtone_store::numbers::owned::get(c, account_id, n)?
                    .ok_or_else(|| AppError::not_found("number"))?;
            }
            if tasks::count_since(c, account_id, "calls-export", day_start)? >= PER_DAY {
                return Err(AppError::too_many(
                    ErrorCode::ExportQuotaExceeded,
                    format!("at most {PER_DAY} exports a day"),
                    u64::try_from((day_start.millis() + 86_400_000 - now.millis()) / 1000)
                        .unwrap_or(1),
                ));
            }
            let q = filter(account_id, &params);
            let total = c
                .query_one(&format!("SELECT COUNT(*){}", q.sql()), q.params())?
                .int(0)?;
            Ok(tasks::create(
                c,
                account_id,
                "calls-export",
                &params.to_string(),
                total,
                now,
            )?)
        })
        .await?;
    state.wake.notify_one();
    Ok(task)
}

fn field(out: &mut String, v: &Value) {
    let text = match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if text.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&text.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(&text);
    }
}

/// One row of the CSV.
pub(crate) fn row(call: &Call) -> String {
    let cdr = cdr(call);
    let mut out = String::new();
    for (i, key) in HEADER.split(',').enumerate() {
        if i > 0 {
            out.push(',');
        }
        field(&mut out, &cdr[key]);
    }
    out.push('\n');
    out
}

/// Writes the next slice of rows; the result when the file is complete.
pub(crate) fn slice(
    c: &mut dyn Conn,
    state: &AppState,
    task: &Task,
    params: &Value,
    secret: &str,
    now: Timestamp,
) -> Result<Option<Value>, AppError> {
    let _ = state;
    let mut q = filter(task.account_id, params);
    q.push(" AND id > ").bind(task.cursor);
    q.push(" ORDER BY id LIMIT ").bind(super::limits::SLICE);
    let ids: Vec<i64> = c
        .query(&format!("SELECT id{}", q.sql()), q.params())?
        .iter()
        .map(|r| r.int(0))
        .collect::<Result<_, _>>()?;
    let seq = c
        .query_one(
            "SELECT COALESCE(MAX(seq) + 1, 0) FROM export_chunks WHERE task_id = $1",
            params![task.id],
        )?
        .int(0)?;
    let mut text = String::new();
    if seq == 0 {
        text.push_str(HEADER);
        text.push('\n');
    }
    for id in &ids {
        if let Some(call) = dialtone_store::calls::by_id(c, *id)? {
            text.push_str(&row(&call));
        }
    }
    if !text.is_empty() {
        tasks::push_chunk(c, task.id, seq, text.as_bytes())?;
    }
    let done = task.done + ids.len() as i64;
    let cursor = ids.last().copied().unwrap_or(task.cursor);
    tasks::advance(c, task.id, cursor, done, task.total.max(done), now)?;
    if (ids.len() as i64) < super::limits::SLICE {
        let expires = now.millis() + URL_TTL_MS;
        let signature = sign(secret, &task.taskid, expires);
        let url = format!(
            "{}/v2.0/downloads/{}?expires={expires}&signature={signature}",
            state.config.public_url(),
            task.taskid
        );
        return Ok(Some(json!({
            "downloadUrl": url,
            "expires": Timestamp::from_millis(expires).to_rfc3339(),
            "rows": done,
        })));
    }
    Ok(None)
}
