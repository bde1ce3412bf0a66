//! The process's I/O runtime: one thread, "limit-fetch-io", that drives
//! every Redis connection. Callers block on a channel (with their
//! [`Interrupt`]) while the work runs as a task, so an interrupted caller
//! never tears a command in half.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{const_mutex, Mutex};
use tokio::runtime::{Builder, Handle};
use tokio::sync::oneshot;

use crate::process::{ForkLocal, Stale};
use crate::{Error, Interrupt, Result};

/// The parent's handle is forgotten in a child: the thread that drives its
/// runtime does not exist there.
static RUNTIME: Mutex<ForkLocal<Option<Handle>>> = const_mutex(ForkLocal::new(None, Stale::Forget));

/// This process's runtime, built on first use and built again in a forked
/// child, whose copy of the parent's has no thread behind it.
///
/// A current-thread runtime that its own thread drives for the process's
/// life (`block_on` of a future that never ends): the other threads reach it
/// through the handle, spawning tasks and waiting in `Handle::block_on`,
/// whose timers and sockets that thread serves. One scheduler's code, not
/// the work-stealing one's too, in a library mapped into every process.
pub(crate) fn handle() -> Result<Handle> {
    let mut local = RUNTIME.lock();
    let slot = local.get();
    if let Some(handle) = slot.as_ref() {
        return Ok(handle.clone());
    }
    let runtime = Builder::new_current_thread()
        .thread_name("limit-fetch-io")
        .enable_all()
        .build()
        .map_err(|e| Error::Connection(format!("cannot start the I/O runtime: {e}")))?;
    let handle = runtime.handle().clone();
    std::thread::Builder::new()
        .name("limit-fetch-io".into())
        .spawn(move || runtime.block_on(std::future::pending::<()>()))
        .map_err(|e| Error::Connection(format!("cannot start the I/O thread: {e}")))?;
    *slot = Some(handle.clone());
    Ok(handle)
}

type Undo<T> = Box<dyn FnOnce(T) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// Whichever side finds the value unclaimed runs it: the task when its
/// caller has gone, or the dropped [`Pending`] when the value arrived after
/// its caller stopped listening.
type SharedUndo<T> = Arc<Mutex<Option<Undo<T>>>>;

/// A Redis operation running on the runtime, whose result a caller waits for.
/// Dropping it walks away: the operation still completes, and a value it
/// produces that the caller did not take goes to its `undo` (see [`spawn`]).
pub struct Pending<T: Send + 'static> {
    rx: Option<oneshot::Receiver<Result<T>>>,
    undo: SharedUndo<T>,
    deadline: Instant,
    timeout: Duration,
}

impl<T: Send + 'static> Pending<T> {
    /// Waits for the result until `interrupt` fires or the deadline set at
    /// [`spawn`] passes. An interrupt leaves the operation pending: a caller
    /// whose interrupt turned out to be harmless (a signal nobody traps)
    /// waits again, with a fresh [`Interrupt`], for the same reply.
    pub fn wait(&mut self, interrupt: &Interrupt) -> Result<T> {
        if interrupt.is_triggered() {
            return Err(Error::Interrupted);
        }
        let Some(rx) = self.rx.as_mut() else {
            return Err(Error::Connection("the reply was already taken".into()));
        };
        let handle = handle()?;
        let timeout = self.timeout;
        let deadline = tokio::time::Instant::from_std(self.deadline);
        let outcome = handle.block_on(async {
            tokio::select! {
                biased;
                result = rx => Some(result.unwrap_or_else(|_| Err(Error::Connection("the I/O task ended unexpectedly".into())))),
                _ = interrupt.triggered() => None,
                _ = tokio::time::sleep_until(deadline) => Some(Err(Error::Connection(format!("timed out: no reply from Redis within {timeout:?}")))),
            }
        });
        match outcome {
            Some(result) => {
                self.rx = None;
                result
            }
            None => Err(Error::Interrupted),
        }
    }
}

impl<T: Send + 'static> Drop for Pending<T> {
    fn drop(&mut self) {
        let Some(mut rx) = self.rx.take() else { return };
        // From here on the task's send fails and the task undoes; a value
        // that is already here is undone now.
        rx.close();
        if let Ok(Ok(value)) = rx.try_recv() {
            if let (Some(undo), Ok(handle)) = (self.undo.lock().take(), handle()) {
                handle.spawn(undo(value));
            }
        }
    }
}

/// Starts `work` on the runtime; its caller waits through the returned
/// [`Pending`] for at most `timeout`. If the caller has gone by the time
/// `work` succeeds, `undo` receives the value (a fetched job goes back to its
/// queue): a late reply is never lost, as it would be if the timeout dropped
/// the command.
pub(crate) fn spawn<T, W, U, UF>(timeout: Duration, work: W, undo: U) -> Result<Pending<T>>
where
    T: Send + 'static,
    W: Future<Output = Result<T>> + Send + 'static,
    U: FnOnce(T) -> UF + Send + 'static,
    UF: Future<Output = ()> + Send + 'static,
{
    let undo: Undo<T> = Box::new(move |value| Box::pin(undo(value)));
    spawn_boxed(timeout, Box::pin(work), undo)
}

/// [`spawn`] for a boxed `work`: one task type (and its code) per `T`, not
/// one per caller's future. The extension's code is mapped into every
/// Sidekiq process, and most of it stays resident; these tasks are not on
/// a fetch's path of a plain connection (`direct/`).
fn spawn_boxed<T: Send + 'static>(
    timeout: Duration,
    work: Pin<Box<dyn Future<Output = Result<T>> + Send>>,
    undo: Undo<T>,
) -> Result<Pending<T>> {
    let handle = handle()?;
    let (tx, rx) = oneshot::channel();
    let undo: SharedUndo<T> = Arc::new(Mutex::new(Some(undo)));
    let task_undo = undo.clone();
    handle.spawn(async move {
        if let Err(Ok(value)) = tx.send(work.await) {
            let undo = task_undo.lock().take();
            if let Some(undo) = undo {
                undo(value).await;
            }
        }
    });
    Ok(Pending {
        rx: Some(rx),
        undo,
        deadline: Instant::now() + timeout,
        timeout,
    })
}

/// Runs `task` on the runtime, nobody waiting for it. Boxed, as
/// [`spawn_boxed`]'s work: one task type, and one copy of the runtime's
/// code for it, for every such task rather than one per caller's future.
pub(crate) fn detach(handle: &Handle, task: impl Future<Output = ()> + Send + 'static) {
    let task: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(task);
    handle.spawn(task);
}

/// Runs `work` (with nothing to undo) and waits for its result unless
/// `interrupt` fires or `timeout` passes first.
pub(crate) fn wait_for<T, W>(interrupt: &Interrupt, timeout: Duration, work: W) -> Result<T>
where
    T: Send + 'static,
    W: Future<Output = Result<T>> + Send + 'static,
{
    if interrupt.is_triggered() {
        return Err(Error::Interrupted);
    }
    spawn(timeout, work, |_| async {})?.wait(interrupt)
}
