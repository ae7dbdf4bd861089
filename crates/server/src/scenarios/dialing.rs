//! `dial@v1`: the targets rung one after the other through the networks that route them,
//! the first that answers connected to the run's call (a leg of its own, under the call id
//! chosen when it was dialled), and the dial's result when the connection ends, by either
//! side hanging up.

use dialtone_actions::{DialTarget, Event};
use dialtone_carrier::voice::{CallAction, Dial, DialOutcome};
use dialtone_domain::call::NORMAL_CLEARING;
use dialtone_store::calls::{self, Call};
use dialtone_store::{Conn, DbError};
use serde_json::{Value, json};

use super::pending::Pending;
use super::scope::{Io, Scope};
use crate::voice::legs::{self, timeline};

/// The call to place for a target.
fn placed(k: &Call, from: &str, target: &DialTarget) -> Dial {
    Dial {
        parent_callid: k.callid.clone(),
        callid: calls::new_callid(),
        from: from.to_owned(),
        to: target.number.clone(),
        ring_ms: u64::from(target.timeout_secs) * 1000,
    }
}

/// `dial@v1`: rings the first target through its network (the others follow in
/// [`dialed`]); with no target the dial fails at once.
pub(crate) fn dial(
    s: &mut Scope<'_>,
    k: &Call,
    fiber: u32,
    targets: &[DialTarget],
    answer_on_branch: bool,
    from: String,
) {
    let Some(first) = targets.first() else {
        s.done(
            fiber,
            json!({"ok": false, "status": "failed", "target": null}),
        );
        return;
    };
    // Every target may ring its whole timeout, and a little more for the networks.
    let ring: i64 = targets
        .iter()
        .map(|t| i64::from(t.timeout_secs) * 1000 + 5_000)
        .sum();
    s.out.io.push(Io::Dial {
        fiber,
        dial: placed(k, &from, first),
    });
    s.waits.push(Pending::Dialing {
        fiber,
        targets: targets.to_vec(),
        next: 0,
        from,
        answer_on_branch,
        deadline: s.now.millis() + ring,
    });
}

/// What a network answered for one target of a dial.
pub(crate) struct Attempt<'a> {
    /// The dial's fiber.
    pub(crate) fiber: u32,
    /// How the target answered.
    pub(crate) outcome: DialOutcome,
    /// The network that carried it.
    pub(crate) network: &'a str,
    /// The call id it was placed under.
    pub(crate) callid: &'a str,
}

/// A target of a dial answered or did not: connect it, or ring the next one, or answer the
/// dial's fiber with the last status. A target that answered a dial nobody waits for any
/// more (the call ended meanwhile) is hung up.
pub(crate) fn dialed(c: &mut dyn Conn, s: &mut Scope<'_>, a: &Attempt<'_>) -> Result<(), DbError> {
    let fiber = a.fiber;
    let live = s.call.as_ref().filter(|k| k.status.is_live()).cloned();
    let at = s
        .waits
        .iter()
        .position(|w| matches!(w, Pending::Dialing { fiber: f, .. } if *f == fiber));
    let (Some(at), Some(k)) = (at, live) else {
        if a.outcome == DialOutcome::Answered {
            s.out.io.push(Io::Act {
                callid: a.callid.to_owned(),
                network: a.network.to_owned(),
                action: CallAction::HangUp {
                    cause: NORMAL_CLEARING,
                },
            });
        }
        return Ok(());
    };
    let Pending::Dialing {
        targets,
        next,
        from,
        answer_on_branch,
        deadline,
        ..
    } = s.waits.remove(at)
    else {
        return Ok(());
    };
    let Some(target) = targets.get(next).map(|t| t.number.clone()) else {
        return Ok(());
    };
    let now = s.now;
    let outcome = a.outcome;
    let data = json!({"target": target, "status": outcome.as_str()});
    timeline(c, k.id, "dial", &data, now)?;
    if outcome == DialOutcome::Answered {
        let dialled = legs::Dialled {
            caller: &from,
            target: &target,
            network: a.network,
            callid: a.callid,
        };
        let leg = legs::open_dialled(c, &k, &s.run.scenario_sid, &dialled, now)?;
        // Transparent forwarding (`autoAnswer: false`): the caller's leg is answered when
        // the target answers, not before.
        if k.answered.is_none() && legs::answer(c, &k, &json!({"by": target}), now)? {
            *s.call = calls::by_id(c, k.id)?;
            s.act(&k, CallAction::Answer);
        }
        s.waits.push(Pending::Dial {
            fiber,
            target,
            leg: leg.id,
        });
        s.out.woke = true;
        if answer_on_branch {
            s.out.events.push(Event::DialAnswered { fiber });
        }
        return Ok(());
    }
    match targets.get(next + 1) {
        Some(following) => {
            s.out.io.push(Io::Dial {
                fiber,
                dial: placed(&k, &from, following),
            });
            s.waits.push(Pending::Dialing {
                fiber,
                targets,
                next: next + 1,
                from,
                answer_on_branch,
                deadline,
            });
        }
        None => s.out.events.push(Event::Result {
            fiber,
            value: json!({"ok": false, "status": outcome.as_str(), "target": null}),
        }),
    }
    Ok(())
}

/// A connected leg ended by itself (its far end hung up): the dial that connected it
/// answers, and the bridge over it ends.
pub(crate) fn leg_ended(s: &mut Scope<'_>, leg: i64) {
    let connected = s
        .waits
        .iter()
        .any(|w| matches!(w, Pending::Dial { leg: l, .. } if *l == leg));
    if !connected {
        return;
    }
    let mut kept = Vec::with_capacity(s.waits.len());
    for wait in std::mem::take(s.waits) {
        match wait {
            Pending::Dial {
                fiber,
                target,
                leg: l,
            } if l == leg => s.done(
                fiber,
                json!({"ok": true, "status": "answered", "target": target}),
            ),
            Pending::Bridge { fiber } => s.done(fiber, Value::Null),
            other => kept.push(other),
        }
    }
    *s.waits = kept;
}
