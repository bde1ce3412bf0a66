//! Frees the slots of capsules that died without deregistering, and pushes
//! the jobs they had in progress back to their queues: registered capsules
//! whose heartbeat expired (found by their entry in `keys::BEATS`, or by the
//! census), and capsules that hold slots while neither registered nor
//! beating (see src/lua/orphans.lua).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::connection::Conn;
use crate::format::{self, InForce};
use crate::scan;
use crate::script::{codes, LuaScript, FORMAT, ORPHANS, REAP, STRAY_QUEUES};
use crate::{keys, Result};

/// A job that a reaper or a reconciliation acted on: (queue, jid, class).
/// `jid` and `class` read "?" when the payload is not a JSON object.
pub type JobRef = (String, String, String);

/// A dead capsule this beat reaped.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Reaped {
    pub uuid: String,
    /// Busy slots freed.
    pub freed: i64,
    /// In-progress jobs pushed back to the front of their queues.
    pub requeued: i64,
    /// Of those, how many went to each queue (queues with none left out).
    pub requeued_by_queue: Vec<(String, i64)>,
    /// Jobs recovered more than `max_recoveries` times, now in the dead set.
    pub dead: Vec<JobRef>,
    /// It was not registered: found holding slots while neither registered
    /// nor beating for the grace period (see [`Reaper::reap_unregistered`]).
    pub unregistered: bool,
}

/// Why a capsule is reaped (reap.lua's ARGV[2]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reap {
    /// Registered, and its heartbeat expired.
    Dead,
    /// Its own shutdown.
    Clean,
    /// Neither registered nor beating for at least this many seconds since a
    /// beat first found it so.
    Unregistered { grace: u64 },
}

/// What reaping needs: its script and how many recoveries a job may have.
pub(crate) struct Reaper {
    script: LuaScript,
    orphans: LuaScript,
    stray_queues: LuaScript,
    format: LuaScript,
    max_recoveries: u32,
}

/// What a beat's `Reaper::reap_dead` did: the capsules it reaped, and, if
/// it took the census, the data format in force after it (see format.rs)
/// and, if the census changed it, the format it put in force.
pub(crate) struct Reaping {
    pub(crate) reaped: Vec<Reaped>,
    pub(crate) census: Option<InForce>,
    pub(crate) switched: Option<u8>,
}

impl Reaper {
    pub(crate) fn new(max_recoveries: u32) -> Self {
        Self {
            script: LuaScript::new(REAP),
            orphans: LuaScript::new(ORPHANS),
            stray_queues: LuaScript::new(STRAY_QUEUES),
            format: LuaScript::new(FORMAT),
            max_recoveries,
        }
    }

