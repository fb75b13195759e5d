//! Personal learning in real headless Neovim with the real host: what the
//! user writes (its words, pairs and rates) reaches a new session through
//! the personal store, `:Laya
//! forget` removes it, secret files are never learnt, a kill -9 of the host
//! while it saves leaves a readable store, two Neovims learning at once
//! lose nothing, and a ghost word typed past moves down in the next session.

mod common;
use common::{Session, HOST};
use laya::learn::format::{decode, encode};
use laya::learn::Learnt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A session whose personal store lives in `store` (shared between sessions).
async fn session(name: &str, store: &Path) -> Session {
    let s = Session::start(name).await;
    s.lua(&format!(
        "require('laya').setup({{ host = {{ path = [==[{HOST}]==] }}, log_level = 'debug', \
         learn = {{ dir = [==[{}]==] }} }})",
        store.display()
    ))
    .await;
    s
}

fn store_dir(name: &str) -> PathBuf {
    common::temp_dir(name).join("store")
}

/// The store as saved, decoded (the test fails on a store that does not decode).
fn read_store(dir: &Path) -> Learnt {
    match std::fs::read(dir.join("personal.bin")) {
        Ok(bytes) => decode(&bytes).unwrap_or_else(|e| panic!("store does not decode: {e}")),
        Err(_) => Learnt::default(),
    }
}

/// Quits Neovim as a user does (VimLeavePre saves) and waits for it to end.
async fn quit(mut s: Session) {
    let _ = s.nvim.command("qa!").await;
    let _ = tokio::time::timeout(Duration::from_secs(30), s.child.wait()).await;
}

