//! `laya lsp` with Emacs and eglot in batch mode: completion-at-point's
//! table (eglot-completion-at-point) lists Laya's candidates in Laya's
//! order (eglot sorts by sortText), and accepting the first through eglot's
//! exit function (the server's textEdit) leaves the right text.
//!
//! Skips, saying so, where `emacs` or its eglot package is missing (Debian:
//! `apt-get install emacs-nox elpa-eglot`).

use std::path::Path;
use std::process::Command;

fn emacs_with_eglot() -> bool {
    let ok = Command::new("emacs")
        .args(["--batch", "--eval", "(require 'eglot)"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!(
            "SKIPPED: emacs with eglot not found (Debian: apt-get install emacs-nox elpa-eglot)"
        );
    }
    ok
}

#[test]
fn eglot_completion_at_point_lists_and_inserts_laya_candidates() {
    if !emacs_with_eglot() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("laya-test-eglot-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/emacs/eglot_complete.el");
    let out = Command::new("emacs")
        .args(["--batch", "-l"])
        .arg(&script)
        .current_dir(&dir)
        .env("LAYA_BIN", env!("CARGO_BIN_EXE_laya"))
        .env("HOME", &dir)
        .output()
        .expect("cannot run emacs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let field = |name: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} from emacs\n{stdout}\n{stderr}"))
            .to_string()
    };
    let cands: Vec<String> = serde_json::from_str(&field("CANDS ")).unwrap();
    assert!(
        cands[0].starts_with("zephyrine"),
        "the document's likeliest first: {cands:?}"
    );
    assert!(cands.iter().any(|c| c == "zephyrean"), "{cands:?}");
    assert_eq!(field("LINE "), format!("a {}", cands[0]));
    let _ = std::fs::remove_dir_all(&dir);
}
