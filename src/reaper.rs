//! Frees the slots of capsules that died without deregistering, and pushes
//! the jobs they had in progress back to their queues.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::connection::Conn;
use crate::script::{LuaScript, REAP};
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
    /// Jobs recovered more than `max_recoveries` times, now in the dead set.
    pub dead: Vec<JobRef>,
}

/// What reaping needs: its script and how many recoveries a job may have.
pub(crate) struct Reaper {
    script: LuaScript,
    max_recoveries: u32,
}

impl Reaper {
    pub(crate) fn new(max_recoveries: u32) -> Self {
        Self {
            script: LuaScript::new(REAP),
            max_recoveries,
        }
    }

    /// Finds registered capsules whose heartbeat expired, other than `own`,
    /// frees their slots on every queue (including queues this process does not
    /// serve) and pushes their in-progress jobs back.
    pub(crate) async fn reap_dead(&self, conn: &mut Conn, own: &str) -> Result<Vec<Reaped>> {
        let members: Vec<String> = redis::cmd("SMEMBERS")
            .arg(keys::CAPSULES)
            .query_async(conn)
            .await?;
        let others: Vec<&String> = members.iter().filter(|m| **m != own).collect();
        if others.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for uuid in &others {
            pipe.cmd("EXISTS").arg(keys::heartbeat(uuid));
        }
        let alive: Vec<bool> = pipe.query_async(conn).await?;
        let dead: Vec<&String> = others
            .iter()
            .zip(alive)
            .filter(|(_, a)| !a)
            .map(|(u, _)| *u)
            .collect();
        if dead.is_empty() {
            return Ok(Vec::new());
        }
        let busy_lists = busy_lists(conn).await?;
        let mut reaped = Vec::new();
        for uuid in dead {
            if let Some(done) = self
                .reap_one(conn, uuid, busy_lists.iter().cloned(), false)
                .await?
            {
                reaped.push(done);
            }
        }
        Ok(reaped)
    }

    /// Frees one capsule's slots and pushes back its in-progress jobs,
    /// atomically; `None` if another process got there first or the capsule
    /// proved alive. `clean`: the capsule's own shutdown.
    pub(crate) async fn reap_one(
        &self,
        conn: &mut Conn,
        uuid: &str,
        busy_lists: impl Iterator<Item = String>,
        clean: bool,
    ) -> Result<Option<Reaped>> {
        let mut keys = vec![keys::CAPSULES.to_owned(), keys::heartbeat(uuid)];
        keys.extend(busy_lists);
        let args = [
            uuid.to_owned(),
            if clean { "1" } else { "0" }.to_owned(),
            self.max_recoveries.to_string(),
            format!("{:.3}", now()),
        ];
        let reply: Option<(i64, i64, Vec<JobRef>)> =
            self.script.invoke(conn, &keys, &args[..]).await?;
        Ok(reply.map(|(freed, requeued, dead)| Reaped {
            uuid: uuid.to_owned(),
            freed,
            requeued,
            dead,
        }))
    }
}

/// Every queue's busy list, found by SCAN (incremental: never blocks Redis).
async fn busy_lists(conn: &mut Conn) -> Result<Vec<String>> {
    let mut found = Vec::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(keys::BUSY_PATTERN)
            .arg("COUNT")
            .arg(1000)
            .query_async(conn)
            .await?;
        found.extend(batch);
        if next == 0 {
            return Ok(found);
        }
        cursor = next;
    }
}

/// Seconds since the epoch, for the dead set's score.
fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
