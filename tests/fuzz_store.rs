//! Fuzzing of the personal store's decoder (src/learn/format.rs): files
//! with a valid checksum over damaged or arbitrary contents (so the
//! decoder's own checks are reached, not only the checksum's), and any
//! bytes at all. A file that decodes encodes back to what it decoded to;
//! one that does not is `Corrupt` with a reason or a named future version;
//! a damaged count never allocates beyond the file's size. The loader's
//! frozen caches (`learning::build_history`) accept exactly the files the
//! decoder accepts and hold what the caches built entry by entry hold
//! (checked on well-formed stores of few, often repeated, words in any
//! order, with counts of any size, rejections sections of any length,
//! repeated entries and contexts with no previous word among them, and
//! format 4's rates, their counts any bits in the damaged files).
//! See support/fuzz.rs for the runs.

#[path = "support/fuzz.rs"]
mod fuzz;

use laya::engine::bigrams::{keys_before, ORDERS};
use laya::learn::format::{checksum, decode, encode, visit, DecodeError, Item, MAGIC, VERSION};
use laya::learn::learning::{build_history, build_history_by_entry};
use laya::learn::Learnt;
use proptest::prelude::*;

/// One record: a word, a pair or a rejection, written the way the format
/// says, or with its fields damaged.
fn record() -> impl Strategy<Value = Vec<u8>> {
    let text = prop_oneof![
        4 => "[a-zA-Z_]{1,12}".prop_map(String::into_bytes),
        1 => any::<String>().prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>(), 0..12),
    ];
    let put = |out: &mut Vec<u8>, t: &[u8], lie: Option<u16>| {
        out.extend_from_slice(&lie.unwrap_or(t.len() as u16).to_le_bytes());
        out.extend_from_slice(t);
    };
    let lie = prop_oneof![8 => Just(None), 1 => any::<u16>().prop_map(Some)];
    prop_oneof![
        (text.clone(), lie.clone(), any::<[u32; 2]>()).prop_map(move |(w, l, e)| {
            let mut out = Vec::new();
            put(&mut out, &w, l);
            out.extend_from_slice(&e[0].to_le_bytes());
            out.extend_from_slice(&e[1].to_le_bytes());
            out
        }),
        (
            prop_oneof![4 => 0u8..ORDERS as u8, 1 => any::<u8>()],
            text.clone(),
            text.clone(),
            lie.clone(),
            any::<[u32; 2]>()
        )
            .prop_map(move |(order, c, w, l, e)| {
                let mut out = vec![order];
                put(&mut out, &c, l);
                put(&mut out, &w, None);
                out.extend_from_slice(&e[0].to_le_bytes());
                out.extend_from_slice(&e[1].to_le_bytes());
                out
            }),
        (text.clone(), text, lie, any::<[u32; 2]>()).prop_map(move |(c, w, l, e)| {
            let mut out = Vec::new();
            put(&mut out, &c, None);
            put(&mut out, &w, l);
            out.extend_from_slice(&e[0].to_le_bytes());
            out.extend_from_slice(&e[1].to_le_bytes());
            out
        }),
        prop::collection::vec(any::<u8>(), 0..8),
    ]
}

