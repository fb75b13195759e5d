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
        .save(&stored, &Forget::Nothing, &[])
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

/// A session on the store in `dir`: its history loaded into `e`.
fn store_session(dir: &std::path::Path, e: &mut Engine) -> laya::learn::learning::Learning {
    use laya::learn::learning::{LearnStatus, Learning};
    use laya::learn::store::{Store, DEFAULT_MAX_BYTES};
    use std::sync::{Arc, Mutex};
    let status = Arc::new(Mutex::new(LearnStatus::default()));
    let mut l = Learning::new(Some(Store::new(dir, DEFAULT_MAX_BYTES)), status);
    l.load(e);
    while l.is_loading() {
        std::thread::sleep(std::time::Duration::from_millis(5));
        l.poll(e);
    }
    l
}

/// The rejections in the store in `dir`, as saved.
fn stored_rejections(dir: &std::path::Path) -> Vec<(String, String)> {
    use laya::learn::store::{Store, DEFAULT_MAX_BYTES};
    let (l, _) = Store::new(dir, DEFAULT_MAX_BYTES).load().unwrap();
    let mut r: Vec<_> = l
        .rejections
        .keys()
        .map(|(c, w)| (c.to_string(), w.to_string()))
        .collect();
    r.sort();
    r
}

/// One rejection is enough to move a word down.
const REJECTING: &str = "rejected=0,rejected_min=1";
const REPORT: &str = "We looked at the report and then we wrote the ";

/// Types `word` and a space after REPORT in `buffer`, which teaches, key by
/// key, reading every answer when `seen`, and hands what the engine
/// rejected and took back to `learning` after each key, as the host does;
/// the top candidate after the first key.
fn type_word(
    e: &mut Engine,
    learning: &mut laya::learn::learning::Learning,
    buffer: u64,
    word: &str,
    seen: bool,
) -> Option<String> {
    let typed = format!("{word} ");
    let mut first = None;
    for n in 1..=typed.len() {
        let before = format!("{REPORT}{}", &typed[..n]);
        let p = e.predict(&laya::engine::Request {
            learn: true,
            ..default_engine::request(buffer, &before, seen)
        });
        if n == 1 {
            first = p.candidates.first().map(|c| c.word.clone());
        }
        learning.rejections(e);
    }
    first
}

/// A session on the store in `dir` that types "summary" after REPORT,
/// reading the ghosts, and saves: the first top candidate, typed past and
/// rejected once after "the ".
fn reject_in_a_session(dir: &std::path::Path) -> String {
    let mut e = default_engine::engine(REJECTING);
    let mut learning = store_session(dir, &mut e);
    let rejected =
        type_word(&mut e, &mut learning, 1, "summary", true).expect("a candidate after \"the s\"");
    assert_ne!(rejected, "summary");
    assert_eq!(e.rejections_after("the ", &rejected), 1);
    learning.finish();
    rejected
}

/// What the user typed past reaches the personal store and is rejected
/// again in a new engine loading it (a new session); `forget` of the word
/// takes it out of the store.
#[test]
fn rejections_are_kept_in_the_store_until_forgotten() {
    let dir = store_dir("rejections");
    let rejected = reject_in_a_session(&dir);

    let mut e = default_engine::engine(REJECTING);
    let mut learning = store_session(&dir, &mut e);
    assert_eq!(e.rejections_after("the ", &rejected), 1, "{rejected}");
    // The same text in a new buffer: without the rejection, the same top.
    let top = |e: &mut laya::engine::Engine, b| {
        let before = format!("{REPORT}s");
        e.predict(&default_engine::request(b, &before, false))
            .candidates
            .first()
            .map(|c| c.word.clone())
    };
    assert_ne!(top(&mut e, 2).as_deref(), Some(rejected.as_str()));
    learning.forget(&mut e, Some(&rejected));
    learning.finish();

    let mut e = default_engine::engine(REJECTING);
    store_session(&dir, &mut e);
    assert_eq!(e.rejections_after("the ", &rejected), 0);
    assert_eq!(top(&mut e, 3).as_deref(), Some(rejected.as_str()));
    std::fs::remove_dir_all(dir).unwrap();
}

/// A rejection saved in one session leaves the store once the user writes
/// the word there in a later one (the engine takes it back in memory at
/// once), and the session after does not bring it back.
#[test]
fn a_rejection_leaves_the_store_once_the_word_is_written_there() {
    let dir = store_dir("taken-back");
    let rejected = reject_in_a_session(&dir);
    // The first top and those shown while typing on.
    let saved = ("the ".to_string(), rejected.clone());
    let before = stored_rejections(&dir);
    assert!(before.contains(&saved), "{before:?}");

    let mut e = default_engine::engine(REJECTING);
    let mut learning = store_session(&dir, &mut e);
    assert_eq!(e.rejections_after("the ", &rejected), 1);
    // Written there, with no ghost read meanwhile (nothing else rejected).
    type_word(&mut e, &mut learning, 2, &rejected, false);
    assert_eq!(e.rejections_after("the ", &rejected), 0, "in memory");
    learning.finish();
    let mut others = before;
    others.retain(|r| *r != saved);
    assert_eq!(stored_rejections(&dir), others, "{saved:?} is to go, only");

    let mut e = default_engine::engine(REJECTING);
    store_session(&dir, &mut e);
    assert_eq!(e.rejections_after("the ", &rejected), 0, "the next session");
    std::fs::remove_dir_all(dir).unwrap();
}

