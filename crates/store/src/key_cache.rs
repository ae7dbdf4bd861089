//! The accounts behind API keys, kept in memory between changes of what authentication
//! reads.
//!
//! Every request authenticates, and reading its account through its key joins three rows;
//! on SQLite, every commit of the writer also empties a reader's page cache, so under a
//! write load each of those reads went to the WAL again (8% of the server's CPU during an
//! SMS load). The cache holds the accounts read through their keys, tagged with the
//! `auth_version` they were read at. The version moves, by triggers in the transaction
//! that makes the change (migration 0016), whenever any account's settings or any key
//! change, from this process or any other: a request reads the version (one row) and uses
//! the cached account while it is unchanged. On PostgreSQL the requests that ask for the
//! version together share one read of it, begun after each of them asked (the
//! `shared_read` module): what each would have read itself, or newer.
//!
//! Why a stale account is never served: the version is read before the account, each in
//! its own statement, so the account is at least as new as its tag. An entry is used only
//! while the version read by the request is its tag, so no change committed between the
//! account's read and the request's own read of the version.
//!
//! A request that only writes may skip its read of the version ([`KeyCache::assumed`]): it
//! takes the cached account with the version it was cached at, and its write reads the
//! version in its own transaction (with what else it reads first, so no round trip of its
//! own) and is not made when the version moved; the request is then authenticated again.
//! A change committed before the request began is committed before that read, so it is
//! seen as surely as by a read of the request's own.
//!
//! The balance is not part of it: debits and top-ups move `credit` without moving the
//! version, so a cached account's `credit` is the balance when it was read. Whatever shows
//! or decides on a balance reads it from the database.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::accounts::{self, Account};
use crate::shared_read::SharedRead;
use crate::sql::{Conn, DbError, Dialect};
use crate::{Store, params};

/// Keys kept at most; past it the cache starts again (live keys are far fewer).
const CAPACITY: usize = 10_000;

/// See the module's documentation.
#[derive(Default)]
pub struct KeyCache {
    cached: Mutex<Cached>,
    /// PostgreSQL: the version read shared by the requests that ask for it together (see
    /// the `shared_read` module).
    versions: Arc<SharedRead>,
}

#[derive(Default)]
struct Cached {
    /// The `auth_version` every entry was read at (0: none read yet; the table starts at 1).
    version: i64,
    /// Accounts by the hash of a live key.
    by_key_hash: HashMap<String, Account>,
}

impl KeyCache {
    /// The account owning the live key with this hash, as [`accounts::by_key_hash`] reads
    /// it, except that its `credit` may be older (see the module's documentation).
    pub fn account(&self, conn: &mut dyn Conn, key_hash: &str) -> Result<Option<Account>, DbError> {
        let version = version(conn)?;
        if let Some(account) = self.cached(version, key_hash) {
            return Ok(Some(account));
        }
        self.read_at(version, conn, key_hash)
    }

    /// [`KeyCache::account`] for a request: on SQLite on the caller's thread without waiting
    /// for the sync of what it saw (`Store::peek`: authentication decides a write, it shows
    /// nothing); on PostgreSQL with the version read shared by the requests asking together,
    /// and the database read only when the account is not cached at that version.
    pub async fn account_for_request(
        self: &Arc<Self>,
        store: &Store,
        key_hash: String,
    ) -> Result<Option<Account>, DbError> {
        if store.dialect() == Dialect::Sqlite {
            let keys = self.clone();
            return store.peek(move |c| keys.account(c, &key_hash)).await;
        }
        let reader = store.clone();
        let version = self
            .versions
            .get(move || {
                let store = reader.clone();
                async move { store.read(version).await }
            })
            .await?;
        if let Some(account) = self.cached(version, &key_hash) {
            return Ok(Some(account));
        }
        let keys = self.clone();
        store
            .read(move |c| keys.read_at(version, c, &key_hash))
            .await
    }

    /// The account of the key as this node last read it, with the version it was read at,
    /// without reading anything: only for a request whose one effect is a write that checks,
    /// in its own transaction, that the version is still that one (an SMS send), and that
    /// is authenticated again when it is not. `None` when the key is not cached.
    pub fn assumed(&self, key_hash: &str) -> Option<(Account, i64)> {
        let cached = self.lock();
        if cached.version == 0 {
            return None;
        }
        cached
            .by_key_hash
            .get(key_hash)
            .map(|account| (account.clone(), cached.version))
    }

    /// The cached account of the key at `version`, if any (a newer version empties the
    /// cache).
    fn cached(&self, version: i64, key_hash: &str) -> Option<Account> {
        let mut cached = self.lock();
        if cached.version == version {
            return cached.by_key_hash.get(key_hash).cloned();
        }
        if cached.version < version {
            cached.version = version;
            cached.by_key_hash.clear();
        }
        None
    }

    /// Reads the account of the key, `version` having been read before, and keeps it.
    fn read_at(
        &self,
        version: i64,
        conn: &mut dyn Conn,
        key_hash: &str,
    ) -> Result<Option<Account>, DbError> {
        let account = accounts::by_key_hash(conn, key_hash)?;
        if let Some(account) = &account {
            let mut cached = self.lock();
            // Another request may have seen a newer version meanwhile: then this account
            // is not kept (it may predate that change).
            if cached.version == version {
                if cached.by_key_hash.len() >= CAPACITY {
                    cached.by_key_hash.clear();
                }
                cached
                    .by_key_hash
                    .insert(key_hash.to_owned(), account.clone());
            }
        }
        Ok(account)
    }

    fn lock(&self) -> MutexGuard<'_, Cached> {
        // A panic while holding the lock leaves at worst an entry missing.
        self.cached.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The version of what authentication reads (see the module's documentation).
pub fn version(conn: &mut dyn Conn) -> Result<i64, DbError> {
    conn.query_one("SELECT version FROM auth_version", params![])?
        .int(0)
}
