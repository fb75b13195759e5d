//! The command line: every subcommand has a `--help` that prints its usage
//! and exits 0, and an unknown flag is an error that names it.

use std::process::{Command, Output};

const LAYA: &str = env!("CARGO_BIN_EXE_laya");

fn laya(args: &[&str]) -> Output {
    Command::new(LAYA).args(args).output().unwrap()
}

/// The subcommands `laya --help` lists (so a new one is covered here too).
fn subcommands() -> Vec<String> {
    let out = laya(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout).to_string();
    let listed: Vec<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|name| name != "help")
        .collect();
    for known in [
        "serve",
        "predict",
        "protocol",
        "eval",
        "bench",
        "agree",
        "random-model",
    ] {
        assert!(listed.iter().any(|n| n == known), "{known} in {help}");
    }
    listed
}

#[test]
fn every_subcommand_has_help() {
    for sub in subcommands() {
        for flag in ["--help", "-h"] {
            let out = laya(&[&sub, flag]);
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(out.status.code(), Some(0), "laya {sub} {flag}: {text}");
            assert!(
                text.contains(&format!("Usage: laya {sub}")),
                "laya {sub} {flag}: {text}"
            );
            assert!(out.stderr.is_empty(), "laya {sub} {flag} ran something");
        }
    }
}

#[test]
fn unknown_flags_are_named_errors() {
    for sub in subcommands() {
        let out = laya(&[&sub, "--no-such-flag"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "laya {sub}: {err}");
        assert!(err.contains("--no-such-flag"), "laya {sub}: {err}");
        assert!(out.stdout.is_empty(), "laya {sub}: errors go to stderr");
    }
    let out = laya(&["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("frobnicate"));
}

#[test]
fn bad_values_are_named_errors() {
    for (args, named) in [
        (&["eval", "x.txt", "--window", "many"][..], "--window"),
        (&["bench", "--dtype", "f16"][..], "f16"),
        (
            &["predict", "abc", "--tune", "no_such_key=1"][..],
            "no_such_key",
        ),
        (&["serve", "--log-level", "loud"][..], "loud"),
    ] {
        let out = laya(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "laya {args:?}: {err}");
        assert!(err.contains(named), "laya {args:?}: {err}");
    }
}

#[test]
fn both_spellings_of_a_value_and_the_last_one_wins() {
    // `--flag=value` and `--flag value` are the same; repeating a flag keeps
    // the last value (scripts append to a default command line).
    for args in [
        &["predict", "--no-model", "--k=1", "hello wor"][..],
        &["predict", "--no-model", "-k", "5", "-k", "1", "hello wor"][..],
    ] {
        let out = laya(args);
        assert!(out.status.success(), "{args:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(" 1. ") && !text.contains(" 2. "), "{text}");
    }
}
