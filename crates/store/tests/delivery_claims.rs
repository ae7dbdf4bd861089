//! Claims of webhook deliveries visit the accounts in turn and read a bounded number of each
//! one's: one account's backlog, refused for its endpoint's cap, never hides another
//! account's deliveries. On both databases.

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod common;

use dialtone_domain::{Money, Timestamp};
use dialtone_store::deliveries::{
    self, Claimed, EXAMINED_PER_ACCOUNT, Exclusions, WALK_ACCOUNTS, WALK_PROBES,
};
use dialtone_store::{Store, StoreOptions, events, migrate};

const NOW: Timestamp = Timestamp::from_millis(1_750_000_000_000);

/// `count` events of the account, each delivered to `endpoint` only, the first `count` ms
/// before `last` and the others a millisecond apart after it.
async fn backlog(store: &Store, account: i64, endpoint: &str, count: i64, last: Timestamp) {
    let endpoint = endpoint.to_owned();
    store
        .write(move |c| {
            for i in 0..count {
                let at = last.plus_ms(i - count + 1);
                events::emit_to(
                    c,
                    account,
                    "sms.mt.status_update",
                    "{}",
                    Some(&endpoint),
                    at,
                )?;
            }
            Ok::<_, dialtone_store::DbError>(())
        })
        .await
        .unwrap();
}

/// A claim at `NOW` of up to `limit`, the walk starting after `walk_after`, taking every
/// candidate but those to `refused` (an endpoint at its cap, as this node sees it).
async fn claim(
    store: &Store,
    limit: i64,
    exclude: Exclusions,
    walk_after: i64,
    refused: &str,
) -> Claimed {
    let refused = refused.to_owned();
    store
        .write(move |c| {
            deliveries::claim(c, NOW, 30_000, limit, &exclude, walk_after, &mut |d| {
                d.endpoint != refused
            })
        })
        .await
        .unwrap()
}

async fn accounts(store: &Store, count: usize) -> Vec<i64> {
    let mut made = Vec::new();
    for i in 0..count {
        let name = format!("claims{i}");
        made.push(common::prepaid_account(store, &name, Money::ZERO, Money::ZERO, NOW).await);
    }
    made
}

async fn another_accounts_delivery_is_reached_past_a_refused_backlog(store: &Store) {
    migrate::run(store).await.unwrap();
    let made = accounts(store, 2).await;
    let (busy, quiet) = (made[0], made[1]);
    // The busy account's 1,000 deliveries are all older than the quiet one's.
    backlog(store, busy, "http://busy.example/", 1_000, NOW.plus_ms(-1)).await;
    backlog(store, quiet, "http://quiet.example/", 1, NOW).await;

    // The busy endpoint refused by the plan, nothing named in the exclusions.
    let claimed = claim(store, 10, Exclusions::default(), 0, "http://busy.example/").await;
    let got: Vec<(i64, &str)> = claimed
        .due
        .iter()
        .map(|d| (d.account_id, d.endpoint.as_str()))
        .collect();
    assert_eq!(got, [(quiet, "http://quiet.example/")]);
    assert_eq!(claimed.walk_ended, i64::MIN, "both visited: round again");

    // The same with the endpoint named: its deliveries are left out unread.
    backlog(store, quiet, "http://quiet.example/", 1, NOW).await;
    let exclude = Exclusions {
        accounts: Vec::new(),
        endpoints: vec!["http://busy.example/".into()],
    };
    let claimed = claim(store, 10, exclude, 0, "").await;
    assert_eq!(claimed.due.len(), 1);
    assert_eq!(claimed.due[0].account_id, quiet);

    // An account at its cap is passed over: the busy one's deliveries stay due.
    let exclude = Exclusions {
        accounts: vec![busy],
        endpoints: Vec::new(),
    };
    let claimed = claim(store, 10, exclude, 0, "").await;
    assert!(
        claimed.due.is_empty(),
        "the quiet account has none left: {claimed:?}"
    );
    let claimed = claim(store, 10, Exclusions::default(), 0, "").await;
    assert_eq!(claimed.due.len(), 10);
    assert!(claimed.due.iter().all(|d| d.account_id == busy));
}

