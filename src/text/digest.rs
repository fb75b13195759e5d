//! The vocabulary's fingerprint (models/FORMAT.md `vocab_sha256`): the weights
//! file names the vocabulary it was trained with by this hash.

/// SHA-256 of `bytes` as lowercase hex (the vocabulary hash of FORMAT.md).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
