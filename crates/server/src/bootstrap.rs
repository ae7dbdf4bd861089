//! First start: with an empty database, create a `dev` account with prepaid credit so a
//! developer can call the API at once.

use dialtone_domain::Money;
use dialtone_domain::account::BillingMode;

use crate::provisioning::{self, AccountRequest, ProvisionError, ProvisionedAccount};
use crate::state::AppState;

/// Opening credit of the dev account: 1,000.00 EUR, in cents.
pub const DEV_CREDIT_CENTS: i64 = 100_000;

/// Creates the `dev` account (the caller saw no account); None when another node of the
/// same database made it first. Its password hash (argon2) is the slow part, so the server
/// runs this while it already serves: nobody can use the key before it is printed.
pub async fn create_dev_account(state: &AppState) -> anyhow::Result<Option<ProvisionedAccount>> {
    let request = AccountRequest {
        name: "dev".to_owned(),
        parent: None,
        credit: Money::from_cents(DEV_CREDIT_CENTS),
        currency: None,
        login: Some("dev".to_owned()),
        billing_mode: BillingMode::Prepaid,
        levels: (state.config.credit_warning, state.config.credit_shutdown),
    };
    match provisioning::create_account(&state.store, state.clock.as_ref(), request).await {
        Ok(made) => Ok(Some(made)),
        // Another node of the same database made it first.
        Err(ProvisionError::LoginTaken(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// A one-time link to the console signed in as the account just made (its path; the first
/// start prints it beside the base URL).
pub async fn console_link(state: &AppState, made: &ProvisionedAccount) -> anyhow::Result<String> {
    crate::console::session::one_time_link(state, made.account.id).await
}

/// Where HTTPS answers, for the first start's lines.
#[derive(Debug, Clone)]
pub struct Https {
    /// `https://ADDR`.
    pub url: String,
    /// The certificate file.
    pub certificate: String,
    /// Its SHA-256 fingerprint.
    pub fingerprint: String,
    /// Made by dialtone: clients must be told to trust it.
    pub self_signed: bool,
}

/// The lines printed once, on the first start.
pub fn announcement(
    made: &ProvisionedAccount,
    base_url: &str,
    https: Option<&Https>,
    console_link: Option<&str>,
) -> String {
    let mut text = format!(
        "\n  dialtone created a dev account (shown once; keep it):\n\
         \n    account SID  {sid}\
         \n    API key      {key}\
         \n    login        {login}\
         \n    password     {password}\
         \n    credit       {credit} cents ({currency})\n\
         \n  try it:\n\
         \n    curl -H 'x-api-key: {key}' {base_url}/v2.0/ping\n\
         \n  console: {base_url}/ (sign in with the login and password above)\n",
        sid = made.account.sid,
        key = made.api_key,
        login = made.account.login,
        password = made.password,
        credit = made.account.credit,
        currency = made.account.currency,
    );
    if let Some(link) = console_link {
        text.push_str(&format!(
            "    opened signed in, once (valid 24 hours): {base_url}{link}\n"
        ));
    }
    if let Some(https) = https {
        let kind = if https.self_signed {
            " (self-signed)"
        } else {
            ""
        };
        text.push_str(&format!(
            "\n  HTTPS: {url}\
             \n    certificate  {cert}{kind}\
             \n    SHA-256      {fingerprint}\n\
             \n    curl --cacert {cert} -H 'x-api-key: {key}' {url}/v2.0/ping\n",
            url = https.url,
            cert = https.certificate,
            fingerprint = https.fingerprint,
            key = made.api_key,
        ));
        if https.self_signed {
            text.push_str(&format!(
                "    trust it: SSL_CERT_FILE={cert} (Python), NODE_EXTRA_CA_CERTS={cert} (Node.js),\
                 \n              keytool -importcert -file {cert} (Java)\n",
                cert = https.certificate,
            ));
        }
    }
    text
}
