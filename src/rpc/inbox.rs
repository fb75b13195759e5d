//! Hand-over from the RPC loop to the decision thread.
//!
//! One slot per buffer holds only the latest `predict` (an older one still
//! waiting is superseded: its answer could only be stale), plus an ordered
//! queue of feedback events. The RPC side never blocks on the engine.
//! `echo` jobs (the benchmark floor) take the same path in slots of their
//! own, so they never supersede a buffer's `predict` or are superseded by it.
//!
//! Both are bounded, whatever arrives: at most `MAX_SLOTS` buffers wait
//! (a predict for one more replaces the one that waited longest: its
//! answer would be the stalest), and at most `MAX_EVENTS` events holding at
//! most `MAX_EVENT_TEXT` bytes of text (past that, a new event is dropped
//! and counted: only a flood reaches it, Neovim sends a few a minute).

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

/// Buffers with a request waiting, at most.
pub const MAX_SLOTS: usize = 256;
/// Events waiting, at most.
pub const MAX_EVENTS: usize = 4096;
/// Bytes of text in waiting events, at most (the plugin sends text to
/// learn in pieces of 32 KB).
pub const MAX_EVENT_TEXT: usize = 16 << 20;

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

impl Event {
    /// Bytes of text the event holds.
    fn text_bytes(&self) -> usize {
        match self {
            Event::Accepted { text, .. } => text.len(),
            Event::Learn { text, path } => text.len() + path.len(),
            Event::ForgetLearnt { word } => word.as_ref().map_or(0, String::len),
            Event::Forget { .. } | Event::Flush => 0,
        }
    }
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
    /// Bytes of text in `events`.
    event_text: usize,
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
    /// keys were typed after the same answer), or, all slots being taken,
    /// the one that waited longest.
    pub fn put_predict(&self, mut job: Job) -> bool {
        let mut s = self.lock();
        let slot = job.slot();
        if let Some(old) = s.latest.get(&slot) {
            job.params.seen_last |= old.params.seen_last;
        }
        let mut replaced = s.latest.insert(slot, job).is_some();
        if !replaced {
            s.order.push_back(slot);
            if s.latest.len() > MAX_SLOTS {
                while let Some(oldest) = s.order.pop_front() {
                    if s.latest.remove(&oldest).is_some() {
                        replaced = true;
                        break;
                    }
                }
            }
        }
        drop(s);
        self.ready.notify_one();
        replaced
    }

    /// Queues `event`; false when the queue is full and it was dropped.
    pub fn put_event(&self, event: Event) -> bool {
        let mut s = self.lock();
        if let Event::Forget { buffer } = event {
            // Nothing to predict for a closed buffer.
            s.latest.retain(|(b, _), _| *b != buffer);
            s.order.retain(|(b, _)| *b != buffer);
        }
        let text = event.text_bytes();
        if s.events.len() >= MAX_EVENTS || s.event_text + text > MAX_EVENT_TEXT {
            return false;
        }
        s.event_text += text;
        s.events.push_back(event);
        drop(s);
        self.ready.notify_one();
        true
    }

    /// Blocks until there is work; `None` once closed.
    pub fn take(&self) -> Option<Work> {
        let mut s = self.lock();
        loop {
            if let Some(e) = s.events.pop_front() {
                s.event_text -= e.text_bytes();
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
                learn: false,
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
    fn the_slots_and_the_events_are_bounded() {
        let inbox = Inbox::default();
        for b in 0..(MAX_SLOTS as u64 + 10) {
            // Past the bound, each new buffer replaces the oldest waiting.
            assert_eq!(inbox.put_predict(job(b, b)), b >= MAX_SLOTS as u64);
        }
        assert_eq!(inbox.lock().latest.len(), MAX_SLOTS);
        assert_eq!(
            seq(inbox.take()),
            10,
            "the newest MAX_SLOTS wait, oldest first"
        );
        for _ in 0..MAX_SLOTS - 1 {
            inbox.take();
        }
        assert!(!inbox.waiting());
        let learn = |n: usize| Event::Learn {
            text: "x".repeat(n),
            path: String::new(),
        };
        assert!(inbox.put_event(learn(MAX_EVENT_TEXT - 10)));
        assert!(!inbox.put_event(learn(11)), "over the text bound");
        assert!(inbox.put_event(learn(10)));
        assert!(matches!(inbox.take(), Some(Work::Event(_))));
        assert!(inbox.put_event(learn(100)), "taking frees the text");
        while inbox.put_event(Event::Flush) {}
        assert_eq!(inbox.lock().events.len(), MAX_EVENTS);
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
