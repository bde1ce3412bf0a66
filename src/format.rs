//! The data format the fleet's processes write and read in
//! (`keys::FORMAT`): format 1, what every release of the gem and v5 speak,
//! until every live capsule speaks format 2; back to 1 as soon as one does
//! not. Each capsule says the highest format it speaks with its
//! registration (`keys::FORMATS`); the census (`keys::CENSUS`, once a
//! heartbeat period across the fleet) decides, and writes the key only when
//! the format changes; `sidekiq-limits format 1` pins format 1, and the
//! census leaves a pinned format be until `format auto` (admin/format.rs).
//! The scripts read it in the same call that counts and writes
//! (src/lua/prelude/format.lua's `data_format`); src/lua/format.lua sets it.

use std::collections::HashMap;

use crate::connection::Conn;
use crate::script::{codes, LuaScript};
use crate::{keys, Result};

/// The highest data format this version speaks: what its capsules say in
/// `keys::FORMATS`.
pub const HIGHEST: u8 = 2;

/// The format in force, as `keys::FORMAT` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InForce {
    /// 1 or 2.
    pub format: u8,
    /// When it took effect, in milliseconds of Redis's clock (0: format 1
    /// since forever, the key absent).
    pub since_ms: u64,
    /// `sidekiq-limits format 1` holds it: the census leaves it be.
    pub pinned: bool,
}

impl InForce {
    /// From the key's value, as prelude/format.lua's `parse_format` reads
    /// it: `"<format>:<since_ms>"`, `":pinned"` after; absent or unreadable
    /// (written by hand), format 1 since 0, which every process speaks.
    pub fn parse(value: Option<&str>) -> Self {
        let none = Self {
            format: 1,
            since_ms: 0,
            pinned: false,
        };
        let Some(value) = value else { return none };
        let mut fields = value.splitn(3, ':');
        let format = fields.next().and_then(digits::<u8>);
        let since_ms = fields.next().and_then(digits::<u64>);
        let pinned = match fields.next() {
            None => false,
            Some("pinned") => true,
            Some(_) => return none,
        };
        match (format, since_ms) {
            (Some(format @ (1 | 2)), Some(since_ms)) => Self {
                format,
                since_ms,
                pinned,
            },
            _ => none,
        }
    }

    /// From src/lua/format.lua's reply: format, since, pinned (1 or 0).
    pub(crate) fn from_reply((format, since_ms, pinned): (u8, u64, u8)) -> Self {
        Self {
            format,
            since_ms,
            pinned: pinned == 1,
        }
    }
}

/// src/lua/format.lua's reply (but FORMAT_CONVERT's): the format in force
/// after it (format, since, pinned as 1 or 0), how many kinds of data it
/// converts, what was in force before.
pub(crate) type Reply = ((u8, u64, u8), u64, (u8, u64, u8));

/// A field of ASCII digits alone (Lua's `%d+`), as a number.
fn digits<T: std::str::FromStr>(field: &str) -> Option<T> {
    if field.is_empty() || !field.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    field.parse().ok()
}

/// What the census read for its decision, with what it reads anyway (see
/// `Reaper::reap_dead`): each capsule's highest format by UUID
/// (`keys::FORMATS`), and the format in force.
pub(crate) struct Read {
    pub(crate) spoken: HashMap<String, String>,
    pub(crate) in_force: InForce,
}

impl Read {
    /// The commands that read it, for the census's pipeline: an `HGETALL`
    /// and a `GET`.
    pub(crate) fn commands(pipe: &mut redis::Pipeline) {
        pipe.cmd("HGETALL")
            .arg(keys::FORMATS)
            .cmd("GET")
            .arg(keys::FORMAT);
    }

    /// The format the fleet speaks: 2 when each capsule of `live` (the
    /// registered capsules in `keys::BEATS` that are alive) says it speaks
    /// 2, and no live capsule is without an entry in `keys::BEATS`
    /// (`unbeaten_live`: v5's, an older release's); else 1.
    pub(crate) fn decide<'a>(
        &self,
        mut live: impl Iterator<Item = &'a str>,
        unbeaten_live: bool,
    ) -> u8 {
        let all = live.all(|uuid| spoken(self.spoken.get(uuid)) >= 2);
        if all && !unbeaten_live {
            2
        } else {
            1
        }
    }
}

/// The highest format a capsule's entry in `keys::FORMATS` says, read as
/// src/lua/format.lua reads it: none, or one that is not a number (written
/// by hand), is format 1.
pub(crate) fn spoken(entry: Option<&String>) -> u8 {
    entry.and_then(|e| e.parse().ok()).unwrap_or(1)
}

/// Puts `target` in force, if it is not and the format is not pinned: the
/// script checks again, in the same step, that every live capsule speaks
/// format 2 before it puts 2 in force. Returns what is in force after.
pub(crate) async fn census(
    script: &LuaScript,
    conn: &mut Conn,
    read: &Read,
    target: u8,
) -> Result<InForce> {
    if read.in_force.pinned || read.in_force.format == target {
        return Ok(read.in_force);
    }
    let args = [codes::FORMAT_CENSUS.to_owned(), target.to_string()];
    let reply: Reply = script.invoke(conn, &[] as &[&str], &args[..]).await?;
    Ok(InForce::from_reply(reply.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_value_reads_as_the_prelude_reads_it() {
        let cases = [
            (None, (1, 0, false)),
            (Some("2:1700000000123"), (2, 1_700_000_000_123, false)),
            (Some("1:5:pinned"), (1, 5, true)),
            (Some("2:5:pinned"), (2, 5, true)),
            (Some("3:5"), (1, 0, false)),
            (Some("2:"), (1, 0, false)),
            (Some("2:5:other"), (1, 0, false)),
            (Some("2:-5"), (1, 0, false)),
            (Some("+2:5"), (1, 0, false)),
            (Some(""), (1, 0, false)),
        ];
        for (value, (format, since_ms, pinned)) in cases {
            let want = InForce {
                format,
                since_ms,
                pinned,
            };
            assert_eq!(InForce::parse(value), want, "{value:?}");
        }
    }
}