/// Edits `file` (in the session's folder) and writes it.
async fn write_file(s: &Session, file: &str, text: &str) {
    s.command(&format!("edit {file}")).await;
    s.input(&format!("i{text}<Esc>")).await;
    s.wait_for("the text in the buffer", || async {
        s.lines().await.join("\n").contains(text).then_some(())
    })
    .await;
    s.command("write").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn learnt_in_one_session_predicted_in_the_next_and_forgotten_on_request() {
    let store = store_dir("learn-next");
    let s = session("learn-next-1", &store).await;
    write_file(&s, "notes.txt", "We ship quorbinex daily.").await;
    // The user's rates: the host's thread runs the model over the line and
    // the counts reach the store with the next save.
    let daily = s
        .wait_for("the rates of the written line in the store", || async {
            read_store(&store).rates.get("daily").copied()
        })
        .await;
    assert_eq!(daily.count, 1.0, "{daily:?}");
    quit(s).await;
    assert!(read_store(&store).words.contains_key("quorbinex"));

    let s = session("learn-next-2", &store).await;
    s.input("iThen quor").await;
    s.wait_ghost_starting("binex").await;
    let status = s.output("Laya status").await;
    assert!(status.contains("Personal store: "), "{status}");
    assert!(status.contains("permissions dir 700 file 600"), "{status}");
    assert!(
        status.contains("Rejections remembered: off (learn.rejections)"),
        "{status}"
    );
    // The rates of session 1's line, loaded from the store.
    assert!(
        status.contains("Rates: measured on ") && !status.contains("Rates: measured on 0 "),
        "{status}"
    );

    s.input("<Esc>").await;
    s.command("Laya forget quorbinex").await;
    s.input("oThen quor").await;
    s.wait_idle().await;
    let ghost = s.ghost_text().await.unwrap_or_default();
    assert!(!ghost.starts_with("binex"), "{ghost:?}");
    quit(s).await;
    assert!(!read_store(&store).words.contains_key("quorbinex"));
    assert!(read_store(&store).words.contains_key("daily"));
    assert!(read_store(&store).rates.contains_key("daily"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_files_are_never_learnt() {
    let store = store_dir("learn-secret");
    let s = session("learn-secret", &store).await;
    write_file(&s, ".env", "deploy target flumbergast").await;
    write_file(&s, "server.pem", "marker plonkavist").await;
    write_file(&s, "readme.txt", "deploy target grimblewood").await;
    s.set_lines(&["scratch text about wibblequark"]).await;
    quit(s).await;
    let l = read_store(&store);
    assert!(
        l.words.contains_key("grimblewood"),
        "the plain file is learnt"
    );
    for w in ["flumbergast", "plonkavist"] {
        assert!(!l.words.contains_key(w), "{w} learnt from a secret file");
        assert!(l.pairs.keys().all(|(_, c, x)| !c.contains(w) && &**x != w));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_saves_leaves_a_readable_store() {
    let store = store_dir("learn-kill");
    let s = session("learn-kill", &store).await;
    // Text that makes each save take a while (many distinct words).
    let text: String = (0..60_000).map(|i| format!("kw{i}x ")).collect();
    // How long learning this text and saving it takes here, uninterrupted.
    let running_host = || async {
        s.wait_for("a running host", || async {
            let pid = s
                .lua(
                    "local h = require('laya.host'); \
                     if not h.running() then h.reset(); h.start() end; return h.pid",
                )
                .await
                .as_i64()?;
            let st = s.lua("return require('laya.host').request('status')").await;
            (st["engine"]["ready"] == true).then_some(pid)
        })
        .await
    };
    running_host().await;
    let learn = |round: u64| {
        format!("require('laya.host').notify('learn', [==[{text} round{round}]==], '')")
    };
    let t0 = std::time::Instant::now();
    s.lua(&learn(0)).await;
    s.lua("require('laya.host').notify('flush')").await;
    s.wait_for("the save", || async {
        let st = s.lua("return require('laya.host').request('status')").await;
        (st["learn"]["flushes"].as_u64() >= Some(1)).then_some(())
    })
    .await;
    let full = t0.elapsed();
    assert!(read_store(&store).words.contains_key("kw59999x"));
    let mut torn = 0;
    for round in 1..=8u32 {
        // Kills from half-way through to the end, where the save is.
        let pid = running_host().await;
        s.lua(&learn(round as u64)).await;
        // Asks for a save and kills the host part of the way through.
        s.lua("require('laya.host').notify('flush')").await;
        tokio::time::sleep(full * (8 + round) / 16).await;
        Session::signal(pid, "KILL");
        s.wait_for("the host to be gone", || async {
            let now = s.lua("return require('laya.host').pid").await.as_i64();
            (now != Some(pid)).then_some(())
        })
        .await;
        // A save cut short leaves its temporary file; the store itself decodes.
        torn += std::fs::read_dir(&store)
            .into_iter()
            .flatten()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                name.to_string_lossy().contains(".tmp-")
            })
            .count();
        read_store(&store);
    }
    println!("learn + save: {full:?}; saves cut short by the kill: {torn} (temporary files left)");
    running_host().await;
    s.lua("require('laya.host').notify('learn', 'kwlast', '')")
        .await;
    quit(s).await;
    let l = read_store(&store);
    assert!(l.words.contains_key("kwlast"));
    assert!(l.words.contains_key("kw0x"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_neovims_learning_at_once_lose_nothing() {
    let store = store_dir("learn-two");
    let a = session("learn-two-a", &store).await;
    let b = session("learn-two-b", &store).await;
    for i in 0..5 {
        let (ta, tb) = (format!("alphaword{i} "), format!("betaword{i} "));
        tokio::join!(
            async {
                a.input(&format!("o{ta}<Esc>")).await;
            },
            async {
                b.input(&format!("o{tb}<Esc>")).await;
            }
        );
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    // Both saved on their own (every few seconds) before quitting.
    tokio::time::sleep(Duration::from_secs(4)).await;
    tokio::join!(quit(a), quit(b));
    let l = read_store(&store);
    for i in 0..5 {
        for w in [format!("alphaword{i}"), format!("betaword{i}")] {
            assert_eq!(l.words.get(w.as_str()).map(|e| e.count), Some(1), "{w}");
        }
    }
}

/// A ghost word read and typed past (`learn.rejections`) is kept in the
/// store (not from a file kept out of learning) and moves down after the
/// same previous word in a new session (and not from the same store
/// without it), until `:Laya forget` of the word; `:Laya status` and
/// `:checkhealth laya` count the rejections remembered all along.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_word_typed_past_moves_down_in_the_next_session() {
    let store = store_dir("learn-reject");
    let session = |name: &'static str, store: PathBuf| async move {
        let s = Session::start(name).await;
        // Every ghost counts as read; one rejection is enough here, and it
        // leaves the word out.
        s.lua(&format!(
            "require('laya').setup({{ host = {{ path = [==[{HOST}]==], \
             args = {{ '--tune', 'rejected=0,rejected_min=1' }} }}, log_level = 'debug', \
             ghost = {{ give_way = 0 }}, \
             learn = {{ dir = [==[{}]==], rejections = true, deny = {{ '*.private' }} }} }})",
            store.display()
        ))
        .await;
        s
    };
    let words = "zygote zygote zygote zygote";
    let s = session("learn-reject-1", store.clone()).await;
    s.set_lines(&[words]).await;
    s.input("Goalpha zy").await;
    s.wait_ghost_starting("gote").await;
    wait_rejections(&s, 0).await;
    s.input("murgy next").await;
    s.wait_idle().await;
    s.input("<Esc>").await;
    wait_rejections(&s, 1).await;
    // The same in a file kept out of learning teaches nothing.
    s.command("edit notes.private").await;
    s.set_lines(&[words]).await;
    s.input("Gobeta zy").await;
    s.wait_ghost_starting("gote").await;
    s.input("murgy next").await;
    s.wait_idle().await;
    s.input("<Esc>").await;
    wait_rejections(&s, 1).await;
    let health = s.health_report().await;
    assert!(health.contains("Rejections remembered: 1"), "{health}");
    quit(s).await;
    let mut l = read_store(&store);
    let rejected = ("alpha ".into(), "zygote".into());
    assert_eq!(
        l.rejections.get(&rejected).map(|e| e.count),
        Some(1),
        "{:?}",
        l.rejections
    );
    assert_eq!(l.rejections.len(), 1, "{:?}", l.rejections);
    // The word written in its place was learnt too: out of the store, so
    // that only the rejection can move "zygote" down. And the same store
    // without the rejection, for comparison.
    l.forget_word("zymurgy");
    std::fs::write(store.join("personal.bin"), encode(&l)).unwrap();
    let without = store_dir("learn-reject-without");
    std::fs::create_dir_all(&without).unwrap();
    l.rejections.clear();
    std::fs::write(without.join("personal.bin"), encode(&l)).unwrap();

    let s = session("learn-reject-2", store.clone()).await;
    let ghost = ghost_after_alpha(&s, words).await;
    assert!(!ghost.starts_with("gote"), "{ghost:?}");
    wait_rejections(&s, 1).await;
    s.command("Laya forget zygote").await;
    wait_rejections(&s, 0).await;
    quit(s).await;
    assert!(read_store(&store).rejections.is_empty());

    let s = session("learn-reject-3", without).await;
    let ghost = ghost_after_alpha(&s, words).await;
    assert!(ghost.starts_with("gote"), "{ghost:?}");
    wait_rejections(&s, 0).await;
    quit(s).await;
}

/// Waits until `:Laya status` says `n` rejections are remembered (the host
/// counts them after the keystroke it answers, or once its store is loaded).
async fn wait_rejections(s: &Session, n: u64) {
    let want = format!("Rejections remembered: {n}\n");
    s.wait_for(&format!("{want:?} in :Laya status"), || async {
        let status = s.output("Laya status").await + "\n";
        status.contains(&want).then_some(())
    })
    .await;
}

/// The ghost text after typing "alpha zy" below `words`.
async fn ghost_after_alpha(s: &Session, words: &str) -> String {
    s.set_lines(&[words]).await;
    s.input("Goalpha zy").await;
    s.wait_idle().await;
    let ghost = s.ghost_text().await.unwrap_or_default();
    s.input("<Esc>").await;
    ghost
}
