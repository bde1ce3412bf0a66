//! Retrieving work: one call of Sidekiq's `retrieve_work` ([`Fetch`]), a
//! fetch that, when nothing is eligible, waits for the doorbell instead of
//! returning at once, the way Sidekiq's own fetch blocks in `BRPOP`.
//!
//! The caller drives it with [`Fetch::wait`], which blocks its thread and
//! returns early on an interrupt; calling it again resumes where it stopped.
//! Dropping it walks away, and a job Redis handed out after that goes back.

use std::cell::OnceCell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::doorbell::{queue_set, QueueSet, Ticket, Woken};
use crate::runtime::{handle, wait_for};
use crate::script::fetch::Fetched;
use crate::{keys, Error, Interrupt, Result};

use super::look::LookPending;
use super::Capsule;

/// How long a fetch may wait for a job when none is eligible.
#[derive(Clone, Copy, Debug, Default)]
pub struct Wait {
    /// At most this long. Zero: look once and return.
    pub timeout: Duration,
    /// Between looks when the doorbell cannot be used (a Redis ACL without
    /// `client|tracking`, or a Redis without client-side caching).
    pub poll: Duration,
}

impl Wait {
    pub const NONE: Wait = Wait {
        timeout: Duration::ZERO,
        poll: Duration::ZERO,
    };
}

impl Capsule {
    /// Takes a job from the first eligible queue of `queues` (names, with or
    /// without Sidekiq's `queue:` prefix), or `None` if none is eligible and
    /// non-empty. Sends the capsule's pending acknowledgements on the way. If
    /// interrupted after Redis handed out a job, the job goes back to the
    /// front of its queue and its slot is freed. Does not wait: see
    /// [`Capsule::start_fetch`].
    pub fn fetch<S: AsRef<str>>(
        &self,
        queues: &[S],
        interrupt: &Interrupt,
    ) -> Result<Option<Fetched>> {
        if interrupt.is_triggered() {
            return Err(Error::Interrupted);
        }
        self.start_fetch(queues, Wait::NONE)?.wait(interrupt)
    }

    /// [`Capsule::fetch`] that, when nothing is eligible, waits up to
    /// `wait.timeout` for a job or a slot to appear. Its first look starts
    /// now; the caller waits with [`Fetch::wait`], again after an interrupt
    /// that it chose to ignore. Dropping the `Fetch` gives back a job that
    /// arrives after that.
    pub fn start_fetch<S: AsRef<str>>(&self, queues: &[S], wait: Wait) -> Result<Fetch> {
        let queues = queues
            .iter()
            .map(|q| keys::queue_name(q.as_ref()).to_owned())
            .collect();
        let mut fetch = Fetch::new(self.clone(), queues, wait);
        fetch.begin()?;
        Ok(fetch)
    }
}

#[derive(Clone, Copy)]
enum Step {
    /// Run the fetch script (unless nothing can have changed since one that
    /// found nothing).
    Look,
    /// Arm the doorbell: any change after this rings.
    Arm,
    /// Sleep until the doorbell rings.
    Wait(Ticket),
    /// The doorbell is unavailable: sleep, then look again.
    Poll,
}

/// One call of Sidekiq's `retrieve_work`. See the module documentation.
pub struct Fetch {
    capsule: Capsule,
    queues: Arc<Vec<String>>,
    /// `queues` as a set, worked out only while the bell is armed: a busy
    /// capsule's fetches never need it.
    set: OnceCell<QueueSet>,
    deadline: Instant,
    poll: Duration,
    /// May skip a look that cannot find anything: only a fetch that will wait
    /// may, as the ring of a write just made can still be on its way.
    may_skip: bool,
    step: Step,
    /// The current look has started: its script runs (`pending`) or was
    /// skipped (nothing can have changed).
    begun: bool,
    pending: Option<(Option<Ticket>, LookPending)>,
    /// The last look found nothing only because it set aside as many jobs
    /// as it may (see lua/fetch/): the next looks at once.
    again: bool,
    /// The current look follows a ring that disarmed the bell (see
    /// [`Fetch::wait`]): if it takes a job, the bell is armed again
    /// alongside the job; if not, before the next look.
    arm_after: bool,
}

