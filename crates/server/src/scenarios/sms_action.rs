//! `sms@v1`: a scenario sends SMS through the same path as `POST /sms`.

use dialtone_domain::E164;
use dialtone_domain::sms::Sender;
use dialtone_store::accounts;
use dialtone_store::runs::Run;
use serde_json::{Value, json};

use crate::state::AppState;

/// Sends `body` to each of `to` for the run's account; `{ok, sids}` (and `error`).
pub(crate) async fn send(
    state: &AppState,
    run: &Run,
    to: Vec<String>,
    body: String,
    from: Option<String>,
) -> Value {
    let account_id = run.account_id;
    let account = match state
        .store
        .read(move |c| accounts::by_id(c, account_id))
        .await
    {
        Ok(Some(a)) => a,
        _ => return json!({"ok": false, "sids": [], "error": "account not found"}),
    };
    let sender = match Sender::parse(from.as_deref().unwrap_or_default()) {
        Ok(s) => s,
        Err(e) => return json!({"ok": false, "sids": [], "error": e}),
    };
    let mut sids = Vec::new();
    let mut errors = Vec::new();
    for number in to {
        let Ok(to) = E164::parse(&number) else {
            errors.push(format!("{number}: not a valid E.164 number"));
            continue;
        };
        let out = crate::sms::Outgoing {
            to,
            from: sender.clone(),
            body: body.clone(),
            encoding: None,
            traffic_type: dialtone_domain::sms::TrafficType::Alerting,
            user_data: None,
            flash: false,
            webhook_url: None,
            replace_stopnum: false,
        };
        match crate::sms::send(state, &account, out).await {
            Ok(sms) => sids.push(sms.sid.to_string()),
            Err(e) => {
                e.log_cause();
                errors.push(format!("{number}: {}", e.message));
            }
        }
    }
    let mut value = json!({"ok": errors.is_empty(), "sids": sids});
    if !errors.is_empty() {
        value["error"] = json!(errors.join("; "));
    }
    value
}
