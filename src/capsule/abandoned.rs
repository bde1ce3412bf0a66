//! A direct look (direct_look.rs) dropped before its hand-over's reply was
//! taken: the reply is read on the runtime, a job it took goes back to its
//! queue, and what it left to decide goes to the script there.

use std::sync::Arc;

use tokio::sync::OwnedRwLockReadGuard;

use super::hand_over::{HandOver, Outcome};
use super::Inner;
use crate::ledger::Ack;
use crate::script::fetch::{Fetched, Handed, Mode};
use crate::{Error, Result};

/// A hand-over whose caller walked away: a job it took goes back (its slot
/// with it); what it left to decide is decided by the script on the
/// runtime's connection, which takes no further job, and a job it keeps
/// goes back too.
pub(super) fn abandon_hand_over(
    inner: Arc<Inner>,
    acks: Vec<Ack>,
    gate: Option<OwnedRwLockReadGuard<()>>,
    hand_over: Box<HandOver>,
    value: Result<redis::Value>,
) {
    let Ok(handle) = crate::runtime::handle() else {
        drop(inner.settle(acks, Err(Error::Connection("lost".into()))));
        return;
    };
    crate::runtime::detach(&handle, async move {
        let taken = match value {
            Err(err) => {
                drop(inner.settle(acks, Err(err)));
                None
            }
            Ok(replies) => match hand_over.outcome(replies) {
                Outcome::Taken(look, _) => {
                    inner.settle(acks, Ok(look)).ok().and_then(|l| l.fetched)
                }
                Outcome::Decide(handed) => decide(&inner, acks, handed).await,
                // Never sent: the script decides as of the first round trip.
                Outcome::Book(hand_over, _) => decide(&inner, acks, hand_over.unbooked()).await,
            },
        };
        drop(gate);
        if let Some(f) = taken {
            let _ = inner.requeue(vec![(f.queue, f.job)]).await;
        }
    });
}

/// What a hand-over whose caller walked away left to decide, decided by the
/// script on the runtime's connection (which takes no further job); the job
/// it keeps, if any.
async fn decide(inner: &Arc<Inner>, acks: Vec<Ack>, handed: Handed) -> Option<Fetched> {
    let none: &[String] = &[];
    let riding = if handed.acks_ride { &acks[..] } else { &[] };
    let reply = inner
        .fetch
        .call(
            &inner.redis,
            &inner.uuid,
            Mode::Plain,
            riding,
            Some(&handed),
            none,
        )
        .await;
    inner.settle(acks, reply).ok().and_then(|l| l.fetched)
}
