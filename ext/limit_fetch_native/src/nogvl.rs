//! Runs core calls without the GVL, interruptibly.
//!
//! The closure runs with the GVL released; Ruby's unblock function (called on
//! `Thread#raise`, `Thread#kill` and signals) triggers the call's
//! [`Interrupt`], which the core waits on beside its Redis work. Pending
//! interrupts are raised only once the closure has returned, through
//! `rb_protect`, so no longjmp crosses Rust frames.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::null_mut;

use limit_fetch_core::{Error as CoreError, Interrupt};
use magnus::{Error, Ruby};
use rb_sys::{rb_thread_call_without_gvl2, rb_thread_check_ints, Qnil};

use crate::errors::{panic_error, to_ruby};

struct Call<'a, F, T> {
    work: Option<F>,
    interrupt: &'a Interrupt,
    outcome: Option<std::thread::Result<T>>,
}

unsafe extern "C" fn body<F, T>(arg: *mut c_void) -> *mut c_void
where
    F: FnOnce(&Interrupt) -> T,
{
    // SAFETY: `arg` is the `Call` that `without_gvl` keeps alive across the call.
    let call = unsafe { &mut *(arg as *mut Call<'_, F, T>) };
    if let Some(work) = call.work.take() {
        let interrupt = call.interrupt;
        call.outcome = Some(catch_unwind(AssertUnwindSafe(|| work(interrupt))));
    }
    null_mut()
}

unsafe extern "C" fn unblock(arg: *mut c_void) {
    // SAFETY: `arg` is the `Interrupt` that `without_gvl` keeps alive across the call.
    let interrupt = unsafe { &*(arg as *const Interrupt) };
    interrupt.trigger();
}

/// Runs `work` without the GVL. `None` means Ruby interrupted the thread
/// before `work` could finish; `work` has then seen its `Interrupt` fire.
/// An interrupt that raises nothing and comes before `work` starts (Ruby
/// checks for them first) does not stop it from running.
/// Pending `Thread#raise`/`#kill` are raised as the returned `Err`.
pub fn without_gvl<F, T>(ruby: &Ruby, work: F) -> Result<Option<T>, Error>
where
    F: FnOnce(&Interrupt) -> T,
{
    without_gvl_or(ruby, work, drop)
}

/// [`without_gvl`], handing a finished result to `abandon` when a pending
/// interrupt is raised instead of returning it (a fetched job goes back).
pub fn without_gvl_or<F, T>(
    ruby: &Ruby,
    work: F,
    abandon: impl FnOnce(T),
) -> Result<Option<T>, Error>
where
    F: FnOnce(&Interrupt) -> T,
{
    let interrupt = Interrupt::new();
    let mut call = Call {
        work: Some(work),
        interrupt: &interrupt,
        outcome: None,
    };
    loop {
        // SAFETY: both pointers outlive the call, which returns only after
        // `body` has finished (or never started) and after Ruby stopped using
        // `unblock`.
        unsafe {
            rb_thread_call_without_gvl2(
                Some(body::<F, T>),
                &mut call as *mut Call<'_, F, T> as *mut c_void,
                Some(unblock),
                &interrupt as *const Interrupt as *mut c_void,
            );
        }
        // SAFETY: called with the GVL held; a raise is caught by rb_protect.
        let pending = magnus::rb_sys::protect(|| unsafe {
            rb_thread_check_ints();
            Qnil as _
        });
        if let Err(raised) = pending {
            if let Some(Ok(value)) = call.outcome.take() {
                abandon(value);
            }
            return Err(raised);
        }
        // `rb_thread_call_without_gvl2` does not start the body while any
        // interrupt is pending, a timer's thread switch or a finalizer's
        // included; those raised nothing above, so the work still has to
        // be done.
        if call.work.is_none() || interrupt.is_triggered() {
            break;
        }
    }
    let outcome = call.outcome.take();
    match outcome {
        None => Ok(None),
        Some(Ok(value)) => Ok(Some(value)),
        Some(Err(panic)) => Err(panic_error(ruby, panic)),
    }
}

/// Runs an idempotent core call without the GVL. An interrupt Ruby did not
/// turn into an exception (a signal with a trap that raises nothing, a
/// child's exit) runs the call again instead of failing it.
pub fn call<T>(
    ruby: &Ruby,
    work: impl Fn(&Interrupt) -> limit_fetch_core::Result<T>,
) -> Result<T, Error> {
    loop {
        match without_gvl(ruby, &work)? {
            None | Some(Err(CoreError::Interrupted)) => continue,
            Some(result) => return result.map_err(|e| to_ruby(ruby, e)),
        }
    }
}
