//! Text as the model reads it: the tokenizer (`laya-tok-1`), the vocabulary
//! (token ↔ id, prefix ranges) and its fingerprint. Below both `model` (whose
//! weights are trained over a vocabulary) and `engine` (which tokenizes the
//! text before the cursor); it imports neither.

pub mod digest;
pub mod hash;
pub mod tokenizer;
pub mod vocab;
