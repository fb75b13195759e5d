//! Personal learning in `laya lsp`, with real server processes and a raw
//! client: what one server learns is in the personal store on disk (the
//! Neovim plugin's, by default under the data folder) and a fresh server
//! predicts it; secret files and secret-looking lines teach nothing; two
//! servers learning at once lose nothing.
//!
//! The words ("quokkalike", "zephyrine", …) are made up, so no model or
//! word list knows them: a server can only offer them from what it learnt.

#[path = "support/lsp_client.rs"]
mod lsp_client;

use laya::learn::format;
use laya::learn::Learnt;
use lsp_client::{scratch, Client};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The default store of a server whose data folder is `data`.
fn default_store(data: &Path) -> PathBuf {
    data.join("nvim/laya/personal.bin")
}

fn read_store(path: &Path) -> Learnt {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    format::decode(&bytes).expect("a readable store")
}

/// Does a fresh document offer a word completing "the " + `prefix`, first?
fn offered_first(c: &mut Client, uri: &str, prefix: &str, word: &str) -> bool {
    c.open_at(uri, &format!("the {prefix}"));
    let (labels, _) = c.offers(uri, 0, 4 + prefix.len() as u32);
    labels.first().is_some_and(|l| l.starts_with(word))
}

/// `offered_first`, asked again for a while: a fresh server loads its
/// store on a thread of its own and may answer the first requests without it.
fn offered_once_loaded(c: &mut Client, uri: &str, prefix: &str, word: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if offered_first(c, uri, prefix, word) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn words_learnt_by_one_server_are_predicted_by_a_fresh_one() {
    let data = scratch("learn-fresh");
    // Nothing learnt yet.
    let mut c = Client::initialized_in(&data, json!({}));
    assert!(!offered_first(
        &mut c,
        "file:///tmp/x/a.txt",
        "quokk",
        "quokkalike"
    ));
    // Saved: learnt, and on disk by the time shutdown is answered.
    let notes = "file:///tmp/x/notes.md";
    c.open_as(
        notes,
        "markdown",
        "The quokkalike hills, the quokkalike valleys.\n",
    );
    c.notify(
        "textDocument/didSave",
        json!({ "textDocument": { "uri": notes } }),
    );
    assert_eq!(c.finish(), 0);
    let store = default_store(&data);
    let learnt = read_store(&store);
    assert_eq!(learnt.words["quokkalike"].count, 2);
    // Private, as the Neovim host's store.
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&store), 0o600);
    assert_eq!(mode(store.parent().unwrap()), 0o700);
    // A fresh server loads it.
    let mut c = Client::initialized_in(&data, json!({}));
    assert!(offered_once_loaded(
        &mut c,
        "file:///tmp/y/b.txt",
        "quokk",
        "quokkalike"
    ));
    // The document learnt once more by this server, however often saved.
    c.open_at(notes, "The quokkalike hills, the quokkalike valleys.\n");
    c.notify(
        "textDocument/didSave",
        json!({ "textDocument": { "uri": notes } }),
    );
    c.save_and_close(notes);
    assert_eq!(c.finish(), 0);
    assert_eq!(read_store(&store).words["quokkalike"].count, 4);
}

#[test]
fn the_client_names_the_store_or_turns_it_off() {
    let data = scratch("learn-options");
    let mine = scratch("learn-options-dir");
    let options = json!({ "learn": { "dir": mine } });
    let mut c = Client::initialized_in(&data, options.clone());
    let doc = "file:///tmp/x/a.txt";
    c.open_at(doc, "A zephyrine light, a zephyrine sky.\n");
    c.save_and_close(doc);
    assert_eq!(c.finish(), 0);
    assert!(read_store(&mine.join("personal.bin")).words["zephyrine"].count == 2);
    assert!(
        !default_store(&data).exists(),
        "the default store untouched"
    );
    // Its folder is where a fresh server looks when told so, not by default.
    let mut c = Client::initialized_in(&data, json!({}));
    assert!(!offered_first(&mut c, "file:///b.txt", "zeph", "zephyrine"));
    assert_eq!(c.finish(), 0);
    let mut c = Client::initialized_in(&data, options);
    assert!(offered_once_loaded(
        &mut c,
        "file:///b.txt",
        "zeph",
        "zephyrine"
    ));
    assert_eq!(c.finish(), 0);
    // learn = false: learnt in memory, nothing written.
    let off = scratch("learn-off");
    let mut c = Client::initialized_in(&off, json!({ "learn": false }));
    c.open_at(doc, "A zephyrine light, a zephyrine sky.\n");
    c.save_and_close(doc);
    assert!(offered_first(&mut c, "file:///b.txt", "zeph", "zephyrine"));
    assert_eq!(c.finish(), 0);
    assert!(!off.join("nvim").exists());
}

