//! Fuzzing of the vocabulary, word-list and kinds files (src/text/vocab.rs,
//! src/engine/word_list.rs, src/engine/kind_shares.rs): any text,
//! well-formed or not, gives a list or an error that names the line; a list
//! that loads answers prefix queries exactly as a scan of its words would,
//! and a kinds table gives every listed word shares and factors in [0, 1].
//! See support/fuzz.rs for the runs.

#[path = "support/fuzz.rs"]
mod fuzz;

use laya::engine::kind::TextKind;
use laya::engine::kind_shares::KindShares;
use laya::engine::word_list::WordList;
use laya::text::vocab::Vocab;
use proptest::prelude::*;

/// A token line: mostly word-like, sometimes anything.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[A-Za-z0-9_]{1,8}",
        2 => "[.,;:(){}<>=+*/-]{1,2}",
        1 => "<unk>|<s>|<nl>",
        1 => any::<String>(),
        1 => "[ \t\r]?[a-z]{0,3}[ \t]?",
    ]
}

/// A vocabulary file's text: usually the required head, then tokens,
/// joined by `\n` (sometimes `\r\n`), sometimes with a trailing newline.
fn vocab_text() -> impl Strategy<Value = String> {
    (
        prop::bool::weighted(0.8),
        prop::collection::vec(token(), 0..40),
        prop::bool::ANY,
        prop::bool::weighted(0.1),
    )
        .prop_map(|(head, tokens, trailing, crlf)| {
            let mut lines: Vec<String> = Vec::new();
            if head {
                lines.push("<unk>".into());
                lines.push("<s>".into());
            }
            lines.extend(tokens);
            let mut text = lines.join(if crlf { "\r\n" } else { "\n" });
            if trailing {
                text.push('\n');
            }
            text
        })
}

fn prefix() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z0-9_]{0,3}", any::<String>()]
}

fn check_vocab(text: &str, prefixes: &[String]) -> Result<(), TestCaseError> {
    let (result, peak) = fuzz::peak_bytes(|| Vocab::from_lines(text.lines()));
    fuzz::within(peak, 64 * text.len() + (64 << 10), "vocabulary")?;
    let v = match result {
        Err(e) => {
            let msg = format!("{e:#}");
            prop_assert!(
                msg.starts_with("line ") || msg.starts_with("must start with"),
                "the error names the line or the head: {msg}"
            );
            return Ok(());
        }
        Ok(v) => v,
    };
    let lines: Vec<&str> = text.lines().collect();
    prop_assert_eq!(v.len(), lines.len());
    for (i, l) in lines.iter().enumerate() {
        prop_assert_eq!(v.text(i as u32), *l);
        prop_assert_eq!(v.word_id(l), Some(i as u32));
    }
    for p in prefixes {
        let got: Vec<u32> = v.sorted_ids()[v.prefix_range(p)].to_vec();
        let mut want: Vec<u32> = (0..v.len() as u32)
            .filter(|&id| v.is_word(id) && v.text(id).to_ascii_lowercase().starts_with(p.as_str()))
            .collect();
        let mut sorted_got = got.clone();
        sorted_got.sort_unstable();
        want.sort_unstable();
        prop_assert_eq!(sorted_got, want, "prefix {:?}", p);
    }
    Ok(())
}

/// A word-list file's text: usually `<unk><TAB>total` then word<TAB>count
/// lines, with damage of every kind mixed in.
fn word_list_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        8 => ("[A-Za-z0-9_]{1,10}", 1u64..5000).prop_map(|(w, n)| format!("{w}\t{n}\n")),
        1 => ("[A-Za-z_]{1,4}", any::<u64>()).prop_map(|(w, n)| format!("{w}\t{n}\n")),
        1 => any::<String>().prop_map(|s| s + "\n"),
        1 => "[a-z]{0,3}\t?[0-9]{0,12}\r?\n?",
    ];
    (
        prop_oneof![
            8 => (1u64..10_000_000).prop_map(|n| format!("<unk>\t{n}\n")),
            1 => any::<u64>().prop_map(|n| format!("<unk>\t{n}\n")),
            1 => "[<>a-z\t0-9-]{0,10}\n?",
        ],
        prop::collection::vec(line, 0..40),
    )
        .prop_map(|(head, lines)| head + &lines.concat())
}

fn check_word_list(text: &str, prefixes: &[String]) -> Result<(), TestCaseError> {
    let (result, peak) = fuzz::peak_bytes(|| WordList::parse(text));
    fuzz::within(peak, 64 * text.len() + (64 << 10), "word list")?;
    let l = match result {
        Err(e) => {
            let msg = format!("{e:#}");
            prop_assert!(
                msg.starts_with("line ")
                    || msg.contains("newline")
                    || msg.contains("listed twice")
                    || msg.contains("more than the total"),
                "the error names the problem: {msg}"
            );
            return Ok(());
        }
        Ok(l) => l,
    };
    let words: Vec<&str> = (0..l.len()).map(|i| l.word(i)).collect();
    for p in prefixes {
        let got = l.prefix_range(p);
        let want: Vec<usize> = (0..l.len())
            .filter(|&i| words[i].to_ascii_lowercase().starts_with(p.as_str()))
            .collect();
        prop_assert_eq!(got.clone().collect::<Vec<_>>(), want, "prefix {:?}", p);
        let mut best = Vec::new();
        let share = l.best_with_prefix(p, 4, &mut best);
        prop_assert!(best.len() <= 4 && best.iter().all(|i| got.contains(i)));
        prop_assert!((0.0..=1.0).contains(&share), "share {}", share);
    }
    Ok(())
}

