//! The frozen caches hold exactly what building the maps entry by entry
//! held: the same probabilities, prefix lists, pairs and predictions, at
//! load and after learning, accepting, forgetting and pruning.

use super::*;
use crate::engine::bigrams::BigramCache;
use crate::engine::word_cache::WordCache;
use crate::engine::{Engine, EngineOptions, Request};
use crate::learn::learning::{build_history, build_history_by_entry};
use crate::learn::{format, Learnt};

/// Text with capitals, non-ASCII words, punctuation, code, repeated pairs
/// and a context with more followers than a key keeps.
fn store_text() -> String {
    let mut t = String::from(
        "The theory of the thing. Then they went there, and then THE END.\n\
         fn main() { let thing = theory_of_things(the_input); self.items.push(x); }\n\
         Le café est naïve; die Straße ist lang. Hash hash HASH hasher HashMap.\n\
         import numpy as np\nnp.array(self.items) # the end of the thing\n\
         so the cat, so the  cat, so the\tcat; the  dog\n",
    );
    for i in 0..40 {
        // "after" is followed by 40 words, some more often than others.
        for _ in 0..(i % 5 + 1) {
            t.push_str(&format!("after w{i} then x{} . ", i % 7));
        }
    }
    t
}

fn engine() -> Engine {
    Engine::new(EngineOptions {
        backend: crate::model::BackendChoice::Cpu,
        ..EngineOptions::default()
    })
}

fn both(bytes: &[u8]) -> (Engine, Engine) {
    let (mut a, mut b) = (engine(), engine());
    a.adopt_history(build_history(bytes).expect("frozen"));
    b.adopt_history(build_history_by_entry(bytes).expect("by entry"));
    (a, b)
}

fn same_words(a: &WordCache, b: &WordCache, words: &[&str]) {
    assert_eq!(a.len(), b.len());
    for w in words {
        assert_eq!(a.prob(w).to_bits(), b.prob(w).to_bits(), "{w}");
        assert_eq!(a.prob_oov(w).to_bits(), b.prob_oov(w).to_bits(), "{w}");
    }
    let mut prefixes: Vec<String> = vec![String::new()];
    for w in words {
        let lower = w.to_ascii_lowercase();
        for n in 1..=lower.len().min(3) {
            if lower.is_char_boundary(n) {
                prefixes.push(lower[..n].to_string());
            }
        }
    }
    for p in &prefixes {
        let x: Vec<_> = a.with_prefix(p).collect();
        let y: Vec<_> = b.with_prefix(p).collect();
        assert_eq!(x, y, "prefix {p:?}");
    }
    let (mut x, mut y): (Vec<&str>, Vec<&str>) = (a.words().collect(), b.words().collect());
    x.sort_unstable();
    y.sort_unstable();
    assert_eq!(x, y);
    // The best (words of equal probability by spelling, in either).
    assert_eq!(a.top(20), b.top(20));
}

fn same_pairs(a: &BigramCache, b: &BigramCache, keys: &[Key]) {
    assert_eq!(a.len(), b.len());
    for &k in keys {
        assert_eq!(a.total(k), b.total(k));
        let x: Vec<_> = a.followers(k).collect();
        let y: Vec<_> = b.followers(k).collect();
        assert_eq!(x, y);
    }
}

fn keys_of(l: &Learnt) -> Vec<Key> {
    let mut keys: Vec<Key> = l
        .pairs
        .keys()
        .filter_map(|(o, c, _)| keys_before(c)[*o as usize])
        .collect();
    keys.extend([1, 2, 3]);
    keys
}

fn same(a: &Engine, b: &Engine, l: &Learnt, extra: &[&str]) {
    let mut words: Vec<&str> = l.words.keys().map(|w| &**w).collect();
    words.extend_from_slice(extra);
    same_words(&a.user_words, &b.user_words, &words);
    same_pairs(&a.user_bigrams, &b.user_bigrams, &keys_of(l));
}

fn same_predictions(a: &mut Engine, b: &mut Engine) {
    assert_eq!(predictions(a), predictions(b));
}

fn predictions(e: &mut Engine) -> Vec<crate::engine::Prediction> {
    let mut out = Vec::new();
    for before in [
        "and then th",
        "after w",
        "after w1",
        "let x = self.it",
        "Le caf",
        "the thing. Th",
        "so after ",
        "we say hash",
    ] {
        out.push(e.predict(&Request {
            buffer: 7,
            before,
            filetype: "",
            kind: Default::default(),
            k: 8,
            seen_last: false,
            learn: true,
        }));
    }
    out
}

