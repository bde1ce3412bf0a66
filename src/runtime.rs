//! The process's I/O runtime: one Tokio worker thread that drives every Redis
//! connection. Callers block on a channel (with their [`Interrupt`]) while the
//! work runs as a task, so an interrupted caller never tears a command in half.

use std::future::Future;
use std::time::Duration;

use parking_lot::{const_mutex, Mutex};
use tokio::runtime::{Builder, Handle, Runtime};
use tokio::sync::oneshot;

use crate::{Error, Interrupt, Result};

struct Bound {
    pid: u32,
    runtime: Runtime,
}

static RUNTIME: Mutex<Option<Bound>> = const_mutex(None);

/// This process's runtime, built on first use and built again in a forked
/// child, whose copy of the parent's runtime has no threads behind it.
pub(crate) fn handle() -> Result<Handle> {
    let pid = std::process::id();
    let mut slot = RUNTIME.lock();
    if let Some(bound) = slot.as_ref().filter(|b| b.pid == pid) {
        return Ok(bound.runtime.handle().clone());
    }
    if let Some(stale) = slot.take() {
        // The parent's worker thread does not exist here: dropping would wait for it.
        std::mem::forget(stale);
    }
    let runtime = Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("limit-fetch-io")
        .enable_all()
        .build()
        .map_err(|e| Error::Connection(format!("cannot start the I/O runtime: {e}")))?;
    let handle = runtime.handle().clone();
    *slot = Some(Bound { pid, runtime });
    Ok(handle)
}

/// Runs `work` to completion on the runtime and waits for its result unless
/// `interrupt` fires or `timeout` passes first. If the caller has gone by the
/// time `work` succeeds, `undo` receives the value (a fetched job goes back to
/// its queue): a late reply is never lost, as it would be if the timeout
/// dropped the command.
pub(crate) fn run<T, W, U, UF>(
    interrupt: &Interrupt,
    timeout: Duration,
    work: W,
    undo: U,
) -> Result<T>
where
    T: Send + 'static,
    W: Future<Output = Result<T>> + Send + 'static,
    U: FnOnce(T) -> UF + Send + 'static,
    UF: Future<Output = ()> + Send + 'static,
{
    if interrupt.is_triggered() {
        return Err(Error::Interrupted);
    }
    let handle = handle()?;
    let (tx, rx) = oneshot::channel();
    handle.spawn(async move {
        if let Err(Ok(value)) = tx.send(work.await) {
            undo(value).await;
        }
    });
    handle.block_on(async {
        tokio::select! {
            biased;
            result = rx => result.unwrap_or_else(|_| Err(Error::Connection("the I/O task ended unexpectedly".into()))),
            _ = interrupt.triggered() => Err(Error::Interrupted),
            _ = tokio::time::sleep(timeout) => Err(Error::Connection(format!("timed out: no reply from Redis within {timeout:?}"))),
        }
    })
}

/// [`run`] for work with nothing to undo.
pub(crate) fn run_plain<T, W>(interrupt: &Interrupt, timeout: Duration, work: W) -> Result<T>
where
    T: Send + 'static,
    W: Future<Output = Result<T>> + Send + 'static,
{
    run(interrupt, timeout, work, |_| async {})
}
