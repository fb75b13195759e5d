//! Why the engine runs without its model or its word list. Each kind comes
//! with what to do about it, which `:checkhealth laya` shows.

use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoadError {
    #[error("no model file found (set host.model, or LAYA_MODEL for the command line)")]
    NoModelFile,
    #[error("the neural model is turned off")]
    Disabled,
    // The loaders' messages name the file and what is wrong with it.
    #[error("{reason}")]
    Vocabulary { path: PathBuf, reason: String },
    #[error("{reason}")]
    Model { path: PathBuf, reason: String },
    #[error("{reason}")]
    WordList { path: PathBuf, reason: String },
    #[error("{reason}")]
    Kinds { path: PathBuf, reason: String },
    #[error("the model backend failed while running: {0}")]
    BackendFailed(String),
    /// The cpu backend runs the model instead of the one asked for (MLX's
    /// startup self-check failed, or MLX did not load).
    #[error("{0}")]
    BackendFallback(String),
}

impl LoadError {
    /// A stable name for the kind of failure (the host's `status` sends it).
    pub fn kind(&self) -> &'static str {
        match self {
            LoadError::NoModelFile => "no_model_file",
            LoadError::Disabled => "disabled",
            LoadError::Vocabulary { .. } => "vocabulary",
            LoadError::Model { .. } => "model",
            LoadError::WordList { .. } => "word_list",
            LoadError::Kinds { .. } => "kinds",
            LoadError::BackendFailed(_) => "backend_failed",
            LoadError::BackendFallback(_) => "backend_fallback",
        }
    }

    /// What the user can do about it.
    pub fn advice(&self) -> &'static str {
        match self {
            LoadError::NoModelFile => {
                "Point host.model in setup() at a .safetensors file (the plugin ships models/laya-default.safetensors)"
            }
            LoadError::Disabled => "Predictions come from the word sources only, as asked",
            LoadError::Vocabulary { .. } => {
                "The vocabulary STEM.vocab.txt must lie beside STEM.safetensors, unchanged from the model's release"
            }
            LoadError::Model { .. } => {
                "Restore the model file from the plugin (models/), or check host.backend (`laya serve --help`)"
            }
            LoadError::WordList { .. } => {
                "Predictions work without it; restore STEM.words.txt from the plugin (models/) or delete it"
            }
            LoadError::Kinds { .. } => {
                "Predictions work without it (no preference for words of prose in prose); restore STEM.kinds.txt from the plugin (models/) or delete it"
            }
            LoadError::BackendFailed(_) => {
                "Predictions go on from the word sources; the host log (:Laya log) has the details"
            }
            LoadError::BackendFallback(_) => {
                "Predictions are right but run on the cpu backend; build Laya against the MLX installed (cargo build --release --features mlx) or set host.backend = 'cpu'"
            }
        }
    }
}