#[test]
fn frozen_caches_hold_what_the_maps_held() {
    let mut l = Learnt::default();
    l.add_text(&store_text(), 5);
    let bytes = format::encode(&l);
    let (mut a, mut b) = both(&bytes);
    assert!(a.learnt_words() > 50);
    same(&a, &b, &l, &["zzz", "Hash", "hASH"]);
    same_predictions(&mut a, &mut b);
    // Learning, accepting and forgetting after the load.
    let extra = [
        "newword", "after", "then", "café", "w3", "HashMap", "naïve", "cat",
    ];
    for e in [&mut a, &mut b] {
        e.learn("after w3 then newword. The theory of the café after newword");
        e.accepted(7, "HashMap after w9 then ");
        e.forget_learnt(Some("w3"));
        e.forget_learnt(Some("then"));
        e.forget_learnt(Some("naïve"));
        e.forget_learnt(Some("cat"));
        e.learn("then after then");
    }
    same(&a, &b, &l, &extra);
    same_predictions(&mut a, &mut b);
    for e in [&mut a, &mut b] {
        e.forget_learnt(None);
        e.learn("after w2 again");
    }
    same(&a, &b, &l, &extra);
}

#[test]
fn a_store_in_any_order_loads_the_same() {
    let mut l = Learnt::default();
    l.add_text(&store_text(), 5);
    // The entries reversed (an older writer's order), one word given twice.
    let sorted = format::encode(&l);
    let mut items: Vec<Vec<u8>> = Vec::new();
    let (mut nw, mut np) = (0u32, 0u32);
    format::visit(&sorted, |item| {
        let mut out = Vec::new();
        let text = |out: &mut Vec<u8>, s: &str| {
            out.extend_from_slice(&(s.len() as u16).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        };
        let (e, pair) = match item {
            format::Item::Word(w, e) => {
                nw += 1;
                text(&mut out, w);
                (e, false)
            }
            format::Item::Pair(o, c, w, e) => {
                np += 1;
                out.push(o);
                text(&mut out, c);
                text(&mut out, w);
                (e, true)
            }
            format::Item::Rejection(..) | format::Item::Rate(..) => return,
        };
        out.extend_from_slice(&e.count.to_le_bytes());
        out.extend_from_slice(&e.last.to_le_bytes());
        items.push([vec![pair as u8], out].concat());
    })
    .expect("visit");
    let twice = items.iter().find(|i| i[0] == 0).expect("a word").clone();
    items.insert(3, twice);
    nw += 1;
    items.reverse();
    items.sort_by_key(|i| i[0]);
    let mut bytes = sorted[..14 + 4].to_vec();
    bytes.extend_from_slice(&nw.to_le_bytes());
    bytes.extend_from_slice(&np.to_le_bytes());
    for i in &items {
        bytes.extend_from_slice(&i[1..]);
    }
    // No rejections, no rates.
    bytes.extend_from_slice(&[0; 8]);
    let sum = format::checksum(&bytes);
    bytes.extend_from_slice(&sum.to_le_bytes());
    let (mut a, mut b) = both(&bytes);
    same(&a, &b, &l, &[]);
    same_predictions(&mut a, &mut b);
}

#[test]
fn pruning_over_frozen_entries_keeps_what_the_maps_kept() {
    // Words of distinct counts (pruning ranks them), keys of distinct ages.
    let mut builder = FrozenBuilder::default();
    let (mut words, mut pairs) = (WordCache::with_limit(40), BigramCache::with_limit(40));
    for i in 0..30u32 {
        let w = format!("word{i}");
        builder.add_word(&w, i + 1);
        words.add_count(&w, i + 1);
        let ctx = format!("ctx{i} ");
        builder.add_pair(0, &ctx, &w, i % 3 + 1);
        builder.add_pair(0, &ctx, "common", 1);
        let k = keys_before(&ctx)[0].expect("key");
        pairs.add_count(k, &w, i % 3 + 1);
        pairs.add_count(k, "common", 1);
    }
    let (fw, fp, clock) = builder.finish(40, 40).expect("within bounds");
    let (mut fwords, mut fpairs) = (
        WordCache::with_frozen(40, fw),
        BigramCache::with_frozen(40, fp, clock),
    );
    let names: Vec<String> = (0..60).map(|i| format!("word{i}")).collect();
    let names: Vec<&str> = names.iter().map(|s| &**s).collect();
    let keys: Vec<Key> = (0..60)
        .filter_map(|i| keys_before(&format!("ctx{i} "))[0])
        .collect();
    for i in 30..60 {
        let w = format!("word{i}");
        let k = keys_before(&format!("ctx{i} "))[0].expect("key");
        for c in [&mut words, &mut fwords] {
            c.add(&w);
            c.add("word3");
        }
        for c in [&mut pairs, &mut fpairs] {
            c.add(k, &w);
            c.add(keys[i % 7], "common");
        }
        same_words(&fwords, &words, &names);
        same_pairs(&fpairs, &pairs, &keys);
    }
    assert!(words.len() < 60 && pairs.len() < 60, "both pruned");
}
