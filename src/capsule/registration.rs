//! A capsule's registration in Redis: its heartbeat key and membership,
//! written by each beat (and, after a break, the outage key), and its
//! removal at shutdown.

use redis::Value;

use crate::acl;
use crate::admin::{write_defaults, INFO_TTL_SECS};
use crate::connection::Conn;
use crate::format;
use crate::keys;
use crate::reaper::Reap;
use crate::runtime::wait_for;
use crate::{Interrupt, Result};

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::continuity::Stretch;
use super::{Capsule, Inner};

/// What a registration found.
pub(super) struct Registered {
    /// The heartbeat key was gone.
    pub(super) restored: bool,
    /// Configured limits were missing (and written again).
    pub(super) lost_data: bool,
    /// The outage key exists: no reaping.
    pub(super) held_off: bool,
    /// Another capsule had registered (beaten) within an expiry before (see
    /// `keys::LAST_BEAT`).
    pub(super) vouched: bool,
    /// Redis's clock when it ran the registration, in milliseconds: the
    /// reaper's now for `keys::BEATS`.
    pub(super) now_ms: i64,
}

impl Capsule {
    /// Refuses a server or a user that cannot run the gem
    /// ([`Error::Refused`](crate::Error::Refused), see acl.rs): a server
    /// older than Redis 7.0, or a command the ACL denies on the keys of the
    /// queues [`Capsule::serve`] named. Run at boot, before the capsule
    /// writes anything, so that no script stops partway for want of a
    /// permission.
    pub fn check_server(&self, interrupt: &Interrupt) -> Result<()> {
        let inner = self.inner.clone();
        wait_for(interrupt, self.inner.timeout, async move {
            inner.check_server(&mut inner.redis.conn().await?).await
        })
    }

    /// Registers this capsule (heartbeat key and membership), as a beat
    /// does; the first registration begins its stretch of beats (see
    /// `Continuity`).
    pub fn register(&self, interrupt: &Interrupt) -> Result<()> {
        let inner = self.inner.clone();
        let expiry = Duration::from_secs(inner.heartbeat_ttl);
        let stretch = inner.continuity.lock().current(Instant::now(), expiry);
        let registered = wait_for(interrupt, self.inner.timeout, async move {
            let started = Instant::now();
            let registered = inner
                .register(&mut inner.redis.conn().await?, false, false)
                .await?;
            Ok(stretch.unwrap_or(Stretch {
                since: started,
                vouched: registered.vouched,
            }))
        });
        self.inner
            .continuity
            .lock()
            .record(registered.as_ref().ok().copied());
        registered.map(drop)
    }

    /// Removes this capsule after sending its pending acknowledgements: its
    /// heartbeat, its membership, every slot it still holds in `queues` or in
    /// any queue it fetched from, and its in-progress lists, whose jobs go
    /// back to their queues. Returns the number of slots freed.
    pub fn deregister<S: AsRef<str>>(&self, queues: &[S], interrupt: &Interrupt) -> Result<i64> {
        let inner = self.inner.clone();
        let names: Vec<String> = queues.iter().map(|q| q.as_ref().to_owned()).collect();
        wait_for(interrupt, self.inner.timeout * 4, async move {
            inner.flush().await?;
            let _exclusive = inner.gate.write().await;
            let mut names = names;
            names.extend(inner.ledger().queues().cloned());
            names.sort();
            names.dedup();
            let busy_lists = names.iter().map(|q| keys::busy(q));
            let mut conn = inner.redis.conn().await?;
            let reaped = inner
                .reaper
                .reap_one(&mut conn, &inner.uuid, busy_lists, Reap::Clean)
                .await?;
            Ok(reaped.map_or(0, |r| r.freed))
        })
    }
}

impl Inner {
    /// Refuses a server older than [`acl::MIN_VERSION`] (from `HELLO`, in
    /// the protocol the connection speaks), then a user denied any command
    /// the gem sends on the capsule's keys.
    async fn check_server(&self, conn: &mut Conn) -> Result<()> {
        let hello: Value = redis::cmd("HELLO").arg(3).query_async(conn).await?;
        acl::check_version(&hello)?;
        let queues = self.served.lock().clone();
        let setup = acl::Setup {
            uuid: &self.uuid,
            queues: &queues,
            sentinel: self.settings.sentinel.is_some(),
            db: self.settings.db,
        };
        acl::check_commands(conn, &setup).await
    }