/// A well-formed store in any order: words, pairs and rejections of a few
/// letters (so that words repeat, share prefixes and contexts), counts
/// small or any; the rejections' section (any length, none or empty too)
/// repeats entries and has contexts without a previous word among them.
fn well_formed() -> impl Strategy<Value = Vec<u8>> {
    let count = prop_oneof![6 => 0u32..4, 1 => any::<u32>()];
    let word = "[abAB\u{e9}]{1,3}";
    let words = prop::collection::vec((word, count.clone()), 0..30);
    let pairs = prop::collection::vec(
        (
            0u8..ORDERS as u8,
            "[ab]{1,2}[ .,\n]{1,2}([ab]{1,2}[ .(]{1,2})?",
            word,
            count.clone(),
        ),
        0..60,
    );
    let rejection_ctx = prop_oneof![
        4 => "[ab]{1,2}[ .,\n]{1,2}",
        1 => "[ .(\n]{0,2}",
    ];
    let rejections = prop_oneof![
        1 => Just(None),
        2 => prop::collection::vec((rejection_ctx, "[abA\u{e9}]{1,2}", count), 0..40)
            .prop_map(Some),
    ];
    // Format 4's rates (tokens repeat; counts small, fractional or large);
    // None: a format-3 store, whose rejections' section may be missing.
    let rate = prop_oneof![3 => 0.0f32..4.0, 1 => 0.0f32..1e30];
    let rates = prop_oneof![
        1 => Just(None),
        2 => prop::collection::vec(("[ab<>.]{1,2}", rate.clone(), rate), 0..20).prop_map(Some),
    ];
    (words, pairs, rejections, rates, any::<u32>()).prop_map(
        |(words, pairs, rejections, rates, last)| {
            let text = |out: &mut Vec<u8>, s: &str| {
                out.extend_from_slice(&(s.len() as u16).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            };
            let version: u32 = if rates.is_some() { VERSION } else { 3 };
            let rejections = match (&rates, rejections) {
                (Some(_), r) => Some(r.unwrap_or_default()),
                (None, r) => r,
            };
            let mut out = MAGIC.to_vec();
            out.extend_from_slice(&version.to_le_bytes());
            out.extend_from_slice(&(words.len() as u32).to_le_bytes());
            out.extend_from_slice(&(pairs.len() as u32).to_le_bytes());
            for (w, n) in words {
                text(&mut out, &w);
                out.extend_from_slice(&n.to_le_bytes());
                out.extend_from_slice(&last.to_le_bytes());
            }
            for (order, c, w, n) in pairs {
                out.push(order);
                text(&mut out, &c);
                text(&mut out, &w);
                out.extend_from_slice(&n.to_le_bytes());
                out.extend_from_slice(&last.to_le_bytes());
            }
            if let Some(rejections) = rejections {
                out.extend_from_slice(&(rejections.len() as u32).to_le_bytes());
                for (c, w, n) in rejections {
                    text(&mut out, &c);
                    text(&mut out, &w);
                    out.extend_from_slice(&n.to_le_bytes());
                    out.extend_from_slice(&last.to_le_bytes());
                }
            }
            if let Some(rates) = rates {
                out.extend_from_slice(&(rates.len() as u32).to_le_bytes());
                for (t, c, e) in rates {
                    text(&mut out, &t);
                    out.extend_from_slice(&c.to_le_bytes());
                    out.extend_from_slice(&e.to_le_bytes());
                }
            }
            let sum = checksum(&out);
            out.extend_from_slice(&sum.to_le_bytes());
            out
        },
    )
}

/// A store file: the header with counts that may lie, records, sometimes a
/// rejections' section (its count may lie), usually a correct checksum,
/// sometimes a cut or a flipped byte.
fn store_file() -> impl Strategy<Value = Vec<u8>> {
    let structured = (
        prop_oneof![8 => Just(VERSION), 1 => any::<u32>()],
        prop::collection::vec(record(), 0..12),
        prop_oneof![
            3 => Just(None),
            1 => (
                prop_oneof![4 => Just(None), 1 => any::<u32>().prop_map(Some)],
                prop::collection::vec(record(), 0..6)
            )
                .prop_map(Some),
        ],
        prop_oneof![4 => Just(None), 1 => any::<(u32, u32)>().prop_map(Some)],
        prop_oneof![6 => Just(None), 1 => any::<(usize, u8)>().prop_map(Some)],
        prop::bool::weighted(0.9),
        // A rates' section: its count may lie, its counts any bits (NaN,
        // negative, infinite among them).
        prop_oneof![
            1 => Just(None),
            1 => (
                prop_oneof![4 => Just(None), 1 => any::<u32>().prop_map(Some)],
                prop::collection::vec(("[ab]{1,3}", any::<[u8; 8]>()), 0..6)
            )
                .prop_map(Some),
        ],
    )
        .prop_map(
            |(version, records, rejections, counts, flip, sign, rates)| {
                // Without lying counts: the first half of the records are words.
                let (nw, np) = counts.unwrap_or((
                    (records.len() / 2) as u32,
                    (records.len() - records.len() / 2) as u32,
                ));
                let mut out = MAGIC.to_vec();
                out.extend_from_slice(&version.to_le_bytes());
                out.extend_from_slice(&nw.to_le_bytes());
                out.extend_from_slice(&np.to_le_bytes());
                for r in records {
                    out.extend_from_slice(&r);
                }
                if let Some((n, records)) = rejections {
                    let n = n.unwrap_or(records.len() as u32);
                    out.extend_from_slice(&n.to_le_bytes());
                    for r in records {
                        out.extend_from_slice(&r);
                    }
                }
                if let Some((n, rates)) = rates {
                    let n = n.unwrap_or(rates.len() as u32);
                    out.extend_from_slice(&n.to_le_bytes());
                    for (t, counts) in rates {
                        out.extend_from_slice(&(t.len() as u16).to_le_bytes());
                        out.extend_from_slice(t.as_bytes());
                        out.extend_from_slice(&counts);
                    }
                }
                if let Some((at, x)) = flip {
                    let n = out.len();
                    out[at % n] ^= x;
                }
                let sum = if sign { checksum(&out) } else { 0 };
                out.extend_from_slice(&sum.to_le_bytes());
                out
            },
        );
    prop_oneof![
        6 => structured,
        3 => well_formed(),
        1 => prop::collection::vec(any::<u8>(), 0..200),
        1 => prop::collection::vec(any::<u8>(), 0..64).prop_map(|tail| {
            let mut b = MAGIC.to_vec();
            b.extend_from_slice(&tail);
            b
        }),
    ]
}

fn check(bytes: &[u8]) -> Result<(), TestCaseError> {
    let (result, peak) = fuzz::peak_bytes(|| decode(bytes));
    fuzz::within(peak, 64 * bytes.len() + 4096, "store decode")?;
    match result {
        Ok(l) => {
            let again = encode(&l);
            prop_assert_eq!(again.len(), l.encoded_len());
            prop_assert_eq!(decode(&again), Ok(l.clone()));
            same_history(bytes, &l)?;
            // Written again, in the frozen caches' order: the same history.
            same_history(&again, &l)?;
        }
        Err(DecodeError::Corrupt(why)) => {
            prop_assert!(!why.is_empty());
            prop_assert!(build_history(bytes).is_err());
        }
        Err(DecodeError::FutureVersion(v)) => {
            prop_assert!(v > VERSION);
            prop_assert!(build_history(bytes).is_err());
        }
    }
    Ok(())
}

/// The loader's frozen caches hold what building them entry by entry does.
fn same_history(bytes: &[u8], l: &Learnt) -> Result<(), TestCaseError> {
    let (frozen, peak) = fuzz::peak_bytes(|| build_history(bytes));
    fuzz::within(peak, 64 * bytes.len() + 4096, "store load")?;
    let (frozen, by_entry) = (frozen.expect("decodes"), build_history_by_entry(bytes));
    let ((fw, fp), (bw, bp)) = (
        frozen.caches(),
        by_entry.as_ref().expect("decodes").caches(),
    );
    prop_assert_eq!(fw.len(), bw.len());
    prop_assert_eq!(fp.len(), bp.len());
    for w in l.words.keys().map(|w| &**w).chain(["a", "zz"]) {
        prop_assert_eq!(fw.prob(w).to_bits(), bw.prob(w).to_bits());
        let lower = w.to_ascii_lowercase();
        for n in 0..=lower.len() {
            if lower.is_char_boundary(n) {
                let x: Vec<_> = fw.with_prefix(&lower[..n]).collect();
                let y: Vec<_> = bw.with_prefix(&lower[..n]).collect();
                prop_assert_eq!(x, y);
            }
        }
    }
    prop_assert_eq!(fw.top(8), bw.top(8));
    let (fr, br) = (
        frozen.rejections(),
        by_entry.as_ref().expect("decodes").rejections(),
    );
    prop_assert_eq!(fr.remembered(), br.remembered());
    prop_assert_eq!(fr.remembered(), fr.entries().count());
    let (mut x, mut y): (Vec<_>, Vec<_>) = (fr.entries().collect(), br.entries().collect());
    x.sort_unstable();
    y.sort_unstable();
    prop_assert_eq!(x, y);
    // What is remembered was stored; what was stored (once, with a count
    // and a previous word) is remembered unless its context is full.
    let key = |c: &str| keys_before(c)[0];
    for (c, w, _) in fr.entries() {
        prop_assert!(l
            .rejections
            .keys()
            .any(|(c2, w2)| &**w2 == w && key(c2) == key(c)));
    }
    for ((c, w), e) in &l.rejections {
        if let (Some(k), true) = (key(c), e.count > 0) {
            prop_assert!(fr.count(k, w) > 0 || fr.at(k).count() == 8);
        }
    }
    for (order, ctx, _) in l.pairs.keys() {
        if let Some(Some(k)) = keys_before(ctx).get(*order as usize) {
            prop_assert_eq!(fp.total(*k), bp.total(*k));
            let x: Vec<_> = fp.followers(*k).collect();
            let y: Vec<_> = bp.followers(*k).collect();
            prop_assert_eq!(x, y);
        }
    }
    Ok(())
}

/// The well-formed stores cover format 2: rejections' sections, with
/// repeated entries and contexts without a previous word among them; and
/// format 4's rates.
#[test]
fn well_formed_stores_hold_rejections() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut with, mut repeated, mut no_word, mut rates) = (0, 0, 0, 0);
    for _ in 0..300 {
        let bytes = well_formed().new_tree(&mut runner).unwrap().current();
        let l = decode(&bytes).expect("well-formed");
        rates += !l.rates.is_empty() as u32;
        let mut section = 0;
        visit(&bytes, |item| {
            section += matches!(item, Item::Rejection(..)) as usize
        })
        .unwrap();
        with += (section > 0) as u32;
        // Fewer distinct entries than the section holds: some repeat.
        repeated += (l.rejections.len() < section) as u32;
        no_word += l
            .rejections
            .keys()
            .any(|(c, _)| keys_before(c)[0].is_none()) as u32;
    }
    assert!(
        with > 100 && repeated > 10 && no_word > 10 && rates > 100,
        "{with} {repeated} {no_word} {rates}"
    );
}

#[test]
fn store_files() {
    fuzz::run("personal store", fuzz::QUICK, store_file(), |b| check(&b));
}

#[test]
#[ignore = "long run: LAYA_FUZZ_CASES (default 1M) cases"]
fn store_files_long() {
    fuzz::run("personal store", fuzz::long_cases(), store_file(), |b| {
        check(&b)
    });
}