async fn claims_take_the_accounts_in_turn(store: &Store) {
    migrate::run(store).await.unwrap();
    let walk = usize::try_from(WALK_ACCOUNTS).unwrap();
    let made = accounts(store, walk + 4).await;
    for (i, account) in made.iter().enumerate() {
        let endpoint = format!("http://a{i}.example/");
        backlog(store, *account, &endpoint, 1, NOW).await;
    }
    let claimed = claim(store, 1_000, Exclusions::default(), 0, "").await;
    let mut got: Vec<i64> = claimed.due.iter().map(|d| d.account_id).collect();
    got.sort_unstable();
    assert_eq!(got, made[..walk], "one walk: its first accounts");
    assert_eq!(claimed.walk_ended, made[walk - 1]);
    // The next claim goes on after it, and round to the first ones (claimed: not due).
    let claimed = claim(store, 1_000, Exclusions::default(), claimed.walk_ended, "").await;
    let mut got: Vec<i64> = claimed.due.iter().map(|d| d.account_id).collect();
    got.sort_unstable();
    assert_eq!(got, made[walk..]);
    // A claim that fills up stops at the account it filled up with.
    backlog(store, made[0], "http://a0.example/", 3, NOW).await;
    backlog(store, made[1], "http://a1.example/", 3, NOW).await;
    let claimed = claim(store, 2, Exclusions::default(), 0, "").await;
    assert_eq!(claimed.due.len(), 2);
    assert!(claimed.due.iter().all(|d| d.account_id == made[0]));
    assert_eq!(claimed.walk_ended, made[0]);
}

async fn accounts_with_nothing_due_do_not_use_up_a_claim(store: &Store) {
    migrate::run(store).await.unwrap();
    // More accounts than a claim reads, each with a delivery waiting for later (a retry),
    // then one with a delivery due.
    let waiting = usize::try_from(WALK_PROBES).unwrap() + 10;
    let made = accounts(store, waiting + 1).await;
    for (i, account) in made[..waiting].iter().enumerate() {
        let endpoint = format!("http://w{i}.example/");
        backlog(store, *account, &endpoint, 1, NOW.plus_ms(60_000)).await;
    }
    backlog(store, made[waiting], "http://due.example/", 1, NOW).await;
    let claimed = claim(store, 10, Exclusions::default(), 0, "").await;
    assert_eq!(claimed.due.len(), 1);
    assert_eq!(claimed.due[0].account_id, made[waiting]);
    // Starting after it, the walk goes round and finds nothing more.
    let claimed = claim(store, 10, Exclusions::default(), made[waiting], "").await;
    assert!(claimed.due.is_empty());
    assert_eq!(claimed.walk_ended, i64::MIN);
}

async fn a_lapsed_lease_is_reached_behind_the_deliveries_waiting_for_it(store: &Store) {
    migrate::run(store).await.unwrap();
    let account = accounts(store, 1).await[0];
    // More SMS than a claim reads of one account, each with two events in order.
    let sms = EXAMINED_PER_ACCOUNT + 20;
    store
        .write(move |c| {
            let mut outbox = events::Outbox::default();
            for i in 0..sms {
                let key = format!("sms{i}");
                for (step, at) in [(0, -60_000), (1, -30_000)] {
                    let data = format!("{{\"step\":{step}}}");
                    let when = NOW.plus_ms(at + i);
                    let to = Some("http://sms.example/");
                    outbox.push(account, "sms.mt.status_update", data, to, Some(&key), when);
                }
            }
            outbox.flush(c)
        })
        .await
        .unwrap();
    // A node claims every first event and dies: their leases run out after the second
    // events became due, which wait for them and come first.
    let mut first = 0;
    for _ in 0..4 {
        first += claim(store, 1_000, Exclusions::default(), i64::MIN, "")
            .await
            .due
            .len();
    }
    assert_eq!(
        first,
        usize::try_from(sms).unwrap(),
        "only the first events go"
    );
    let later = NOW.plus_ms(30_001);
    let claimed = store
        .write(move |c| {
            deliveries::claim(
                c,
                later,
                30_000,
                1_000,
                &Exclusions::default(),
                i64::MIN,
                &mut |_| true,
            )
        })
        .await
        .unwrap();
    assert!(
        !claimed.due.is_empty(),
        "the lapsed first events are claimed again"
    );
    assert!(
        claimed
            .due
            .iter()
            .all(|d| d.try_number == 1 && d.data.contains("\"step\":0"))
    );
}

