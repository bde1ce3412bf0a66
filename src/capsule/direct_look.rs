//! A look on the calling thread's own connection (see direct/), and the
//! opening of that connection. The thread writes the fetch script and reads
//! a reply already there; only a reply still to come is waited for.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::OwnedRwLockReadGuard;

use super::{Capsule, Inner};
use crate::direct::{self, Direct, Flight};
use crate::ledger::Ack;
use crate::runtime::run_plain;
use crate::script::fetch::{Look, Mode};
use crate::script::{lost_script, Send};
use crate::sentinel::moved_reply;
use crate::{Error, Interrupt, Result};

impl Capsule {
    /// Opens this thread's direct connection if it has none (and the last
    /// attempt is not too recent): the thread's next looks go through it.
    pub(crate) fn open_direct(&self, interrupt: &Interrupt) {
        let inner = &self.inner;
        if !Direct::supports(&inner.settings) || !direct::wanted(inner.id, inner.redis.generation())
        {
            return;
        }
        // Behind sentinels, to the master they name now.
        let redis = inner.redis.clone();
        let opened = run_plain(interrupt, inner.timeout, async move {
            let (generation, settings) = redis.master().await?;
            let conn = Direct::connect(&settings, generation).await?;
            Ok((conn, settings))
        })
        .and_then(|(conn, settings)| {
            conn.set_up(&settings, inner.redis.follows_master(), interrupt)
        });
        inner.redis.trips.add(1);
        direct::opened(inner.id, opened.ok());
    }
}

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
    deadline: Instant,
    /// How the script was called: with its library loaded first after
    /// Redis had lost it.
    send: Send,
    /// The connection broke before a reply came, or its server was no
    /// master any more (a failover).
    pub(super) lost: bool,
    /// The generation of the master its connection was opened to.
    generation: u64,
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
        let request = inner
            .fetch
            .packed(Send::Call, &inner.uuid, mode, &acks, queues);
        inner.redis.trips.add(1);
        Some(DirectLook {
            inner: inner.clone(),
            queues: queues.clone(),
            flight: Some(Flight::start(conn, request, Send::Call.replies())),
            mode,
            acks,
            gate: Some(gate),
            deadline: Instant::now() + inner.timeout,
            send: Send::Call,
            lost: false,
            generation,
        })
    }

    pub(super) fn is_ready(&self) -> bool {
        self.flight.as_ref().is_some_and(Flight::is_ready_value)
    }

    pub(super) fn finish(&mut self, interrupt: &Interrupt) -> Result<Look> {
        let Some(flight) = self.flight.as_mut() else {
            return Err(Error::Connection("the reply was already taken".into()));
        };
        let value = match flight.finish(interrupt, self.deadline) {
            Err(Error::Interrupted) => return Err(Error::Interrupted),
            // Timed out: dropping this look finishes it on the runtime, and a
            // job in the late reply goes back.
            Err(err) if flight.is_alive() => return Err(err),
            Ok(value) if lost_script(self.send, &value) => {
                let conn = self.flight.take().and_then(Flight::into_conn);
                let Some(conn) = conn else {
                    return self.settle(Err(Error::Connection("lost".into())));
                };
                self.send = Send::Load;
                let inner = &self.inner;
                let request =
                    inner
                        .fetch
                        .packed(self.send, &inner.uuid, self.mode, &self.acks, &self.queues);
                self.flight = Some(Flight::start(conn, request, self.send.replies()));
                inner.redis.trips.add(1);
                return self.finish(interrupt);
            }
            other => other,
        };
        let flight = self.flight.take();
        let reply = match value {
            // Behind sentinels, its server became a replica: the script did
            // not run. The look goes again through the runtime's connection,
            // opened to the master the sentinels name now.
            Ok(value) if self.inner.redis.follows_master() && moved_reply(&value) => {
                self.inner.redis.moved(self.generation);
                self.lost = true;
                Err(Error::Connection(
                    "Redis Sentinel: the master became a replica".into(),
                ))
            }
            Ok(value) => {
                if let Some(conn) = flight.and_then(Flight::into_conn) {
                    direct::put(self.inner.id, conn);
                }
                Look::from_value(value)
            }
            // Broken before a reply: the script did not run, or if Redis
            // ran it and died before answering, the next reconciliation
            // pushes the job it took back.
            Err(err) => {
                self.inner.redis.moved(self.generation);
                self.lost = true;
                Err(err)
            }
        };
        self.settle(reply)
    }

    /// Its writes were another connection's than the doorbell's: Redis
    /// rings for those a sleeping fetcher tracks.
    fn settle(&mut self, reply: Result<Look>) -> Result<Look> {
        let settled = self.inner.settle(std::mem::take(&mut self.acks), reply);
        self.gate = None;
        settled
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
        flight.abandon(move |value| {
            let reply = value.and_then(Look::from_value);
            let settled = inner.settle(acks, reply);
            drop(gate);
            if let Ok(Look {
                fetched: Some(f), ..
            }) = settled
            {
                if let Ok(handle) = crate::runtime::handle() {
                    handle.spawn(async move {
                        let _ = inner.requeue(vec![(f.queue, f.job)]).await;
                    });
                }
            }
        });
    }
}
