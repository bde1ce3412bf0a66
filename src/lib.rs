//! Core of `sidekiq-limit_fetch-rs`: per-queue concurrency limits for Sidekiq,
//! enforced atomically in Redis.
//!
//! The crate knows nothing of Ruby. Every public operation is synchronous and
//! takes an [`Interrupt`], so that a binding can run it without holding its
//! interpreter's lock and still cut the wait short. The Redis work runs on a
//! small, fork-aware Tokio runtime ([`runtime`]), which lets an interrupted
//! caller walk away while the command it started still completes (and, for a
//! fetch, puts the job back) instead of being torn in half; the hot path, a
//! fetch, runs on the calling thread's own connection ([`direct`]), which the
//! runtime takes over if the caller walks away.

mod acl;
mod admin;
mod block;
mod capsule;
mod carried;
mod connection;
mod denial;
mod direct;
mod doorbell;
mod error;
pub mod format;
mod interrupt;
pub mod keys;
mod ledger;
mod limits;
mod process;
mod rates;
mod reaper;
mod runtime;
mod scan;
mod script;
mod sentinel;
mod settings;

pub use admin::{
    BackOff, BackOffState, BackedOff, CapsuleEntry, DataFormat, FairClass, FairTenant,
    FormatChange, JobLimitState, Limits, Pause, QueueReleased, QueueState, QueueWaiting, RateOf,
    RateWindow, Released, StoredLimit, Waiting,
};
pub use capsule::{BeatReport, Capsule, CapsuleOptions, Fetch, Rebooked, Wait};
pub use error::{Error, Result};
pub use interrupt::Interrupt;
pub use limits::{Adaptive, LimitKind, LimitValue};
pub use rates::{Rate, MAX_PERIOD, MIN_PERIOD};
pub use reaper::{JobRef, Reaped};
pub use runtime::Pending;
pub use script::fetch::{Discarded, Fetched};
pub use settings::{ConnectionSettings, SentinelSettings, Tls};