    /// Finds registered capsules whose heartbeat expired, other than `own`,
    /// frees their slots on every queue (including queues this process does not
    /// serve) and pushes their in-progress jobs back. `now_ms` is Redis's
    /// clock (see `keys::BEATS`); `census` how long this capsule holds
    /// `keys::CENSUS` if it takes it (its heartbeat period).
    ///
    /// One round trip reads the capsules whose entry in `keys::BEATS` is past
    /// and tries to take the census. Only the census, once a period across
    /// the fleet, reads every registered capsule, for those not in
    /// `keys::BEATS` (a v5 process's, an older release's), and the formats
    /// they speak, in the same round trip: it decides the data format
    /// (format.rs). Only the capsules so found are asked after (`EXISTS` of
    /// their heartbeat, which decides).
    pub(crate) async fn reap_dead(
        &self,
        conn: &mut Conn,
        own: &str,
        now_ms: i64,
        census: Duration,
    ) -> Result<Reaping> {
        let (expired, took): (Vec<String>, Option<String>) = redis::pipe()
            .cmd("ZRANGE")
            .arg(keys::BEATS)
            .arg("-inf")
            .arg(format!("({now_ms}"))
            .arg("BYSCORE")
            .cmd("SET")
            .arg(keys::CENSUS)
            .arg(own)
            .arg("NX")
            .arg("PX")
            .arg(census.as_millis().max(1) as u64)
            .query_async(conn)
            .await?;
        let mut suspects: BTreeSet<String> = expired.into_iter().collect();
        let read = match took {
            Some(_) => Some(self.census(conn).await?),
            None => None,
        };
        if let Some(read) = &read {
            suspects.extend(read.unbeaten.iter().cloned());
        }
        suspects.remove(own);
        let mut pipe = redis::pipe();
        for uuid in &suspects {
            pipe.cmd("EXISTS").arg(keys::heartbeat(uuid));
        }
        let alive: Vec<bool> = if suspects.is_empty() {
            Vec::new()
        } else {
            pipe.query_async(conn).await?
        };
        let dead: BTreeSet<&String> = suspects
            .iter()
            .zip(alive)
            .filter(|(_, a)| !a)
            .map(|(u, _)| u)
            .collect();
        let census = match &read {
            Some(read) => {
                let live = read.beating.iter().filter(|u| !dead.contains(u));
                let unbeaten_live = read.unbeaten.iter().any(|u| !dead.contains(u));
                let target = read.formats.decide(live.map(String::as_str), unbeaten_live);
                Some(format::census(&self.format, conn, &read.formats, target).await?)
            }
            None => None,
        };
        let switched = match (&read, census) {
            (Some(read), Some(after)) if after.format != read.formats.in_force.format => {
                Some(after.format)
            }
            _ => None,
        };
        let mut reaped = Vec::new();
        if !dead.is_empty() {
            let busy_lists = busy_lists(conn).await?;
            for uuid in dead {
                if let Some(done) = self
                    .reap_one(conn, uuid, busy_lists.iter().cloned(), Reap::Dead)
                    .await?
                {
                    reaped.push(done);
                }
            }
        }
        Ok(Reaping {
            reaped,
            census,
            switched,
        })
    }

    /// The census's read: the registered capsules that have no entry in
    /// `keys::BEATS`, those that have one, and the formats they speak. v5
    /// removes from the shared set the capsules it reaps, only where it
    /// serves: this gem's own set keeps them until reaped here.
    async fn census(&self, conn: &mut Conn) -> Result<Census> {
        let mut pipe = redis::pipe();
        pipe.cmd("SUNION")
            .arg(keys::CAPSULES)
            .arg(keys::REGISTERED)
            .cmd("ZRANGE")
            .arg(keys::BEATS)
            .arg(0)
            .arg(-1);
        format::Read::commands(&mut pipe);
        type Reply = (
            Vec<String>,
            Vec<String>,
            HashMap<String, String>,
            Option<String>,
        );
        let (members, beating, spoken, in_force): Reply = pipe.query_async(conn).await?;
        let beaten: HashSet<&String> = beating.iter().collect();
        let unbeaten = members
            .iter()
            .filter(|m| !beaten.contains(m))
            .cloned()
            .collect();
        Ok(Census {
            unbeaten,
            beating,
            formats: format::Read {
                spoken,
                in_force: InForce::parse(in_force.as_deref()),
            },
        })
    }

    /// One step of the census's walk over capsules' queue sets (from
    /// `cursor`; returns the cursor to go on from): the sets of capsules
    /// neither registered nor beating go, or their capsule is noted to be
    /// reaped (see src/lua/stray_queues.lua). Such a set is left when a
    /// capsule reaped while alive (frozen past its heartbeat's expiry)
    /// fetched and finished a job once it woke, and died before its next
    /// beat: nothing else would meet it.
    pub(crate) async fn sweep_stray_queues(
        &self,
        conn: &mut Conn,
        own: &str,
        cursor: u64,
    ) -> Result<u64> {
        let pattern = keys::capsule_queues("*");
        let (next, found) = scan::step(conn, &pattern, cursor).await?;
        let (before, after) = pattern.split_once('*').unwrap_or((&pattern, ""));
        let uuids: Vec<&str> = found
            .iter()
            .filter_map(|key| key.strip_prefix(before)?.strip_suffix(after))
            // A capsule's UUID has no colon: a key with one here is an
            // in-progress list (of a queue named "queues").
            .filter(|uuid| *uuid != own && !uuid.contains(':'))
            .collect();
        if !uuids.is_empty() {
            self.stray_queues
                .invoke::<(i64, i64), _, _>(conn, &[] as &[&str], &uuids[..])
                .await?;
        }
        Ok(next)
    }

