//! A fetching thread's own connection, driven by that thread, as Sidekiq's
//! own client drives its sockets: the thread writes its request and, if the
//! reply is already there, reads it on the spot; only a reply still to come
//! is waited for, in poll(2) (without the GVL, interruptibly). No other
//! thread is woken on the hot path.
//!
//! A request whose caller walks away is finished on the I/O runtime, which
//! takes the socket over, so that a job in its reply still goes back.

mod conn;
mod flight;
mod open;
mod poll;
mod registry;
mod resp;

pub(crate) use conn::Direct;
pub(crate) use flight::Flight;
pub(crate) use open::open;
pub(crate) use registry::{has, put, take};
