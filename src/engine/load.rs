//! Loading what the engine runs on: the vocabulary, the model backend, the
//! word list beyond the vocabulary and where the words are written. Failures are reported in
//! `EngineInfo` and leave the engine working with what did load.

use super::kind_shares::KindShares;
use super::load_error::LoadError;
use super::options::{EngineInfo, EngineOptions};
use super::word_list::WordList;
use crate::model::{self, Backend};
use crate::text::vocab::Vocab;
use std::sync::Arc;

pub(crate) struct Loaded {
    pub vocab: Option<Arc<Vocab>>,
    pub backend: Option<Box<dyn Backend>>,
    pub word_list: Option<WordList>,
    pub kinds: Option<KindShares>,
}

pub(crate) fn load(opts: &EngineOptions, info: &mut EngineInfo) -> Loaded {
    let mut loaded = Loaded {
        vocab: None,
        backend: None,
        word_list: None,
        kinds: None,
    };
    let weights = opts.model_path.clone().or_else(model::default_model_path);
    // The word list beyond the vocabulary (absent = none), read on a thread
    // of its own while the model loads: sorting 100k words is the longer of
    // the two. Its words get a share of the model's `<unk>`, so without the
    // model it would add nothing.
    let listed = weights
        .as_deref()
        .map(model::words_path_for)
        .filter(|p| opts.neural && p.exists())
        .map(|p| std::thread::spawn(move || (WordList::load(&p), p)));
    // Where the words are written (absent = no preference), on a thread
    // too; it ranks the word sources' words with or without the model.
    let kinds_path = weights
        .as_deref()
        .map(model::kinds_path_for)
        .filter(|p| p.exists());
    let kinds = kinds_path
        .clone()
        .map(|p| std::thread::spawn(move || KindShares::load(&p)));
    let Some(w) = &weights else {
        info.model_error = Some(LoadError::NoModelFile);
        return loaded;
    };
    let vp = model::vocab_path_for(w);
    match Vocab::load(&vp) {
        Err(e) => {
            info.model_error = Some(LoadError::Vocabulary {
                path: vp,
                reason: format!("{e:#}"),
            })
        }
        Ok(v) => {
            let v = Arc::new(v);
            info.vocab_path = Some(vp);
            info.vocab_size = v.len();
            if opts.neural {
                info.model_path = Some(w.clone());
                match model::load_backend_noting(w, &v, opts.backend, opts.dtype) {
                    Ok(model::LoadedBackend {
                        backend: mut b,
                        fallback,
                    }) => {
                        b.set_threads(opts.model_threads);
                        info.backend_error = fallback.map(LoadError::BackendFallback);
                        info.backend = b.name().into();
                        info.device = b.device();
                        info.dtype = b.dtype().into();
                        loaded.backend = Some(b);
                    }
                    Err(e) => {
                        info.model_error = Some(LoadError::Model {
                            path: w.clone(),
                            reason: format!("{e:#}"),
                        })
                    }
                }
            } else {
                info.model_error = Some(LoadError::Disabled);
            }
            loaded.vocab = Some(v);
        }
    }
    // Unreadable = reported, and the engine goes on without it.
    let word_list_path = weights.as_deref().map(model::words_path_for);
    let word_list_error = |reason: String| LoadError::WordList {
        path: word_list_path.clone().unwrap_or_default(),
        reason,
    };
    match listed.map(|t| t.join()) {
        Some(Ok((Ok(l), p))) if loaded.vocab.is_some() => {
            info.words_path = Some(p);
            info.words_count = l.len();
            loaded.word_list = Some(l);
        }
        Some(Ok((Err(e), _))) => info.words_error = Some(word_list_error(format!("{e:#}"))),
        Some(Err(_)) => info.words_error = Some(word_list_error("reading it panicked".into())),
        _ => {}
    }
    let kinds_error = |reason: String| LoadError::Kinds {
        path: kinds_path.clone().unwrap_or_default(),
        reason,
    };
    match kinds.map(|t| t.join()) {
        Some(Ok(Ok(k))) => {
            info.kinds_path = kinds_path.clone();
            info.kinds_count = k.len();
            loaded.kinds = Some(k);
        }
        Some(Ok(Err(e))) => info.kinds_error = Some(kinds_error(format!("{e:#}"))),
        Some(Err(_)) => info.kinds_error = Some(kinds_error("reading it panicked".into())),
        None => {}
    }
    loaded
}
