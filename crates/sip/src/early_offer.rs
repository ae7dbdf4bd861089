//! A new offer within a call (re-INVITE) that arrives before the ACK of our 2xx.
//!
//! The far end sends its ACK, then its re-INVITE, a millisecond apart; each is a
//! transaction of its own here, taken by a task of its own, so under load the re-INVITE can
//! reach its dialog first. rsipstack's dialog (0.7) takes an INVITE on a dialog not yet
//! confirmed for the first INVITE and waits on that transaction for an ACK that never comes:
//! the re-INVITE and every retransmission of it go unanswered, and the far end gives the
//! call up. So the re-INVITE waits here until the dialog is confirmed (the ACK taken), a
//! bounded time; past it, it is refused 500 with `Retry-After`, as RFC 3261 (14.2) has an
//! INVITE refused while another is pending on the same dialog.

use std::time::Duration;

use rsipstack::dialog::dialog::{Dialog, DialogState};
use rsipstack::sip::{Header, StatusCode};
use rsipstack::transaction::transaction::Transaction;

/// Longest a re-INVITE waits for the ACK of the call's 2xx (sent before it, so normally
/// taken within milliseconds).
const ACK_WAIT: Duration = Duration::from_secs(2);
/// How often the dialog's state is looked at meanwhile.
const LOOK_EVERY: Duration = Duration::from_millis(5);

/// Whether the re-INVITE `tx` may go to `dialog`: at once when it is confirmed; after its
/// ACK when it waits for one. Otherwise the request is answered here (481 on a dialog that
/// ended, 500 with `Retry-After` when no ACK came in time) and `false` is returned.
pub(crate) async fn ready(dialog: &Dialog, tx: &mut Transaction) -> rsipstack::Result<bool> {
    let deadline = tokio::time::Instant::now() + ACK_WAIT;
    loop {
        match dialog.state() {
            DialogState::Confirmed(..)
            | DialogState::Updated(..)
            | DialogState::Info(..)
            | DialogState::Options(..)
            | DialogState::Notify(..)
            | DialogState::Refer(..)
            | DialogState::Message(..)
            | DialogState::Publish(..) => return Ok(true),
            DialogState::Terminated(..) => {
                tx.reply(StatusCode::CallTransactionDoesNotExist).await?;
                return Ok(false);
            }
            DialogState::Calling(_)
            | DialogState::Trying(_)
            | DialogState::Early(..)
            | DialogState::WaitAck(..) => {
                if tokio::time::Instant::now() >= deadline {
                    let retry = Header::Other("Retry-After".into(), "1".into());
                    tx.reply_with(StatusCode::ServerInternalError, vec![retry], None)
                        .await?;
                    return Ok(false);
                }
                tokio::time::sleep(LOOK_EVERY).await;
            }
        }
    }
}