/// A user who writes "colour" where the model's training text mostly has
/// "color".
const BRITISH: &str = "The colour of the sky changes at dusk.\n\
    Pick a colour for the chart and keep that colour everywhere.\n\
    The colour scheme follows the colour of the logo.\n\
    Each colour has a name; the default colour is grey.\n";

/// The score of `word` among the candidates after `before` (0 when absent).
fn score_of(e: &mut Engine, buffer: u64, before: &str, word: &str) -> f32 {
    e.predict(&default_engine::request(buffer, before, false))
        .candidates
        .iter()
        .find(|c| c.word == word)
        .map_or(0.0, |c| c.score)
}

/// The user's rates (`engine::rates`): the model run over the learnt text
/// says which tokens the user writes more (or less) often than it expects
/// there, and its distribution follows; forgetting takes that back.
#[test]
fn rates_follow_what_the_user_writes_more_than_the_model_expects() {
    let mut e = default_engine::engine("");
    assert_eq!(e.user_rate("colour"), None, "nothing measured yet");
    e.learn(BRITISH);
    e.learn_rates(BRITISH);
    let colour = e.user_rate("colour").expect("measured");
    let color = e.user_rate("color").expect("measured");
    assert!(colour > 1.5, "written far more than expected: {colour}");
    assert!(color < 1.0, "expected where the user wrote colour: {color}");
    // The same history without the rates ranks "colour" lower.
    let mut plain = default_engine::engine("user_rates=0");
    plain.learn(BRITISH);
    plain.learn_rates(BRITISH);
    // Counts from a store change nothing either when rates are off.
    plain.add_rates(&plain.rate_counts([("colour", 9.0, 1.0)].into_iter()));
    assert_eq!(plain.user_rate("colour"), None);
    let before = "The background col";
    let (with, without) = (
        score_of(&mut e, 1, before, "colour"),
        score_of(&mut plain, 1, before, "colour"),
    );
    assert!(with > without, "{with} vs {without}");
    let (with, without) = (
        score_of(&mut e, 1, before, "color"),
        score_of(&mut plain, 1, before, "color"),
    );
    assert!(with < without, "{with} vs {without}");
    e.forget_learnt(Some("colour"));
    assert_eq!(e.user_rate("colour"), Some(1.0));
    e.forget_learnt(None);
    assert_eq!(e.user_rate("color"), None);
}

/// Rates measured on the host's thread reach the personal store and the
/// next session; `forget` of the word takes its rate out of the store.
#[test]
fn rates_reach_the_store_and_the_next_session() {
    use laya::learn::store::{Store, DEFAULT_MAX_BYTES};
    let dir = store_dir("rates");
    let mut e = default_engine::engine("");
    let mut l = store_session(&dir, &mut e);
    l.learn(&mut e, BRITISH, "");
    l.settle_rates(&mut e);
    let colour = e.user_rate("colour").expect("measured on the thread");
    assert!(colour > 1.5, "{colour}");
    l.finish();
    let (stored, _) = Store::new(&dir, DEFAULT_MAX_BYTES).load().unwrap();
    assert_eq!(
        stored.rates["colour"].count,
        7.0,
        "{:?}",
        stored.rates.get("colour")
    );

    let mut e2 = default_engine::engine("");
    let mut l2 = store_session(&dir, &mut e2);
    let again = e2.user_rate("colour").expect("loaded");
    assert!((again - colour).abs() < 1e-4, "{again} vs {colour}");
    l2.forget(&mut e2, Some("colour"));
    l2.finish();
    let (stored, _) = Store::new(&dir, DEFAULT_MAX_BYTES).load().unwrap();
    assert!(!stored.rates.contains_key("colour"));
    assert!(stored.rates.contains_key("chart"));
    std::fs::remove_dir_all(dir).unwrap();
}

/// `forget` while learnt text is still being measured: its rates never
/// come back.
#[test]
fn forgetting_drops_rates_still_being_measured() {
    let dir = store_dir("rates-forget");
    let mut e = default_engine::engine("");
    let mut l = store_session(&dir, &mut e);
    l.learn(&mut e, &BRITISH.repeat(20), "");
    l.forget(&mut e, None);
    l.settle_rates(&mut e);
    assert_eq!(e.user_rate("colour"), None);
    l.learn(&mut e, BRITISH, "");
    l.settle_rates(&mut e);
    assert!(e.user_rate("colour").is_some(), "later text is measured");
    std::fs::remove_dir_all(dir).unwrap();
}
