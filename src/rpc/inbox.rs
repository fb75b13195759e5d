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
use std::time::Duration;

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
    Accepted {
        buffer: u64,
        text: String,
    },
    Forget {
        buffer: u64,
    },
    /// Text the user wrote (a saved or edited buffer; `path` its file).
    Learn {
        text: String,
        path: String,
    },
    /// Forget one learnt word, or everything learnt (`None`).
    ForgetLearnt {
        word: Option<String>,
    },
    /// Save what was learnt now (Neovim is about to exit).
    Flush,
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
    /// one that was still waiting (whose `seen_last` carries over: both
    /// keys were typed after the same answer).
    pub fn put_predict(&self, mut job: Job) -> bool {
        let mut s = self.lock();
        let slot = job.slot();
        if let Some(old) = s.latest.get(&slot) {
            job.params.seen_last |= old.params.seen_last;
        }
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

    /// Blocks until there is work; `None` once closed.
    pub fn take(&self) -> Option<Work> {
        let mut s = self.lock();
        loop {
            if let Some(e) = s.events.pop_front() {
                return Some(Work::Event(e));
            }
            while let Some(slot) = s.order.pop_front() {
                if let Some(job) = s.latest.remove(&slot) {
                    return Some(Work::Predict(job));
                }
            }
            if s.closed {
                return None;
            }
            s = self.ready.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// True when a request or an event waits to be taken.
    pub fn waiting(&self) -> bool {
        Self::has_work(&self.lock())
    }

    /// Waits up to `timeout` for work (or the close); true if there is some.
    pub fn wait_for_work(&self, timeout: Duration) -> bool {
        let s = self.lock();
        let (s, _) = self
            .ready
            .wait_timeout_while(s, timeout, |s| !Self::has_work(s) && !s.closed)
            .unwrap_or_else(|e| e.into_inner());
        Self::has_work(&s) || s.closed
    }

    fn has_work(s: &Slots) -> bool {
        !s.events.is_empty() || !s.latest.is_empty()
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
                seen_last: false,
                syntax: String::new(),
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
        assert!(!inbox.waiting());
        assert!(!inbox.put_predict(job(1, 1)));
        assert!(!inbox.put_predict(job(2, 2)));
        assert!(inbox.put_predict(job(1, 3)));
        assert!(inbox.waiting());
        assert_eq!(seq(inbox.take()), 3);
        assert_eq!(seq(inbox.take()), 2);
        assert!(!inbox.waiting());
        assert!(!inbox.wait_for_work(Duration::from_millis(1)));
        inbox.put_predict(job(1, 4));
        assert!(inbox.wait_for_work(Duration::from_secs(60)));
        assert_eq!(seq(inbox.take()), 4);
        inbox.close();
        assert!(inbox.wait_for_work(Duration::from_secs(60)));
        assert!(inbox.take().is_none());
    }

    #[test]
    fn a_superseded_job_passes_on_that_its_ghost_was_seen() {
        let inbox = Inbox::default();
        let mut seen = job(1, 1);
        seen.params.seen_last = true;
        inbox.put_predict(seen);
        inbox.put_predict(job(1, 2));
        match inbox.take() {
            Some(Work::Predict(j)) => assert_eq!((j.params.seq, j.params.seen_last), (2, true)),
            other => panic!("expected a prediction, got {other:?}"),
        }
        inbox.put_predict(job(1, 3));
        assert!(matches!(inbox.take(), Some(Work::Predict(j)) if !j.params.seen_last));
    }

    #[test]
    fn echoes_and_predictions_of_a_buffer_do_not_supersede_each_other() {
        let inbox = Inbox::default();
        assert!(!inbox.put_predict(job(1, 1)));
        assert!(!inbox.put_predict(job_of(1, 2, true)));
        assert!(inbox.put_predict(job_of(1, 3, true)));
        assert_eq!(seq(inbox.take()), 1);
        assert_eq!(seq(inbox.take()), 3);
        inbox.put_predict(job(1, 4));
        inbox.put_predict(job_of(1, 5, true));
        inbox.put_event(Event::Forget { buffer: 1 });
        assert!(matches!(inbox.take(), Some(Work::Event(_))));
        inbox.close();
        assert!(inbox.take().is_none());
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
        assert_eq!(seq(inbox.take()), 2);
    }
}