fn vocab_case() -> impl Strategy<Value = (String, Vec<String>)> {
    (vocab_text(), prop::collection::vec(prefix(), 0..4))
}

fn word_list_case() -> impl Strategy<Value = (String, Vec<String>)> {
    (word_list_text(), prop::collection::vec(prefix(), 0..4))
}

#[test]
fn vocabulary_files() {
    fuzz::run("vocabulary", fuzz::QUICK, vocab_case(), |(t, p)| {
        check_vocab(&t, &p)
    });
}

#[test]
fn word_list_files() {
    fuzz::run("word list", fuzz::QUICK, word_list_case(), |(t, p)| {
        check_word_list(&t, &p)
    });
}

#[test]
#[ignore = "long run: LAYA_FUZZ_CASES (default 1M) cases"]
fn vocabulary_files_long() {
    fuzz::run("vocabulary", fuzz::long_cases(), vocab_case(), |(t, p)| {
        check_vocab(&t, &p)
    });
}

#[test]
#[ignore = "long run: LAYA_FUZZ_CASES (default 1M) cases"]
fn word_list_files_long() {
    fuzz::run(
        "word list",
        fuzz::long_cases(),
        word_list_case(),
        |(t, p)| check_word_list(&t, &p),
    );
}

/// A kinds file's text: usually `<unk>` and three totals, then word and
/// three counts per line, with damage of every kind mixed in.
fn kinds_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        8 => ("[A-Za-z0-9_]{1,10}", 0u64..5000, 0u64..5000, 0u64..5000)
            .prop_map(|(w, p, n, c)| format!("{w}\t{p}\t{n}\t{c}\n")),
        1 => ("[A-Za-z_]{1,4}", any::<u64>(), any::<u64>(), any::<u64>())
            .prop_map(|(w, p, n, c)| format!("{w}\t{p}\t{n}\t{c}\n")),
        1 => any::<String>().prop_map(|s| s + "\n"),
        1 => "[a-z\\-]{0,3}(\t[0-9]{0,12}){0,4}\r?\n?",
    ];
    (
        prop_oneof![
            8 => (1u64..10_000_000, 1u64..10_000_000, 1u64..10_000_000)
                .prop_map(|(p, n, c)| format!("<unk>\t{p}\t{n}\t{c}\n")),
            1 => (any::<u64>(), any::<u64>(), any::<u64>())
                .prop_map(|(p, n, c)| format!("<unk>\t{p}\t{n}\t{c}\n")),
            1 => "[<>a-z\t0-9-]{0,12}\n?",
        ],
        prop::collection::vec(line, 0..40),
    )
        .prop_map(|(head, lines)| head + &lines.concat())
}

const KINDS: [TextKind; 5] = [
    TextKind::Unknown,
    TextKind::Prose,
    TextKind::Comment,
    TextKind::String,
    TextKind::Code,
];

fn check_kinds(text: &str, weights: (f32, f32)) -> Result<(), TestCaseError> {
    let (result, peak) = fuzz::peak_bytes(|| KindShares::parse(text));
    fuzz::within(peak, 64 * text.len() + (64 << 10), "kinds file")?;
    let table = match result {
        Err(e) => {
            let msg = format!("{e:#}");
            prop_assert!(
                msg.starts_with("line ") || msg.contains("newline") || msg.contains("listed twice"),
                "the error names the problem: {msg}"
            );
            return Ok(());
        }
        Ok(t) => t,
    };
    let words = text.lines().skip(1).filter_map(|l| l.split('\t').next());
    let mut listed = 0;
    for word in words {
        listed += 1;
        for kind in KINDS {
            let share = table.share(kind, word);
            prop_assert!(share.is_some(), "{word:?} is listed");
            prop_assert!(
                share.is_some_and(|s| (0.0..=1.0).contains(&s)),
                "share {share:?}"
            );
            let f = table.factor(kind, word, weights.0, weights.1);
            prop_assert!((0.0..=1.0).contains(&f), "factor {f} of {word:?}");
        }
    }
    prop_assert_eq!(table.len(), listed);
    Ok(())
}

fn kinds_case() -> impl Strategy<Value = (String, (f32, f32))> {
    (kinds_text(), (0.0f32..8.0, 0.0f32..8.0))
}

#[test]
fn kinds_files() {
    fuzz::run("kinds", fuzz::QUICK, kinds_case(), |(t, w)| {
        check_kinds(&t, w)
    });
}

#[test]
#[ignore = "long run: LAYA_FUZZ_CASES (default 1M) cases"]
fn kinds_files_long() {
    fuzz::run("kinds", fuzz::long_cases(), kinds_case(), |(t, w)| {
        check_kinds(&t, w)
    });
}