    /// Sets the heartbeat and membership, `keys::LAST_BEAT` if the capsule
    /// is a `witness` (see `Stretch::witness`), and after a break in the beats
    /// (`broken`) the outage key. If the heartbeat key was gone, writes the
    /// configured limits again where unset.
    /// The heartbeat holds what v5's reaper takes for alive (`"1"`), so
    /// that its processes, sharing the Redis during a migration, leave this
    /// capsule be. Registering also ends a note that the capsule was found
    /// unregistered (see src/lua/orphans.lua): it is alive. Its entry in
    /// `keys::BEATS` is scored by when the heartbeat expires, by Redis's
    /// clock as the last registration's `TIME` showed it (by this
    /// process's own at the first: a clock ahead of Redis's by more than a
    /// period delays, until the next beat, the reaping of a capsule killed
    /// right after it started; one behind makes the reapers ask after its
    /// heartbeat, which still decides).
    pub(super) async fn register(
        &self,
        conn: &mut Conn,
        broken: bool,
        witness: bool,
    ) -> Result<Registered> {
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("EXISTS")
            .arg(keys::heartbeat(&self.uuid))
            .cmd("GET")
            .arg(keys::LAST_BEAT);
        // Only a witness vouches for Redis: a capsule that began while no
        // capsule beat would otherwise vouch for the next to start.
        if witness {
            pipe.cmd("SET")
                .arg(keys::LAST_BEAT)
                .arg(&self.uuid)
                .arg("EX")
                .arg(self.heartbeat_ttl)
                .ignore();
        }
        pipe.cmd("SET")
            .arg(keys::heartbeat(&self.uuid))
            .arg(keys::ALIVE)
            .arg("EX")
            .arg(self.heartbeat_ttl)
            .ignore()
            .cmd("SADD")
            .arg(keys::CAPSULES)
            .arg(&self.uuid)
            .ignore()
            .cmd("SADD")
            .arg(keys::REGISTERED)
            .arg(&self.uuid)
            .ignore()
            .cmd("ZADD")
            .arg(keys::BEATS)
            .arg(self.expires_at_ms())
            .arg(&self.uuid)
            .ignore()
            .cmd("HDEL")
            .arg(keys::UNREGISTERED)
            .arg(&self.uuid)
            .ignore();
        // The formats it speaks, for the census (format.rs), with the
        // heartbeat at its first registration and after a break (it may
        // have been reaped), so that no census meets it registered without
        // them; not at every beat: an idle capsule's beat sends no command
        // more for them.
        let say_format = broken || !self.format_said.load(Ordering::Acquire);
        if say_format {
            say_formats(&mut pipe, &self.uuid);
        }
        if broken {
            outage(&mut pipe, &self.uuid, self.heartbeat_ttl);
        }
        pipe.cmd("EXISTS").arg(keys::OUTAGE);
        if let Some(info) = self.info.lock().as_deref() {
            pipe.cmd("SET")
                .arg(keys::capsule_info(&self.uuid))
                .arg(info)
                .arg("EX")
                .arg(self.heartbeat_ttl + INFO_TTL_SECS)
                .ignore();
        }
        pipe.cmd("TIME");
        let sent = local_ms();
        let (existed, last_beat, held_off, (secs, micros)): Reply = pipe.query_async(conn).await?;
        let now_ms = secs * 1000 + micros / 1000;
        // Redis ran it between the sending and the reply: the middle.
        let here = sent + (local_ms() - sent) / 2;
        *self.clock_offset_ms.lock() = Some(now_ms - here);
        let mut lost_data = false;
        if !existed && !say_format {
            // Gone with the heartbeat, which only a reap or a Redis that
            // lost its data removes.
            let mut pipe = redis::pipe();
            say_formats(&mut pipe, &self.uuid);
            pipe.query_async::<()>(conn).await?;
        }
        self.format_said.store(true, Ordering::Release);
        if !existed {
            let mut defaults = self.defaults.lock().clone();
            defaults.extend(self.default_rates.lock().iter().cloned());
            defaults.extend(self.default_ranges.lock().iter().cloned());
            lost_data = write_defaults(conn, &defaults).await? > 0;
        }
        Ok(Registered {
            restored: !existed,
            lost_data,
            held_off,
            vouched: last_beat.is_some_and(|uuid| uuid != self.uuid),
            now_ms,
        })
    }

    /// When a heartbeat written now expires, in milliseconds of Redis's
    /// clock as this capsule reckons it (see `Inner::register`).
    fn expires_at_ms(&self) -> i64 {
        let offset = self.clock_offset_ms.lock().unwrap_or(0);
        local_ms() + offset + self.heartbeat_ttl as i64 * 1000
    }

    /// Sets the outage key: nobody reaps for a heartbeat's expiry.
    pub(super) async fn hold_off_reaping(&self, conn: &mut Conn) -> Result<()> {
        let mut pipe = redis::pipe();
        outage(&mut pipe, &self.uuid, self.heartbeat_ttl);
        pipe.query_async::<()>(conn).await?;
        Ok(())
    }
}

/// A registration's replies: the heartbeat key existed, the last beat's
/// UUID, the outage key exists, Redis's `TIME` (seconds, microseconds).
type Reply = (bool, Option<String>, bool, (i64, i64));

/// This process's clock, in milliseconds since the epoch.
fn local_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// `HSET` of the highest data format this capsule speaks (see format.rs).
fn say_formats(pipe: &mut redis::Pipeline, uuid: &str) {
    pipe.cmd("HSET")
        .arg(keys::FORMATS)
        .arg(uuid)
        .arg(format::HIGHEST)
        .ignore();
}

/// `SET` of the outage key for a heartbeat's expiry (`ttl` seconds).
fn outage(pipe: &mut redis::Pipeline, uuid: &str, ttl: u64) {
    pipe.cmd("SET")
        .arg(keys::OUTAGE)
        .arg(uuid)
        .arg("EX")
        .arg(ttl)
        .ignore();
}
