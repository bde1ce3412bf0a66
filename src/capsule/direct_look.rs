//! A look on the calling thread's own connection (see direct/, which opens
//! it). The thread writes the fetch script (or a hand-over, hand_over/) and
//! reads a reply already there; only a reply still to come is waited for.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::OwnedRwLockReadGuard;

use super::abandoned::abandon_hand_over;
use super::hand_over::{self, HandOver, Outcome};
use super::Inner;
use crate::direct::{self, Direct, Flight};
use crate::ledger::Ack;
use crate::script::fetch::{Handed, Look, Mode};
use crate::script::{lost_script, Send};
use crate::sentinel::moved_reply;
use crate::{Error, Interrupt, Result};

/// A look on the calling thread's own connection (see direct/). Dropped
/// before its reply was taken, it is finished on the runtime, and a job in
/// the reply goes back to its queue.
pub(crate) struct DirectLook {
    pub(super) inner: Arc<Inner>,
    pub(super) queues: Arc<Vec<String>>,
    flight: Option<Flight>,
    mode: Mode,
    acks: Vec<Ack>,
    /// Shared hold on the gate until the reply is settled (see `Inner::gate`).
    gate: Option<OwnedRwLockReadGuard<()>>,
    /// A timeout from its first request's sending (its reply's "opens in"
    /// counts from about then: see `Capsule::ring_as_rates_open`).
    deadline: Instant,
    /// How the script was called: with its library loaded first after
    /// Redis had lost it.
    send: Send,
    /// The connection broke before a reply came, or its server was no
    /// master any more (a failover).
    pub(super) lost: bool,
    /// The generation of the master its connection was opened to.
    generation: u64,
    /// Its flight is a hand-over's, not the script's.
    hand_over: Option<Box<HandOver>>,
    /// What a hand-over left the script to decide: the script's flight
    /// carries it, and not the acknowledgements, which the hand-over sent.
    handed: Option<Box<Handed>>,
}

impl DirectLook {
    /// Sends the fetch script on this thread's connection, if it has one and
    /// no reconciliation holds the gate; reads a reply already there.
    pub(super) fn start(
        inner: &Arc<Inner>,
        queues: &Arc<Vec<String>>,
        watch: bool,
    ) -> Option<DirectLook> {
        let gate = inner.gate.clone().try_read_owned().ok()?;
        let generation = inner.redis.generation();
        // A new master the capsule is not healed on yet: the runtime's look
        // waits for it (Inner::heal).
        if !inner.healed_on(generation) {
            return None;
        }
        let conn = direct::take(inner.id, generation)?;
        let acks = inner.ledger().take_acks(Some(std::thread::current().id()));
        let mode = Mode::of_look(watch, true);
        let hand_over = HandOver::of(inner.id, generation, &inner.uuid, mode, &acks, queues);
        inner.redis.trips.add(1);
        if hand_over.is_some() {
            inner.hand_overs.add(1);
        }
        let mut look = DirectLook {
            inner: inner.clone(),
            queues: queues.clone(),
            flight: None,
            mode,
            acks,
            gate: Some(gate),
            deadline: Instant::now() + inner.timeout,
            send: Send::Call,
            lost: false,
            generation,
            hand_over: None,
            handed: None,
        };
        look.flight = Some(match hand_over {
            Some((hand_over, request)) => {
                let replies = hand_over.replies();
                look.hand_over = Some(Box::new(hand_over));
                Flight::start_all(conn, request, replies)
            }
            None => Flight::start(conn, look.script_request(), Send::Call.replies()),
        });
        Some(look)
    }

    /// The fetch script's request, sent as `self.send` says.
    fn script_request(&self) -> Vec<u8> {
        let acks = match &self.handed {
            Some(handed) if !handed.acks_ride => &[][..],
            _ => &self.acks[..],
        };
        let inner = &self.inner;
        inner.fetch.packed(
            self.send,
            &inner.uuid,
            self.mode,
            acks,
            self.handed.as_deref(),
            &self.queues,
        )
    }

    /// The reply, or one of a hand-over's, says its server is no master.
    fn moved(&self, value: &redis::Value) -> bool {
        match value {
            redis::Value::Array(replies) if self.hand_over.is_some() => {
                replies.iter().any(moved_reply)
            }
            other => moved_reply(other),
        }
    }

    /// Its reply is here, and finishing takes no further request.
    pub(super) fn is_ready(&self) -> bool {
        let Some(flight) = self.flight.as_ref() else {
            return false;
        };
        match (&self.hand_over, flight.peek()) {
            (Some(hand_over), Some(replies)) => hand_over.taken(replies).is_some(),
            (Some(_), None) => false,
            (None, _) => flight.is_ready_value(),
        }
    }

    pub(super) fn finish(&mut self, interrupt: &Interrupt) -> Result<Look> {
        loop {
            let Some(flight) = self.flight.as_mut() else {
                return Err(Error::Connection("the reply was already taken".into()));
            };
            let value = match flight.finish(interrupt, self.deadline) {
                Err(Error::Interrupted) => return Err(Error::Interrupted),
                // Timed out: dropping this look finishes it on the runtime,
                // and a job in the late reply goes back.
                Err(err) if flight.is_alive() => return Err(err),
                other => other,
            };
            match self.step(value) {
                Step::Answer(reply) => return self.settle(reply),
                Step::Script(conn) => {
                    let mut request = self.script_request();
                    let mut replies = self.send.replies();
                    // Starts a hand-over leased and did not spend go back
                    // first, for this script too (hand_over/lease.rs).
                    let leased = self
                        .handed
                        .as_ref()
                        .and_then(|_| hand_over::abandon(self.inner.id, &self.inner.uuid));
                    if let Some(give_back) = leased {
                        request.splice(0..0, give_back);
                        replies += 1;
                    }
                    self.flight = Some(Flight::start(conn, request, replies));
                    self.inner.redis.trips.add(1);
                }
                Step::Book(conn, request, replies) => {
                    self.flight = Some(Flight::start_all(conn, request, replies));
                    self.inner.redis.trips.add(1);
                }
            }
        }
    }