async fn a_claim_reads_a_bounded_part_of_an_accounts_backlog(store: &Store) {
    migrate::run(store).await.unwrap();
    let account = accounts(store, 1).await[0];
    // More deliveries to a refused endpoint than a claim reads of one account, then one to
    // another endpoint of the same account.
    backlog(
        store,
        account,
        "http://busy.example/",
        EXAMINED_PER_ACCOUNT,
        NOW.plus_ms(-1),
    )
    .await;
    backlog(store, account, "http://other.example/", 1, NOW).await;
    let claimed = claim(store, 10, Exclusions::default(), 0, "http://busy.example/").await;
    assert!(claimed.due.is_empty(), "read past the bound: {claimed:?}");
    // One fewer ahead of it, and it is within reach.
    let one = claim(store, 1, Exclusions::default(), 0, "").await;
    assert_eq!(one.due[0].endpoint, "http://busy.example/");
    let claimed = claim(store, 10, Exclusions::default(), 0, "http://busy.example/").await;
    assert_eq!(claimed.due.len(), 1);
    assert_eq!(claimed.due[0].endpoint, "http://other.example/");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_another_accounts_delivery_is_reached_past_a_refused_backlog() {
    let (store, _dir) = common::sqlite().await;
    another_accounts_delivery_is_reached_past_a_refused_backlog(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_another_accounts_delivery_is_reached_past_a_refused_backlog() {
    let Some((store, schema)) = common::postgres("claims_past", &StoreOptions::default()).await
    else {
        return;
    };
    another_accounts_delivery_is_reached_past_a_refused_backlog(&store).await;
    drop(store);
    drop(schema);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_claims_take_the_accounts_in_turn() {
    let (store, _dir) = common::sqlite().await;
    claims_take_the_accounts_in_turn(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_claims_take_the_accounts_in_turn() {
    let Some((store, schema)) = common::postgres("claims_turns", &StoreOptions::default()).await
    else {
        return;
    };
    claims_take_the_accounts_in_turn(&store).await;
    drop(store);
    drop(schema);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_claim_reads_a_bounded_part_of_an_accounts_backlog() {
    let (store, _dir) = common::sqlite().await;
    a_claim_reads_a_bounded_part_of_an_accounts_backlog(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_claim_reads_a_bounded_part_of_an_accounts_backlog() {
    let Some((store, schema)) = common::postgres("claims_bound", &StoreOptions::default()).await
    else {
        return;
    };
    a_claim_reads_a_bounded_part_of_an_accounts_backlog(&store).await;
    drop(store);
    drop(schema);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_accounts_with_nothing_due_do_not_use_up_a_claim() {
    let (store, _dir) = common::sqlite().await;
    accounts_with_nothing_due_do_not_use_up_a_claim(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_accounts_with_nothing_due_do_not_use_up_a_claim() {
    let Some((store, schema)) = common::postgres("claims_waiting", &StoreOptions::default()).await
    else {
        return;
    };
    accounts_with_nothing_due_do_not_use_up_a_claim(&store).await;
    drop(store);
    drop(schema);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_lapsed_lease_is_reached_behind_the_deliveries_waiting_for_it() {
    let (store, _dir) = common::sqlite().await;
    a_lapsed_lease_is_reached_behind_the_deliveries_waiting_for_it(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_lapsed_lease_is_reached_behind_the_deliveries_waiting_for_it() {
    let Some((store, schema)) = common::postgres("claims_lapsed", &StoreOptions::default()).await
    else {
        return;
    };
    a_lapsed_lease_is_reached_behind_the_deliveries_waiting_for_it(&store).await;
    drop(store);
    drop(schema);
}
