//! What the engine keeps of the user's writing across buffers (the user's
//! word and pair caches, which the ranking mixes in): loading it from the
//! personal store, forgetting it on request.

use super::bigrams::{keys_before, BigramCache, MAX_USER_KEYS};
use super::engine::Engine;
use super::frozen::FrozenBuilder;
use super::rejected::Rejections;
use super::word_cache::{WordCache, MAX_USER_WORDS};

/// The user's history from the personal store, built apart from the engine
/// (on a loading thread, so that a large store never holds up the first
/// keystroke) and then handed over whole (`Engine::adopt_history`).
pub struct History {
    words: WordCache,
    pairs: BigramCache,
    rejections: Rejections,
    /// The user's rates by token text: (token, count, expected).
    rates: Vec<(Box<str>, f32, f32)>,
}

impl Default for History {
    fn default() -> Self {
        History {
            words: WordCache::with_limit(MAX_USER_WORDS),
            pairs: BigramCache::with_limit(MAX_USER_KEYS),
            rejections: Rejections::default(),
            rates: Vec::new(),
        }
    }
}

impl History {
    /// `n` occurrences of `word`.
    pub fn add_word(&mut self, word: &str, n: u32) {
        self.words.add_count(word, n);
    }

    /// `n` occurrences of `word` after `ctx`: the text from the previous
    /// word (order 0) or the order + 1 previous words up to the word.
    pub fn add_pair(&mut self, order: u8, ctx: &str, word: &str, n: u32) {
        if let Some(Some(k)) = keys_before(ctx).get(order as usize) {
            self.pairs.add_count(*k, word, n);
        }
    }

    /// `n` rejections of `word` after `ctx`, the text from the previous
    /// word up to the word (`Engine::learn_rejections`).
    pub fn add_rejections(&mut self, ctx: &str, word: &str, n: u32) {
        self.rejections.add(ctx, word, n);
    }

    /// One token's counts for the user's rates (`engine::rates`).
    pub fn add_rate(&mut self, token: &str, count: f32, expected: f32) {
        self.rates.push((token.into(), count, expected));
    }

    /// Distinct words held.
    pub fn words(&self) -> usize {
        self.words.len()
    }

    /// The user's word and pair caches it holds.
    pub fn caches(&self) -> (&WordCache, &BigramCache) {
        (&self.words, &self.pairs)
    }

    /// The user's rejections it holds.
    pub fn rejections(&self) -> &Rejections {
        &self.rejections
    }

    /// The history of a store's words and pairs collected in `b` (in use
    /// at once: frozen arrays, no map built); None when they exceed the
    /// caches' bounds, which then add them one by one (`add_word`,
    /// `add_pair`) and prune as they go.
    pub fn frozen(b: FrozenBuilder) -> Option<History> {
        let (words, pairs, clock) = b.finish(MAX_USER_WORDS, MAX_USER_KEYS)?;
        Some(History {
            words: WordCache::with_frozen(MAX_USER_WORDS, words),
            pairs: BigramCache::with_frozen(MAX_USER_KEYS, pairs, clock),
            rejections: Rejections::default(),
            rates: Vec::new(),
        })
    }
}

impl Engine {
    /// Counts from the user's store: words, and (order, context, word)
    /// pairs whose context is the text from the previous word (order 0) or
    /// the order + 1 previous words up to the word.
    pub fn learn_counts<'a>(
        &mut self,
        words: impl Iterator<Item = (&'a str, u32)>,
        pairs: impl Iterator<Item = (u8, &'a str, &'a str, u32)>,
    ) {
        for (w, n) in words {
            self.user_words.add_count(w, n);
        }
        for (order, ctx, w, n) in pairs {
            if let Some(Some(k)) = keys_before(ctx).get(order as usize) {
                self.user_bigrams.add_count(*k, w, n);
            }
        }
        self.user_bigrams.compact_if_large();
    }

    /// Takes `history` as everything the user's history holds (what was
    /// learnt before is dropped: the caller replays it).
    pub fn adopt_history(&mut self, history: History) {
        self.user_words = history.words;
        self.user_bigrams = history.pairs;
        self.rejections = history.rejections;
        let m = self.rate_counts(history.rates.iter().map(|(t, c, e)| (&**t, *c, *e)));
        self.rates.clear();
        self.add_rates(&m);
    }

    /// Forgets what was learnt of `word` (and the pairs it ends or starts
    /// after a blank, its rejections and those after it), or everything
    /// learnt when `None`.
    pub fn forget_learnt(&mut self, word: Option<&str>) {
        match word {
            Some(w) => {
                if let Some(id) = self.vocab.as_ref().and_then(|v| v.word_id(w)) {
                    self.rates.forget(id);
                }
                self.user_words.remove(w);
                self.user_bigrams
                    .remove_word(w, keys_before(&format!("{w} "))[0]);
                self.rejections.forget_word(w);
            }
            None => {
                self.user_words = WordCache::with_limit(MAX_USER_WORDS);
                self.user_bigrams = BigramCache::with_limit(MAX_USER_KEYS);
                self.rejections = Rejections::default();
                self.rates.clear();
            }
        }
    }

    /// Distinct words the user's history holds.
    pub fn learnt_words(&self) -> usize {
        self.user_words.len()
    }
}