    /// What the reply its flight got comes to; the flight is done.
    fn step(&mut self, value: Result<redis::Value>) -> Step {
        let flight = self.flight.take();
        match value {
            Ok(value) if lost_script(self.send, &value) => {
                self.send = Send::Load;
                Step::again(flight)
            }
            // Behind sentinels, its server became a replica: the script did
            // not run. The look goes again through the runtime's connection,
            // opened to the master the sentinels name now.
            Ok(value) if self.inner.redis.follows_master() && self.moved(&value) => {
                self.inner.redis.moved(self.generation);
                self.lost = true;
                Step::Answer(Err(Error::Connection(
                    "Redis Sentinel: the master became a replica".into(),
                )))
            }
            Ok(value) => match self.hand_over.take() {
                Some(hand_over) => match hand_over.outcome(value) {
                    Outcome::Taken(look, queued) => {
                        self.give_back(flight);
                        hand_over::note_more(self.inner.id, queued);
                        Step::Answer(Ok(look))
                    }
                    // The script decides, on the same connection.
                    Outcome::Decide(handed) => {
                        hand_over::forget(self.inner.id);
                        self.handed = Some(Box::new(handed));
                        self.send = Send::Call;
                        Step::again(flight)
                    }
                    // A keyed hand-over's second round trip, likewise.
                    Outcome::Book(hand_over, request) => {
                        let replies = hand_over.replies();
                        self.hand_over = Some(hand_over);
                        match flight.and_then(Flight::into_conn) {
                            Some(conn) => Step::Book(conn, request, replies),
                            None => Step::Answer(Err(Error::Connection("lost".into()))),
                        }
                    }
                },
                None => {
                    self.give_back(flight);
                    // Sent again (its library loaded, a hand-over's
                    // decision), the script ran a round trip later than
                    // that: its "opens in" then rings as early, and the look
                    // it wakes learns the rest.
                    let sent = self.deadline.checked_sub(self.inner.timeout);
                    let look = Look::from_value(value).map(|look| look.sent_at(sent));
                    if let Ok(look) = &look {
                        hand_over::note(self.inner.id, self.generation, look);
                    }
                    Step::Answer(look)
                }
            },
            // Broken before a reply: the script did not run, or if Redis
            // ran it and died before answering, the next reconciliation
            // pushes the job it took back.
            Err(err) => {
                self.inner.redis.moved(self.generation);
                self.lost = true;
                Step::Answer(Err(err))
            }
        }
    }

    /// Gives this thread's connection back for its next looks, once a
    /// reply left it clean.
    fn give_back(&self, flight: Option<Flight>) {
        if let Some(conn) = flight.and_then(Flight::into_conn) {
            direct::put(self.inner.id, conn);
        }
    }

    /// Its writes were another connection's than the doorbell's: Redis
    /// rings for those a sleeping fetcher tracks.
    fn settle(&mut self, reply: Result<Look>) -> Result<Look> {
        let settled = self.inner.settle(std::mem::take(&mut self.acks), reply);
        self.gate = None;
        settled
    }
}

/// Where a reply leads a direct look.
enum Step {
    /// The look's answer, to settle.
    Answer(Result<Look>),
    /// The fetch script, sent on the same connection as the look's `send`
    /// and `handed` now say: again with its library after Redis had lost
    /// it, or to decide what a hand-over left.
    Script(Direct),
    /// A keyed hand-over's second round trip on the same connection: its
    /// request and how many replies it gets.
    Book(Direct, Vec<u8>, usize),
}

impl Step {
    /// The script on the connection `flight` leaves, if it left one.
    fn again(flight: Option<Flight>) -> Step {
        match flight.and_then(Flight::into_conn) {
            Some(conn) => Step::Script(conn),
            None => Step::Answer(Err(Error::Connection("lost".into()))),
        }
    }
}

impl Drop for DirectLook {
    fn drop(&mut self) {
        let Some(flight) = self.flight.take() else {
            return;
        };
        let inner = self.inner.clone();
        let acks = std::mem::take(&mut self.acks);
        let gate = self.gate.take();
        hand_over::forget(inner.id);
        if let Some(hand_over) = self.hand_over.take() {
            flight.abandon(move |value| abandon_hand_over(inner, acks, gate, hand_over, value));
            return;
        }
        flight.abandon(move |value| {
            let reply = value.and_then(Look::from_value);
            let settled = inner.settle(acks, reply);
            drop(gate);
            if let Ok(Look {
                fetched: Some(f), ..
            }) = settled
            {
                if let Ok(handle) = crate::runtime::handle() {
                    crate::runtime::detach(&handle, async move {
                        let _ = inner.requeue(vec![(f.queue, f.job)]).await;
                    });
                }
            }
        });
    }
}