impl Fetch {
    fn new(capsule: Capsule, queues: Vec<String>, wait: Wait) -> Self {
        Self {
            set: OnceCell::new(),
            capsule,
            queues: Arc::new(queues),
            deadline: Instant::now() + wait.timeout,
            poll: wait.poll,
            may_skip: !wait.timeout.is_zero(),
            step: Step::Look,
            begun: false,
            pending: None,
            again: false,
            arm_after: false,
        }
    }

    /// The job, or `None` once the wait is over with nothing eligible.
    /// `Err(Interrupted)` leaves the fetch resumable.
    pub fn wait(&mut self, interrupt: &Interrupt) -> Result<Option<Fetched>> {
        if interrupt.is_triggered() {
            return Err(Error::Interrupted);
        }
        loop {
            self.step = match self.step {
                Step::Look => match self.look(interrupt)? {
                    Some(fetched) => return Ok(Some(fetched)),
                    None if self.look_again() => Step::Look,
                    None if self.over() => return Ok(None),
                    None => self.after_empty_look(),
                },
                Step::Arm => match self.arm(interrupt) {
                    Err(Error::Interrupted) => return Err(Error::Interrupted),
                    Ok(()) => Step::Look,
                    Err(_) => Step::Poll,
                },
                Step::Wait(ticket) => match self.sleep(Some(ticket), interrupt)? {
                    Woken::Rang => {
                        // The bell must be armed before a look that may end
                        // in sleep. A ring disarmed it; this look goes first
                        // (the job that rang is most often there), not queued
                        // behind the arming's round trip (see `look`).
                        self.arm_after = self.bell_ticket().is_none();
                        Step::Look
                    }
                    Woken::TimedOut | Woken::Closed => return Ok(None),
                },
                Step::Poll => match self.sleep(None, interrupt)? {
                    Woken::Closed => return Ok(None),
                    _ if self.over() => return Ok(None),
                    _ => Step::Look,
                },
            };
        }
    }

    /// Starts a look: runs the fetch script, unless nothing it depends on
    /// changed since one that found nothing.
    fn begin(&mut self) -> Result<()> {
        let ticket = self.bell_ticket();
        // A window that opened since the last look is looked at by the next
        // to start, this one (see Doorbell::ring_at).
        let due = self.capsule.doorbell().look_due();
        // Pending acknowledgements change what is eligible, and ride on a look.
        let unchanged = !due
            && self.may_skip
            && ticket.is_some_and(|t| {
                self.capsule.doorbell().known_empty(t, self.set()) && !self.capsule.owes_acks()
            });
        if !unchanged {
            self.capsule.doorbell().looking();
            let watch = self.capsule.doorbell().watching();
            let look = self.capsule.start_look(&self.queues, watch)?;
            self.pending = Some((ticket, look));
        }
        self.begun = true;
        Ok(())
    }

    fn look(&mut self, interrupt: &Interrupt) -> Result<Option<Fetched>> {
        if !self.begun {
            self.begin()?;
        }
        let Some((ticket, pending)) = self.pending.as_mut() else {
            self.begun = false;
            return Ok(None);
        };
        let ticket = *ticket;
        if matches!(pending, LookPending::Task(_)) {
            // While the reply comes: its next looks use it.
            self.capsule.open_direct(interrupt);
        }
        let reply = pending.wait(interrupt);
        if matches!(reply, Err(Error::Interrupted)) {
            return Err(Error::Interrupted);
        }
        self.pending = None;
        self.begun = false;
        let bell = self.capsule.doorbell();
        let look = reply?;
        self.capsule.ring_as_rates_open(&look);
        match look.fetched {
            Some(fetched) => {
                // After a ring: armed again alongside the job, for those
                // still asleep (with no job, before the next look: see
                // after_empty_look).
                if std::mem::take(&mut self.arm_after) {
                    self.arm_alongside();
                }
                // This capsule's own writes do not ring: wake a waiter for
                // the next job.
                if look.more {
                    bell.changed();
                }
                Ok(Some(fetched))
            }
            None if look.more => {
                self.again = true;
                Ok(None)
            }
            None => {
                if let Some(ticket) = ticket {
                    bell.found_empty(ticket, self.set());
                }
                Ok(None)
            }
        }
    }

