//! Hand-over from the RPC loop to the decision thread.
//!
//! One slot per buffer holds only the latest `predict` (an older one still
//! waiting is superseded: its answer could only be stale), plus an ordered
//! queue of feedback events. The RPC side never blocks on the engine.
//! `echo` jobs (the benchmark floor) take the same path in slots of their
//! own, so they never supersede a buffer's `predict` or are superseded by it.

use super::params::PredictParams;
use std::collections::{HashMap, VecDeque};
use std::sync::{Condvar, Mutex, MutexGuard};

/// A prediction request with the host time it arrived (µs, see `clock`).
#[derive(Debug, Clone)]
pub struct Job {
    pub params: PredictParams,
    pub recv_us: u64,
    /// An `echo`: answered like a prediction, without asking the engine.
    pub echo: bool,
}

impl Job {
    fn slot(&self) -> SlotKey {
        (self.params.buffer, self.echo)
    }
}

/// (buffer, echo): predictions and echoes of a buffer wait in separate slots.
type SlotKey = (u64, bool);

/// Feedback that must reach the engine in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Accepted { buffer: u64, text: String },
    Forget { buffer: u64 },
}

#[derive(Debug)]
pub enum Work {
    Event(Event),
    Predict(Job),
}

#[derive(Default)]
struct Slots {
    latest: HashMap<SlotKey, Job>,
    /// Slots with a waiting job, oldest first, so no buffer starves.
    order: VecDeque<SlotKey>,
    events: VecDeque<Event>,
    closed: bool,
    /// Someone (the decision thread, or the RPC loop deciding inline) is
    /// using the engine; nothing else may start until `done`.
    in_flight: bool,
}

#[derive(Default)]
pub struct Inbox {
    slots: Mutex<Slots>,
    ready: Condvar,
}

impl Inbox {
    fn lock(&self) -> MutexGuard<'_, Slots> {
        // A poisoned lock only means another thread panicked mid-update of
        // plain data; the data is still usable.
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stores `job` as its buffer's latest; returns true when it replaced
    /// one that was still waiting.
    pub fn put_predict(&self, job: Job) -> bool {
        let mut s = self.lock();
        let slot = job.slot();
        let replaced = s.latest.insert(slot, job).is_some();
        if !replaced {
            s.order.push_back(slot);
        }
        drop(s);
        self.ready.notify_one();
        replaced
    }

    pub fn put_event(&self, event: Event) {
        let mut s = self.lock();
        if let Event::Forget { buffer } = event {
            // Nothing to predict for a closed buffer.
            s.latest.retain(|(b, _), _| *b != buffer);
            s.order.retain(|(b, _)| *b != buffer);
        }
        s.events.push_back(event);
        drop(s);
        self.ready.notify_one();
    }

    /// Blocks until there is work and the engine is free, then claims the
    /// engine for it (give it back with `done`); `None` once closed.
    pub fn take(&self) -> Option<Work> {
        let mut s = self.lock();
        loop {
            if !s.in_flight {
                if let Some(work) = Self::next(&mut s) {
                    s.in_flight = true;
                    return Some(work);
                }
            }
            if s.closed {
                return None;
            }
            s = self.ready.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn next(s: &mut Slots) -> Option<Work> {
        if let Some(e) = s.events.pop_front() {
            return Some(Work::Event(e));
        }
        while let Some(slot) = s.order.pop_front() {
            if let Some(job) = s.latest.remove(&slot) {
                return Some(Work::Predict(job));
            }
        }
        None
    }

    /// Claims the engine for work done outside the decision thread, only
    /// when nothing waits and nothing runs (so feedback events keep their
    /// order and no older request is overtaken unseen); give it back with
    /// `done`.
    pub fn try_claim_idle(&self) -> bool {
        let mut s = self.lock();
        let idle = !s.in_flight && !s.closed && s.events.is_empty() && s.latest.is_empty();
        if idle {
            s.in_flight = true;
        }
        idle
    }

    /// The engine is free again (after `take` or `try_claim_idle`).
    pub fn done(&self) {
        self.lock().in_flight = false;
        self.ready.notify_one();
    }

    pub fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(buffer: u64, seq: u64) -> Job {
        job_of(buffer, seq, false)
    }

    fn job_of(buffer: u64, seq: u64, echo: bool) -> Job {
        Job {
            params: PredictParams {
                buffer,
                changedtick: 0,
                seq,
                row: 1,
                col: 0,
                before: String::new(),
                after: String::new(),
                filetype: String::new(),
            },
            recv_us: 0,
            echo,
        }
    }

    fn seq(w: Option<Work>) -> u64 {
        match w {
            Some(Work::Predict(j)) => j.params.seq,
            other => panic!("expected a prediction, got {other:?}"),
        }
    }

    #[test]
    fn latest_per_buffer_wins_and_buffers_take_turns() {
        let inbox = Inbox::default();
        assert!(!inbox.put_predict(job(1, 1)));
        assert!(!inbox.put_predict(job(2, 2)));
        assert!(inbox.put_predict(job(1, 3)));
        assert_eq!(seq(inbox.take()), 3);
        inbox.done();
        assert_eq!(seq(inbox.take()), 2);
        inbox.done();
        inbox.close();
        assert!(inbox.take().is_none());
    }

    #[test]
    fn echoes_and_predictions_of_a_buffer_do_not_supersede_each_other() {
        let inbox = Inbox::default();
        assert!(!inbox.put_predict(job(1, 1)));
        assert!(!inbox.put_predict(job_of(1, 2, true)));
        assert!(inbox.put_predict(job_of(1, 3, true)));
        assert_eq!(seq(inbox.take()), 1);
        inbox.done();
        assert_eq!(seq(inbox.take()), 3);
        inbox.done();
        inbox.put_predict(job(1, 4));
        inbox.put_predict(job_of(1, 5, true));
        inbox.put_event(Event::Forget { buffer: 1 });
        assert!(matches!(inbox.take(), Some(Work::Event(_))));
        inbox.close();
        assert!(inbox.take().is_none());
    }

    #[test]
    fn the_engine_is_claimed_by_one_user_at_a_time() {
        let inbox = Inbox::default();
        assert!(inbox.try_claim_idle());
        assert!(!inbox.try_claim_idle(), "claimed twice");
        inbox.done();
        inbox.put_predict(job(1, 1));
        assert!(!inbox.try_claim_idle(), "a request waits: not idle");
        assert_eq!(seq(inbox.take()), 1);
        assert!(!inbox.try_claim_idle(), "the thread holds it");
        inbox.done();
        assert!(inbox.try_claim_idle());
        inbox.put_event(Event::Forget { buffer: 1 });
        inbox.done();
        assert!(!inbox.try_claim_idle(), "an event waits: not idle");
    }

    #[test]
    fn events_come_first_and_forget_drops_the_waiting_job() {
        let inbox = Inbox::default();
        inbox.put_predict(job(1, 1));
        inbox.put_predict(job(2, 2));
        inbox.put_event(Event::Forget { buffer: 1 });
        assert!(matches!(
            inbox.take(),
            Some(Work::Event(Event::Forget { buffer: 1 }))
        ));
        inbox.done();
        assert_eq!(seq(inbox.take()), 2);
    }
}
