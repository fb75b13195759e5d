//! Where the words are written (models/FORMAT.md `<stem>.kinds.txt`) with
//! a shipped model's real files (the neovim model's where words are named): in prose a word the training text has
//! mostly in code gives way to words of prose, in code it stays; a
//! malformed file is reported as `kinds_error` and the ranking is the one
//! without a file.

use laya::engine::kind::TextKind;
use laya::engine::{Engine, Request};

#[path = "support/scratch.rs"]
mod scratch;
use scratch::Dir;
#[path = "support/default_engine.rs"]
mod default_engine;
use default_engine::{engine_at, models, neovim};

/// The words of the top 5 after `before` in a fresh buffer.
fn menu(e: &mut Engine, buffer: u64, before: &str, kind: TextKind) -> Vec<String> {
    let p = e.predict(&Request {
        buffer,
        before,
        filetype: "",
        kind,
        k: 5,
        seen_last: false,
        learn: false,
    });
    p.candidates.into_iter().map(|c| c.word).collect()
}

#[test]
fn after_the_weather_is_a_c_function_is_offered_in_code_only() {
    // `is` completes to words of prose (issue, isolation) and to C's
    // isprint, which the training text has mostly in code.
    let mut e = neovim("");
    let info = e.info();
    assert_eq!((info.model_error, info.kinds_error), (None, None));
    assert_eq!(
        info.kinds_path,
        Some(models().join("laya-neovim.kinds.txt"))
    );
    assert!(info.kinds_count > 10_000, "{}", info.kinds_count);
    let before = "The weather is";
    let code = menu(&mut e, 1, before, TextKind::Code);
    assert!(code.iter().any(|w| w == "isprint"), "{code:?}");
    for (i, kind) in [TextKind::Prose, TextKind::Comment].into_iter().enumerate() {
        let prose = menu(&mut e, 2 + i as u64, before, kind);
        assert!(!prose.iter().any(|w| w == "isprint"), "{kind:?}: {prose:?}");
        assert!(prose.iter().any(|w| w == "issue"), "{kind:?}: {prose:?}");
    }
    // Without the preference (weight 0) prose gets it too.
    let mut off = neovim("prose_weight=0");
    let prose = menu(&mut off, 1, before, TextKind::Prose);
    assert!(prose.iter().any(|w| w == "isprint"), "{prose:?}");
}

/// A folder with the default model's files under the stem `m` and `kinds`
/// as its kinds file (none when None).
fn model_with_kinds(dir: &Dir, kinds: Option<&str>) -> std::path::PathBuf {
    for ext in ["safetensors", "vocab.txt", "words.txt"] {
        std::os::unix::fs::symlink(
            models().join(format!("laya-default.{ext}")),
            dir.path.join(format!("m.{ext}")),
        )
        .unwrap();
    }
    if let Some(k) = kinds {
        std::fs::write(dir.path.join("m.kinds.txt"), k).unwrap();
    }
    dir.path.join("m.safetensors")
}

#[test]
fn a_malformed_kinds_file_is_reported_and_ranks_as_none() {
    let none = Dir::new("kinds-none");
    let mut plain = engine_at(model_with_kinds(&none, None), "");
    let info = plain.info();
    assert_eq!((info.kinds_error, info.kinds_path), (None, None));

    let bad = Dir::new("kinds-bad");
    let weights = model_with_kinds(
        &bad,
        Some("<unk>\t10\t10\t10\nisprint\t0\t0\t9\nnot a word\t1\t2\t3\n"),
    );
    let mut e = engine_at(weights.clone(), "");
    let info = e.info();
    assert_eq!(info.model_error, None);
    let err = info
        .kinds_error
        .expect("a malformed kinds file must be reported")
        .to_string();
    assert!(
        err.contains("m.kinds.txt") && err.contains("line 3"),
        "{err}"
    );
    assert_eq!((info.kinds_path, info.kinds_count), (None, 0));
    for (i, kind) in [TextKind::Prose, TextKind::String, TextKind::Code]
        .into_iter()
        .enumerate()
    {
        let before = "The weather is";
        assert_eq!(
            menu(&mut e, i as u64, before, kind),
            menu(&mut plain, i as u64, before, kind)
        );
    }

    // The CLI says so too (on stderr, with what it measured).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_laya"))
        .args(["predict", "--model"])
        .arg(&weights)
        .arg("The weather is")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success());
    assert!(
        stderr.contains("kinds file not used: kinds file ") && stderr.contains("line 3"),
        "{stderr}"
    );
}

/// The ghost text after `before` with thresholds 0 (prose) and 0.9999
/// (code), the kind of text as the editor says.
fn ghost_with_code_threshold(before: &str, kind: TextKind) -> String {
    let mut e = Engine::new(laya::engine::EngineOptions {
        model_path: Some(models().join("laya-default.safetensors")),
        backend: laya::model::BackendChoice::Cpu,
        threshold: Some(0.0),
        code_threshold: Some(0.9999),
        ..Default::default()
    });
    let p = e.predict(&Request {
        buffer: 1,
        before,
        filetype: "",
        kind,
        k: 3,
        seen_last: false,
        learn: false,
    });
    assert!(!p.candidates.is_empty(), "{before:?}");
    p.ghost
}

#[test]
fn code_has_its_own_ghost_threshold_where_the_text_reads_as_code() {
    let code = "static int count(const char *s) {\n    int n = 0;\n    while (*s) {\n        if (isprint(*s++)) n++;\n    }\n    return n;\n}\nstatic int size(const char *s) {\n    int n = 0;\n    ret";
    let prose = "The weather was fine and the town was quiet. We walked along the river and talked about the weather, the town and the river. In the evening we ret";
    // The editor did not say: the words before the cursor tell.
    assert_eq!(ghost_with_code_threshold(code, TextKind::Unknown), "");
    assert_ne!(ghost_with_code_threshold(prose, TextKind::Unknown), "");
    // Where it says, it decides.
    assert_ne!(ghost_with_code_threshold(code, TextKind::Prose), "");
    assert_eq!(ghost_with_code_threshold(prose, TextKind::Code), "");
}
