//! The word list beyond the vocabulary (models/FORMAT.md `<stem>.words.txt`)
//! with a shipped model's real files (the neovim model's where words are
//! named): it completes a word the model can
//! only call `<unk>` after two typed characters; a malformed list is reported
//! as `words_error` and predictions go on without it; a misspelling still
//! gets a correction when listed words fill the menu.

use laya::engine::{Request, Source};
use laya::text::vocab::Vocab;

#[path = "support/scratch.rs"]
mod scratch;
use scratch::Dir;
#[path = "support/default_engine.rs"]
mod default_engine;
use default_engine::{engine_at, models, neovim};

fn req(before: &str) -> Request<'_> {
    Request {
        buffer: 1,
        before,
        filetype: "",
        kind: Default::default(),
        k: 3,
        seen_last: false,
        learn: false,
    }
}

#[test]
fn a_listed_word_never_seen_in_the_buffer_completes_after_two_characters() {
    let text = "Raise the open file limit with ul";
    let vocab = Vocab::load(&models().join("laya-neovim.vocab.txt")).unwrap();
    assert_eq!(
        vocab.word_id("ulimit"),
        None,
        "ulimit must be out of the vocabulary"
    );
    let list = std::fs::read_to_string(models().join("laya-neovim.words.txt")).unwrap();
    assert!(list.lines().any(|l| l.starts_with("ulimit\t")));

    let mut e = neovim("");
    let info = e.info();
    assert_eq!((info.model_error, info.words_error), (None, None));
    assert_eq!(
        info.words_path,
        Some(models().join("laya-neovim.words.txt"))
    );
    assert_eq!(info.words_count, 100_000);
    let p = e.predict(&req(text));
    let top = &p.candidates[0];
    assert_eq!((top.word.as_str(), top.insert.as_str()), ("ulimit", "imit"));
    assert_eq!(top.source, Source::Words);
    // Every candidate starts with what was typed (and only the listed words
    // of that prefix were added).
    assert!(p.candidates.iter().all(|c| c.word.starts_with("ul")));

    // One character typed is not enough; and without the list (share 0) the
    // word is not proposed at all.
    let one = e.predict(&req("Raise the open file limit with u"));
    assert!(one.candidates.iter().all(|c| c.source != Source::Words));
    let mut off = neovim("lexicon_share=0");
    assert!(off
        .predict(&req(text))
        .candidates
        .iter()
        .all(|c| c.word != "ulimit"));
    // A word the buffer holds keeps the buffer's scoring.
    let seen = e.predict(&req(
        "ulimit -n 4096 ulimit ulimit\nRaise the open file limit with ul",
    ));
    assert_eq!(seen.candidates[0].word, "ulimit");
    assert_eq!(seen.candidates[0].source, Source::Buffer);
}

#[test]
fn a_malformed_word_list_is_reported_and_predictions_go_on() {
    let dir = Dir::new("lexicon-bad");
    for ext in ["safetensors", "vocab.txt"] {
        std::os::unix::fs::symlink(
            models().join(format!("laya-default.{ext}")),
            dir.path.join(format!("m.{ext}")),
        )
        .unwrap();
    }
    std::fs::write(
        dir.path.join("m.words.txt"),
        "<unk>\t1000\nulimit\t30\nnot a word\t3\n",
    )
    .unwrap();
    let mut e = engine_at(dir.path.join("m.safetensors"), "");
    let info = e.info();
    assert_eq!(info.model_error, None);
    let err = info
        .words_error
        .expect("a malformed word list must be reported")
        .to_string();
    assert!(
        err.contains("m.words.txt") && err.contains("line 3"),
        "{err}"
    );
    assert_eq!((info.words_path, info.words_count), (None, 0));
    let p = e.predict(&req("Raise the open file limit with ul"));
    assert!(!p.candidates.is_empty());
    assert!(p.candidates.iter().all(|c| c.source != Source::Words));
    assert!(!e
        .predict(&req("fn main() {\n    let x = "))
        .candidates
        .is_empty());

    // The CLI says so too (on stderr, with what it measured).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_laya"))
        .args(["predict", "--model"])
        .arg(dir.path.join("m.safetensors"))
        .arg("Raise the open file limit with ul")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success());
    assert!(
        stderr.contains("word list not used: word list ") && stderr.contains("line 3"),
        "{stderr}"
    );

    // No file at all: no error, no list.
    std::fs::remove_file(dir.path.join("m.words.txt")).unwrap();
    let info = engine_at(dir.path.join("m.safetensors"), "").info();
    assert_eq!((info.words_error, info.words_path), (None, None));
}

#[test]
fn a_misspelling_gets_a_correction_when_listed_words_fill_the_menu() {
    // `ersp` (for `resp`) starts no vocabulary word, but listed ones
    // (`erspan_opts`, ...): they take the first slots, a correction the last.
    // However much probability the list is given (a share of 1000 puts its
    // words far above the "fits nothing" bound).
    for tune in ["", "lexicon_share=1000"] {
        let mut e = neovim(tune);
        let p = e.predict(&req("The server sends a ersp"));
        let sources: Vec<Source> = p.candidates.iter().map(|c| c.source).collect();
        assert_eq!(
            sources,
            vec![Source::Words, Source::Words, Source::Correction],
            "{tune}: {:?}",
            p.candidates
        );
        let fix = &p.candidates[2];
        assert_eq!((fix.word.as_str(), fix.replace), ("response", 4));
    }
    // The same without the list: corrections only.
    let mut off = neovim("lexicon_share=0");
    let p = off.predict(&req("The server sends a ersp"));
    assert!(p.candidates.iter().all(|c| c.source == Source::Correction));
    assert!(p.candidates.iter().any(|c| c.word == "response"));
}

#[test]
fn a_model_in_another_dtype_shares_the_vocabulary_and_word_list() {
    // laya-default-bf16.safetensors has no lists of its own: it reads
    // laya-default's (the same model, stored in bf16).
    let e = engine_at(models().join("laya-default-bf16.safetensors"), "");
    let info = e.info();
    assert_eq!((info.model_error, info.words_error), (None, None));
    assert_eq!(info.dtype, "bf16");
    assert_eq!(
        info.vocab_path,
        Some(models().join("laya-default.vocab.txt"))
    );
    assert_eq!(
        info.words_path,
        Some(models().join("laya-default.words.txt"))
    );
    assert_eq!(info.words_count, 100_000);

    // A list beside the variant itself is its own (another vocabulary).
    let dir = Dir::new("dtype-lists");
    let weights = dir.path.join("m-bf16.safetensors");
    std::fs::write(&weights, b"").unwrap();
    std::fs::write(dir.path.join("m.vocab.txt"), b"").unwrap();
    let base = dir.path.join("m.vocab.txt");
    assert_eq!(laya::model::vocab_path_for(&weights), base);
    std::fs::write(dir.path.join("m-bf16.vocab.txt"), b"").unwrap();
    assert_eq!(
        laya::model::vocab_path_for(&weights),
        dir.path.join("m-bf16.vocab.txt")
    );
    // Neither there: the variant's own name (the error names it).
    assert_eq!(
        laya::model::words_path_for(&weights),
        dir.path.join("m-bf16.words.txt")
    );
}