    /// Takes the reply of the look just started if it is already here, so
    /// that the caller need not release its interpreter lock for it: `None`
    /// when the caller must [`Fetch::wait`] (the reply is still to come, or
    /// the look found nothing and the fetch waits for the doorbell).
    pub fn try_now(&mut self) -> Option<Result<Option<Fetched>>> {
        if !self.pending.as_ref().is_some_and(|(_, p)| p.is_ready()) {
            return None;
        }
        match self.look(&Interrupt::new()) {
            Ok(Some(fetched)) => Some(Ok(Some(fetched))),
            Ok(None) if self.look_again() => {
                self.step = Step::Look;
                None
            }
            Ok(None) if self.over() => Some(Ok(None)),
            Ok(None) => {
                self.step = self.after_empty_look();
                None
            }
            Err(err) => Some(Err(err)),
        }
    }

    /// Whether to look again at once after a look that found nothing: it
    /// stopped early (even past the deadline, so that a fetch that does not
    /// wait still goes past the jobs it set aside), unless quieting.
    fn look_again(&mut self) -> bool {
        std::mem::take(&mut self.again) && !self.capsule.doorbell().is_closed()
    }

    fn after_empty_look(&mut self) -> Step {
        self.arm_after = false;
        match self.bell_ticket() {
            Some(ticket) => Step::Wait(ticket),
            None => Step::Arm,
        }
    }

    /// Arms the bell on the runtime while this thread runs the job it took;
    /// if an eligible queue held a job when it read them, wakes a waiter (a
    /// job pushed after the look and before the read rings nobody).
    fn arm_alongside(&self) {
        let Ok(handle) = handle() else {
            return;
        };
        let capsule = self.capsule.clone();
        let queues = self.queues.clone();
        crate::runtime::detach(&handle, async move {
            if let Ok((_, true)) = capsule.arm(&queues).await {
                capsule.doorbell().changed();
            }
        });
    }

    fn arm(&self, interrupt: &Interrupt) -> Result<()> {
        let capsule = self.capsule.clone();
        let queues = self.queues.clone();
        let timeout = self.capsule.timeout();
        // A ring meanwhile (Ok(false)) is handled by the look that follows:
        // it finds the bell unarmed and comes back here.
        wait_for(interrupt, timeout, async move {
            capsule.arm(&queues).await.map(drop)
        })
    }

    /// Sleeps until the bell rings after `ticket` (or, without one, for the
    /// poll interval), the deadline, the capsule quieting or an interrupt.
    fn sleep(&self, ticket: Option<Ticket>, interrupt: &Interrupt) -> Result<Woken> {
        let bell = self.capsule.doorbell();
        if bell.is_closed() {
            return Ok(Woken::Closed);
        }
        let deadline = match ticket {
            Some(_) => {
                // Before it first sleeps (a ring meanwhile moved the ticket).
                self.capsule.open_direct(interrupt);
                self.deadline
            }
            None => self.deadline.min(Instant::now() + self.poll),
        };
        let deadline = tokio::time::Instant::from_std(deadline);
        let woken = handle()?.block_on(async {
            tokio::select! {
                biased;
                _ = interrupt.triggered() => None,
                woken = async {
                    match ticket {
                        Some(ticket) => bell.wait(ticket, deadline).await,
                        None => {
                            tokio::time::sleep_until(deadline).await;
                            Woken::TimedOut
                        }
                    }
                } => Some(woken),
            }
        });
        woken.ok_or(Error::Interrupted)
    }

    fn bell_ticket(&self) -> Option<Ticket> {
        self.capsule.doorbell().ticket(|| self.set())
    }

    fn set(&self) -> QueueSet {
        *self.set.get_or_init(|| queue_set(&self.queues))
    }

    fn over(&self) -> bool {
        Instant::now() >= self.deadline || self.capsule.doorbell().is_closed()
    }
}
