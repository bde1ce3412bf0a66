use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::Notify;

/// A one-shot signal that cuts a blocking call short.
///
/// A binding triggers it from its interpreter's "unblock" callback (for Ruby:
/// the UBF run on `Thread#raise`/`Thread#kill`). Triggering is cheap and safe
/// from any thread, any number of times.
#[derive(Debug, Default)]
pub struct Interrupt {
    fired: AtomicBool,
    notify: Notify,
}

impl Interrupt {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn trigger(&self) {
        self.fired.store(true, Ordering::SeqCst);
        // notify_one stores a permit, so a waiter that arrives later still wakes.
        self.notify.notify_one();
    }

    pub fn is_triggered(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }

    pub(crate) async fn triggered(&self) {
        while !self.is_triggered() {
            self.notify.notified().await;
        }
    }
}
