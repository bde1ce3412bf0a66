//! Frees the slots of capsules that died without deregistering, and pushes
//! the jobs they had in progress back to their queues.

use crate::capsule::{now, Inner, JobRef, Reaped};
use crate::{keys, Result};

/// Finds registered capsules whose heartbeat expired, frees their slots on
/// every queue (including queues this process does not serve) and pushes
/// their in-progress jobs back.
pub(crate) async fn reap_dead(inner: &Inner) -> Result<Vec<Reaped>> {
    let mut conn = inner.conn().await?;
    let members: Vec<String> = redis::cmd("SMEMBERS")
        .arg(keys::CAPSULES)
        .query_async(&mut conn)
        .await?;
    let others: Vec<&String> = members.iter().filter(|m| **m != inner.uuid).collect();
    if others.is_empty() {
        return Ok(Vec::new());
    }
    let mut pipe = redis::pipe();
    for uuid in &others {
        pipe.cmd("EXISTS").arg(keys::heartbeat(uuid));
    }
    let alive: Vec<bool> = pipe.query_async(&mut conn).await?;
    let dead: Vec<&String> = others
        .iter()
        .zip(alive)
        .filter(|(_, a)| !a)
        .map(|(u, _)| *u)
        .collect();
    if dead.is_empty() {
        return Ok(Vec::new());
    }
    let busy_lists = busy_lists(&mut conn).await?;
    let mut reaped = Vec::new();
    for uuid in dead {
        if let Some(done) = reap_one(inner, uuid, busy_lists.iter().cloned(), false).await? {
            reaped.push(done);
        }
    }
    Ok(reaped)
}

/// Every queue's busy list, found by SCAN (incremental: never blocks Redis).
async fn busy_lists(conn: &mut crate::connection::Conn) -> Result<Vec<String>> {
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

/// Frees one capsule's slots and pushes back its in-progress jobs,
/// atomically; `None` if another process got there first or the capsule
/// proved alive. `clean`: the capsule's own shutdown.
pub(crate) async fn reap_one(
    inner: &Inner,
    uuid: &str,
    busy_lists: impl Iterator<Item = String>,
    clean: bool,
) -> Result<Option<Reaped>> {
    let mut keys = vec![keys::CAPSULES.to_owned(), keys::heartbeat(uuid)];
    keys.extend(busy_lists);
    let args = [
        uuid.to_owned(),
        if clean { "1" } else { "0" }.to_owned(),
        inner.max_recoveries.to_string(),
        format!("{:.3}", now()),
    ];
    let mut conn = inner.conn().await?;
    let reply: Option<(i64, i64, Vec<JobRef>)> =
        inner.reap.invoke(&mut conn, &keys, &args[..]).await?;
    Ok(reply.map(|(freed, requeued, dead)| Reaped {
        uuid: uuid.to_owned(),
        freed,
        requeued,
        dead,
    }))
}