    /// Reaps the capsules that hold slots in the busy lists of `served`
    /// while neither registered nor beating, once they have been so for
    /// `grace` seconds (longer than a heartbeat's expiry, so that a capsule
    /// about to register again is never touched). One script reads the busy
    /// lists and notes what it finds; one more runs per capsule to reap.
    pub(crate) async fn reap_unregistered(
        &self,
        conn: &mut Conn,
        own: &str,
        served: &[String],
        grace: u64,
    ) -> Result<Vec<Reaped>> {
        let mut args = vec![own.to_owned(), grace.to_string()];
        args.extend(served.iter().cloned());
        let ripe: Vec<String> = self.orphans.invoke(conn, &[] as &[&str], &args[..]).await?;
        let mut reaped = Vec::new();
        for uuid in ripe {
            let busy_lists = served.iter().map(|q| keys::busy(q));
            let mode = Reap::Unregistered { grace };
            if let Some(done) = self.reap_one(conn, &uuid, busy_lists, mode).await? {
                reaped.push(done);
            }
        }
        Ok(reaped)
    }

    /// Frees one capsule's slots and pushes back its in-progress jobs,
    /// atomically; `None` if another process got there first or the capsule
    /// proved alive.
    pub(crate) async fn reap_one(
        &self,
        conn: &mut Conn,
        uuid: &str,
        busy_lists: impl Iterator<Item = String>,
        why: Reap,
    ) -> Result<Option<Reaped>> {
        let mut keys = vec![keys::CAPSULES.to_owned(), keys::heartbeat(uuid)];
        keys.extend(busy_lists);
        let (mode, grace) = match why {
            Reap::Dead => (codes::REAP_DEAD, 0),
            Reap::Clean => (codes::REAP_CLEAN, 0),
            Reap::Unregistered { grace } => (codes::REAP_UNREGISTERED, grace),
        };
        let args = [
            uuid.to_owned(),
            mode.to_owned(),
            self.max_recoveries.to_string(),
            format!("{:.3}", now()),
            grace.to_string(),
        ];
        type Reply = (i64, i64, Vec<JobRef>, Vec<(String, i64)>);
        let reply: Option<Reply> = self.script.invoke(conn, &keys, &args[..]).await?;
        Ok(
            reply.map(|(freed, requeued, dead, requeued_by_queue)| Reaped {
                uuid: uuid.to_owned(),
                freed,
                requeued,
                requeued_by_queue,
                dead,
                unregistered: matches!(why, Reap::Unregistered { .. }),
            }),
        )
    }
}

/// What the census read (see `Reaper::census`).
struct Census {
    /// Registered capsules (in `keys::CAPSULES` or `keys::REGISTERED`) with
    /// no entry in `keys::BEATS`.
    unbeaten: Vec<String>,
    /// Every capsule with an entry in `keys::BEATS`.
    beating: Vec<String>,
    formats: format::Read,
}

/// Every queue's busy list, found by SCAN (incremental: never blocks Redis).
pub(crate) async fn busy_lists(conn: &mut Conn) -> Result<Vec<String>> {
    scan::keys(conn, keys::BUSY_PATTERN).await
}

/// Seconds since the epoch, for the dead set's score.
fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