#[test]
fn secret_files_and_lines_teach_nothing() {
    let data = scratch("learn-secret");
    let mut c = Client::initialized_in(&data, json!({}));
    let secrets = [
        // A secret file name: not even kept.
        ("file:///tmp/x/.env", "quokkalike quokkalike"),
        ("file:///tmp/x/server.PEM", "zephyrine zephyrine"),
        // A secret folder: predicted in, never learnt.
        ("file:///home/u/.ssh/config", "Host glimmerwick glimmerwick"),
        ("file:///home/u/.aws/notes.txt", "dravenholt dravenholt"),
    ];
    for (uri, text) in secrets {
        c.open_at(uri, text);
        c.save_and_close(uri);
    }
    // A secret-looking line in an ordinary file: that line only.
    let notes = "file:///tmp/x/notes.txt";
    c.open_at(
        notes,
        "password = marrowvance\nthe borrowdale path\napi_key: Q2x9ZkL0pR7mW3vT8sN1yB4cH6dF5gJ2\n",
    );
    c.save_and_close(notes);
    assert_eq!(c.finish(), 0);
    let learnt = read_store(&default_store(&data));
    for w in [
        "quokkalike",
        "zephyrine",
        "glimmerwick",
        "dravenholt",
        "marrowvance",
        "password",
        "Q2x9ZkL0pR7mW3vT8sN1yB4cH6dF5gJ2",
    ] {
        assert!(!learnt.words.contains_key(w), "{w} learnt: {learnt:?}");
    }
    assert!(learnt.words.contains_key("borrowdale"), "{learnt:?}");
    // A fresh server offers none of them (once it offers what it did learn).
    let mut c = Client::initialized_in(&data, json!({}));
    assert!(offered_once_loaded(
        &mut c,
        "file:///tmp/y/b.txt",
        "borrowd",
        "borrowdale"
    ));
    for (prefix, word) in [
        ("quokk", "quokkalike"),
        ("glimm", "glimmerwick"),
        ("marrow", "marrowvance"),
    ] {
        assert!(
            !offered_first(&mut c, "file:///tmp/y/b.txt", prefix, word),
            "{word}"
        );
    }
    assert_eq!(c.finish(), 0);
}

#[test]
fn two_servers_learning_at_once_lose_nothing() {
    let data = scratch("learn-two");
    let mut a = Client::initialized_in(&data, json!({}));
    let mut b = Client::initialized_in(&data, json!({}));
    // Interleaved saves; each server saves in the background every few
    // seconds and at shutdown, merging with what the other saved.
    for i in 0..6 {
        for (c, name) in [(&mut a, "a"), (&mut b, "b")] {
            let uri = format!("file:///tmp/x/{name}{i}.txt");
            c.open_at(&uri, &format!("shared tundrabell {name}word{i}\n"));
            c.save_and_close(&uri);
        }
        if i == 2 {
            // The background save, with both servers still running.
            let store = default_store(&data);
            let deadline = Instant::now() + Duration::from_secs(20);
            while !(store.exists() && read_store(&store).words.contains_key("bword2")) {
                assert!(Instant::now() < deadline, "no background save");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    let (ea, eb) = std::thread::scope(|s| {
        let ha = s.spawn(|| a.finish());
        let hb = s.spawn(|| b.finish());
        (ha.join().unwrap(), hb.join().unwrap())
    });
    assert_eq!((ea, eb), (0, 0));
    let learnt = read_store(&default_store(&data));
    assert_eq!(learnt.words["tundrabell"].count, 12, "{learnt:?}");
    for name in ["a", "b"] {
        for i in 0..6 {
            assert!(learnt.words.contains_key(&*format!("{name}word{i}")));
        }
    }
}

#[test]
fn a_terminated_server_saves_what_it_learnt() {
    let data = scratch("learn-term");
    let mut c = Client::initialized_in(&data, json!({}));
    let doc = "file:///tmp/x/a.txt";
    c.open_at(doc, "the fennimore dell\n");
    c.save_and_close(doc);
    // A request answered: the save above has been read.
    let _ = c.call("laya/ping", json!({}));
    let pid = c.child.id() as i32;
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    c.wait();
    let learnt = read_store(&default_store(&data));
    assert!(learnt.words.contains_key("fennimore"), "{learnt:?}");
}
