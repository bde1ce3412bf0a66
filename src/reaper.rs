//! Frees the slots of capsules that died without deregistering.

use crate::capsule::Inner;
use crate::{keys, Result};

/// Finds registered capsules whose heartbeat key expired and frees their
/// slots on every queue, including queues this process does not serve.
pub(crate) async fn reap_dead(inner: &Inner) -> Result<Vec<(String, i64)>> {
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
        let freed = reap_one(inner, uuid, busy_lists.iter().cloned(), false).await?;
        if freed >= 0 {
            reaped.push((uuid.clone(), freed));
        }
    }
    Ok(reaped)
}

/// Every queue's busy list, found by SCAN (incremental: never blocks Redis).
async fn busy_lists(conn: &mut redis::aio::ConnectionManager) -> Result<Vec<String>> {
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

/// Frees one capsule's slots atomically; -1 if another process got there
/// first or the capsule proved alive.
pub(crate) async fn reap_one(
    inner: &Inner,
    uuid: &str,
    busy_lists: impl Iterator<Item = String>,
    deregister: bool,
) -> Result<i64> {
    let mut keys = vec![keys::CAPSULES.to_owned(), keys::heartbeat(uuid)];
    keys.extend(busy_lists);
    let mut conn = inner.conn().await?;
    inner
        .reap
        .invoke(
            &mut conn,
            &keys,
            &[uuid, if deregister { "1" } else { "0" }],
        )
        .await
}
