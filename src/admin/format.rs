//! The data format (src/format.rs) as a control plane reads and sets it:
//! `sidekiq-limits format [1|auto]`. `format 1` pins format 1, the first
//! step of a rollback to a release that reads format 1 alone, then converts
//! every datum of format 2 back to format 1 (src/lua/format.lua's
//! TO_FORMAT_1, a SCAN step a call), so that such a process finds
//! everything; `format auto` lets the census decide again.

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::format::{self, InForce, Reply};
use crate::runtime::wait_for;
use crate::script::{codes, LuaScript, FORMAT};
use crate::{keys, CapsuleEntry, Interrupt, Result};

use super::Limits;

static FORMAT_SCRIPT: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::new(FORMAT));

/// The data format in force, and what each live capsule speaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFormat {
    pub in_force: InForce,
    /// Each live capsule (registered, its heartbeat present), with the
    /// highest format it speaks: 1 for one that does not say (of an older
    /// release, or v5's).
    pub capsules: Vec<(CapsuleEntry, u8)>,
}

/// What `format 1` or `format auto` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormatChange {
    /// In force before.
    pub was: InForce,
    /// In force after.
    pub in_force: InForce,
    /// Data of format 2 converted back to format 1 (`format 1`).
    pub converted: u64,
}

impl Limits {
    /// The format in force, and each live capsule's highest format.
    pub fn data_format(&self, interrupt: &Interrupt) -> Result<DataFormat> {
        let capsules = self.capsules(interrupt)?;
        let redis = self.redis().clone();
        let (spoken, value): (HashMap<String, String>, Option<String>) =
            wait_for(interrupt, self.timeout(), async move {
                let mut pipe = redis::pipe();
                pipe.cmd("HGETALL")
                    .arg(keys::FORMATS)
                    .cmd("GET")
                    .arg(keys::FORMAT);
                Ok(pipe.query_async(&mut redis.conn().await?).await?)
            })?;
        let capsules = capsules
            .into_iter()
            .filter(|c| c.heartbeat_left_ms.is_some())
            .map(|c| {
                let highest = format::spoken(spoken.get(&c.uuid));
                (c, highest)
            })
            .collect();
        Ok(DataFormat {
            in_force: InForce::parse(value.as_deref()),
            capsules,
        })
    }

    /// Pins format 1 (the census leaves it be until [`Limits::unpin_format`]),
    /// then converts every datum of format 2 back to format 1, a SCAN step
    /// a round trip.
    pub fn pin_format_1(&self, interrupt: &Interrupt) -> Result<FormatChange> {
        let (mut change, kinds) = self.set_format(codes::FORMAT_PIN, interrupt)?;
        for kind in 1..=kinds {
            let mut cursor = "0".to_owned();
            loop {
                let redis = self.redis().clone();
                let args = [codes::FORMAT_CONVERT.to_owned(), kind.to_string(), cursor];
                let (next, converted): (String, u64) =
                    wait_for(interrupt, self.timeout(), async move {
                        let mut conn = redis.writer().await?;
                        FORMAT_SCRIPT
                            .invoke(&mut conn, &[] as &[&str], &args[..])
                            .await
                    })?;
                change.converted += converted;
                if next == "0" {
                    break;
                }
                cursor = next;
            }
        }
        Ok(change)
    }

    /// Unpins the format: the census decides again, at its next count.
    pub fn unpin_format(&self, interrupt: &Interrupt) -> Result<FormatChange> {
        Ok(self.set_format(codes::FORMAT_AUTO, interrupt)?.0)
    }

    /// Runs src/lua/format.lua's `mode`; returns what it changed and how
    /// many kinds of data it converts.
    fn set_format(&self, mode: &'static str, interrupt: &Interrupt) -> Result<(FormatChange, u64)> {
        let redis = self.redis().clone();
        let (after, kinds, was): Reply = wait_for(interrupt, self.timeout(), async move {
            let mut conn = redis.writer().await?;
            FORMAT_SCRIPT
                .invoke(&mut conn, &[] as &[&str], &[mode][..])
                .await
        })?;
        let change = FormatChange {
            was: InForce::from_reply(was),
            in_force: InForce::from_reply(after),
            converted: 0,
        };
        Ok((change, kinds))
    }
}
