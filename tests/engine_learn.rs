//! Personal learning in the engine: text learnt from the user's earlier
//! writing changes predictions in other buffers, survives a buffer's
//! `forget`, and can be forgotten word by word.

use laya::engine::Engine;

#[path = "support/default_engine.rs"]
mod default_engine;

fn top(e: &mut Engine, buffer: u64, before: &str) -> Option<String> {
    e.predict(&default_engine::request(buffer, before, false))
        .candidates
        .into_iter()
        .next()
        .map(|c| c.insert)
}

/// A project name the model cannot know, in a sentence it can.
const HISTORY: &str = "We deploy the service with zorbulator every morning.\n\
    The zorbulator keeps the queue short.\nRun zorbulator again after a change.\n";

#[test]
fn learnt_words_reach_other_buffers_and_survive_forget() {
    let mut e = default_engine::engine("");
    assert_ne!(
        top(&mut e, 1, "Then we restart zorb").as_deref(),
        Some("ulator")
    );
    e.learn(HISTORY);
    assert_eq!(
        top(&mut e, 2, "Then we restart zorb").as_deref(),
        Some("ulator")
    );
    // A buffer's state goes, the user's stays.
    e.forget(2);
    assert_eq!(
        top(&mut e, 2, "Then we restart zorb").as_deref(),
        Some("ulator")
    );
}

#[test]
fn learnt_pairs_rank_the_next_word() {
    let mut e = default_engine::engine("");
    let history = "call flux_capacitor_reset after boot\n".repeat(5);
    e.learn(&history);
    assert_eq!(
        top(&mut e, 3, "then call ").as_deref(),
        Some("flux_capacitor_reset")
    );
}
