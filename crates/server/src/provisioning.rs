//! Creating accounts and keys: shared by the operator API, the command line and the first
//! start's `dev` account, so all three make the same thing.

use dialtone_domain::account::BillingMode;
use dialtone_domain::credentials::{
    api_key_id, generate_api_key, generate_password, hash_api_key, hash_password,
};
use dialtone_domain::{Clock, Money, Sid};
use dialtone_store::accounts::{self, Account, NewAccount};
use dialtone_store::{DbError, Store};

/// What the operator asks for.
#[derive(Debug, Clone)]
pub struct AccountRequest {
    /// Display name.
    pub name: String,
    /// Parent account, for a sub account.
    pub parent: Option<Sid>,
    /// Opening prepaid credit.
    pub credit: Money,
    /// Currency; the parent's (or EUR) when absent.
    pub currency: Option<String>,
    /// Legacy login; the sid when absent.
    pub login: Option<String>,
    /// Prepaid or postpaid.
    pub billing_mode: BillingMode,
    /// Warning and shutdown levels of the balance.
    pub levels: (Money, Money),
}

/// A new account with the secrets that are shown only now.
#[derive(Debug, Clone)]
pub struct ProvisionedAccount {
    /// The account.
    pub account: Account,
    /// Legacy password in clear.
    pub password: String,
    /// First API key in clear.
    pub api_key: String,
}

/// Why an account or key could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    /// The named parent does not exist.
    #[error("parent account {0} not found")]
    ParentNotFound(Sid),
    /// Sub accounts cannot have sub accounts.
    #[error("parent account {0} is itself a sub account")]
    ParentIsSub(Sid),
    /// The login is in use.
    #[error("login {0:?} is taken")]
    LoginTaken(String),
    /// No such account.
    #[error("account {0} not found")]
    AccountNotFound(Sid),
    /// The database failed.
    #[error(transparent)]
    Db(DbError),
}

impl From<DbError> for ProvisionError {
    fn from(e: DbError) -> Self {
        Self::Db(e)
    }
}

/// Creates an account with a fresh password and API key.
pub async fn create_account(
    store: &Store,
    clock: &dyn Clock,
    req: AccountRequest,
) -> Result<ProvisionedAccount, ProvisionError> {
    let password = generate_password();
    let api_key = generate_api_key();
    let password_hash = {
        let password = password.clone();
        tokio::task::spawn_blocking(move || hash_password(&password))
            .await
            .map_err(|e| DbError::Other(e.to_string()))?
    };
    let now = clock.now();
    let key_hash = hash_api_key(&api_key);
    let key_id = api_key_id(&api_key);
    let account = store
        .write(move |c| {
            let parent = match &req.parent {
                Some(sid) => {
                    let parent = accounts::by_sid(c, sid)?
                        .ok_or_else(|| ProvisionError::ParentNotFound(sid.clone()))?;
                    if parent.parent_id.is_some() {
                        return Err(ProvisionError::ParentIsSub(sid.clone()));
                    }
                    Some(parent)
                }
                None => None,
            };
            let currency = req
                .currency
                .clone()
                .or_else(|| parent.as_ref().map(|p| p.currency.clone()))
                .unwrap_or_else(|| "EUR".to_owned());
            let new = NewAccount {
                name: req.name.clone(),
                parent_id: parent.map(|p| p.id),
                currency,
                billing_mode: req.billing_mode,
                credit: req.credit,
                login: req.login.clone(),
                password_hash,
                key_hash,
                key_id,
                warning_level: req.levels.0,
                shutdown_level: req.levels.1,
            };
            accounts::create(c, &new, now).map_err(|e| match e {
                DbError::UniqueViolation(_) => {
                    ProvisionError::LoginTaken(req.login.clone().unwrap_or_default())
                }
                other => ProvisionError::Db(other),
            })
        })
        .await?;
    Ok(ProvisionedAccount {
        account,
        password,
        api_key,
    })
}

/// Adds an API key to an account; returns the key in clear (shown once).
pub async fn create_key(
    store: &Store,
    clock: &dyn Clock,
    sid: Sid,
) -> Result<String, ProvisionError> {
    let key = generate_api_key();
    let (hash, id, now) = (hash_api_key(&key), api_key_id(&key), clock.now());
    store
        .write(move |c| {
            let account = accounts::by_sid(c, &sid)?.ok_or(ProvisionError::AccountNotFound(sid))?;
            accounts::add_key(c, account.id, &hash, &id, now)?;
            Ok::<_, ProvisionError>(())
        })
        .await?;
    Ok(key)
}

/// Revokes the keys of an account with that public identifier; false when none was live.
pub async fn revoke_key(
    store: &Store,
    clock: &dyn Clock,
    sid: Sid,
    key_id: String,
) -> Result<bool, ProvisionError> {
    let now = clock.now();
    store
        .write(move |c| {
            let account = accounts::by_sid(c, &sid)?.ok_or(ProvisionError::AccountNotFound(sid))?;
            Ok(accounts::revoke_key(c, account.id, &key_id, now)?)
        })
        .await
}
