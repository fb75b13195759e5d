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

fn store_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("laya-engine-learn-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// A store at start: loaded on its own thread and adopted whole, with what
/// the user taught while it was loading learnt again on top of it.
#[test]
fn a_store_loading_late_keeps_what_was_taught_meanwhile() {
    use laya::learn::learning::{LearnStatus, Learning};
    use laya::learn::store::{Forget, Store, DEFAULT_MAX_BYTES};
    use laya::learn::Learnt;
    use std::sync::{Arc, Mutex};
    let dir = store_dir("late");
    let mut stored = Learnt::default();
    stored.add_text(HISTORY, 1);
    Store::new(&dir, DEFAULT_MAX_BYTES)
        .save(&stored, &Forget::Nothing)
        .unwrap();
    // Another host holding the store's lock keeps the loading thread waiting.
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("personal.lock"))
        .unwrap();
    lock.lock().unwrap();
    let mut e = default_engine::engine("");
    let status = Arc::new(Mutex::new(LearnStatus::default()));
    let mut learning = Learning::new(Some(Store::new(&dir, DEFAULT_MAX_BYTES)), status);
    learning.load(&mut e);
    assert!(
        learning.is_loading(),
        "the start does not wait for the lock"
    );
    learning.learn(
        &mut e,
        &"call flux_capacitor_reset after boot\n".repeat(5),
        "",
    );
    assert_eq!(
        top(&mut e, 3, "then call ").as_deref(),
        Some("flux_capacitor_reset")
    );
    drop(lock);
    while learning.is_loading() {
        std::thread::sleep(std::time::Duration::from_millis(5));
        learning.poll(&mut e);
    }
    assert_eq!(
        top(&mut e, 4, "Then we restart zorb").as_deref(),
        Some("ulator"),
        "the store's words"
    );
    assert_eq!(
        top(&mut e, 5, "then call ").as_deref(),
        Some("flux_capacitor_reset"),
        "what was learnt while loading"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// What the user typed past reaches the personal store and is rejected
/// again in a new engine loading it (a new session); `forget` of the word
/// takes it out of the store.
#[test]
fn rejections_are_kept_in_the_store_until_forgotten() {
    use laya::learn::learning::{LearnStatus, Learning};
    use laya::learn::store::{Store, DEFAULT_MAX_BYTES};
    use std::sync::{Arc, Mutex};
    let dir = store_dir("rejections");
    let session = |e: &mut laya::engine::Engine| {
        let status = Arc::new(Mutex::new(LearnStatus::default()));
        let mut l = Learning::new(Some(Store::new(&dir, DEFAULT_MAX_BYTES)), status);
        l.load(e);
        while l.is_loading() {
            std::thread::sleep(std::time::Duration::from_millis(5));
            l.poll(e);
        }
        l
    };
    const TUNE: &str = "rejected=0,rejected_min=1";
    let text = "We looked at the report and then we wrote the ";
    let mut e = default_engine::engine(TUNE);
    let mut learning = session(&mut e);
    // Typing "summary " key by key, reading every answer.
    let mut first = None;
    for n in 1..="summary ".len() {
        let before = format!("{text}{}", &"summary "[..n]);
        let p = e.predict(&laya::engine::Request {
            learn: true,
            ..default_engine::request(1, &before, true)
        });
        first = first.or(p.candidates.first().map(|c| c.word.clone()));
        learning.rejections(&mut e);
    }
    let rejected = first.expect("a candidate after \"the s\"");
    assert_ne!(rejected, "summary");
    assert_eq!(e.rejections_after("the ", &rejected), 1);
    learning.finish();

    let mut e = default_engine::engine(TUNE);
    let mut learning = session(&mut e);
    assert_eq!(e.rejections_after("the ", &rejected), 1, "{rejected}");
    // The same text in a new buffer: without the rejection, the same top.
    let top = |e: &mut laya::engine::Engine, b| {
        let before = format!("{text}s");
        e.predict(&default_engine::request(b, &before, false))
            .candidates
            .first()
            .map(|c| c.word.clone())
    };
    assert_ne!(top(&mut e, 2).as_deref(), Some(rejected.as_str()));
    learning.forget(&mut e, Some(&rejected));
    learning.finish();

    let mut e = default_engine::engine(TUNE);
    session(&mut e);
    assert_eq!(e.rejections_after("the ", &rejected), 0);
    assert_eq!(top(&mut e, 3).as_deref(), Some(rejected.as_str()));
    std::fs::remove_dir_all(dir).unwrap();
}
