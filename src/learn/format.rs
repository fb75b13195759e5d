//! The personal store's file format, version 4 (little-endian):
//!
//! ```text
//! magic "LAYA-PERSONAL\n" | version u32 | words u32 | pairs u32
//! words: len u16, UTF-8 bytes, count u32, last u32
//! pairs: order u8, context len u16, bytes, word len u16, bytes, count u32, last u32
//! rejections u32
//! rejections: context len u16, bytes, word len u16, bytes, count u32, last u32
//! rates u32
//! rates: token len u16, bytes, count f32, expected f32
//! checksum u64 of everything before it
//! ```
//!
//! Versions 2 and 3 have the rejections' section only when there are
//! rejections, and no rates; version 1 has neither. The rates are the
//! user's (`engine::rates`): a token of the model's vocabulary by its
//! text, how often the user wrote it, and how often the model expected it
//! there (finite, not negative). A pair's order is the
//! number of previous words its context spans, less one
//! (`engine::bigrams::ORDERS`): 0-3 from version 3 on, 0-1 before (so an
//! older Laya sets a version-3 store aside rather than misread it).
//!
//! A reader rejects a wrong magic, a bad checksum, truncation or trailing
//! bytes (`Corrupt`) and a newer version (`FutureVersion`): the store is then
//! set aside, never read half-way.
//!
//! The writer puts the words in the order of the word cache's prefix index
//! and the pairs in the order of their context's key (`engine::frozen`), so
//! that loading builds the user's caches in one pass without sorting; a
//! reader accepts entries in any order (a store written before is sorted
//! while loading), so the order is no part of the format's version.

use super::{Entry, Learnt, Rate};
use crate::engine::bigrams::{keys_before, ORDERS};
use crate::engine::frozen::index_cmp;

pub const MAGIC: &[u8; 14] = b"LAYA-PERSONAL\n";
pub const VERSION: u32 = 4;
pub const HEADER_LEN: usize = 14 + 4 + 4 + 4;
pub const TRAILER_LEN: usize = 8;
/// The rejections' count after the pairs.
pub const REJECTIONS_HEADER_LEN: usize = 4;
/// The rates' count after the rejections.
pub const RATES_HEADER_LEN: usize = 4;
/// Longest word or context stored (longer ones are not learnt).
pub const MAX_TEXT: usize = 256;

#[derive(Debug, PartialEq)]
pub enum DecodeError {
    Corrupt(String),
    FutureVersion(u32),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Corrupt(why) => write!(f, "corrupt ({why})"),
            DecodeError::FutureVersion(v) => write!(
                f,
                "written by a newer Laya (format {v}, this one reads {VERSION})"
            ),
        }
    }
}

pub fn word_len(w: &str) -> usize {
    2 + w.len() + 8
}

pub fn pair_len(ctx: &str, w: &str) -> usize {
    1 + 2 + ctx.len() + 2 + w.len() + 8
}

pub fn rejection_len(ctx: &str, w: &str) -> usize {
    2 + ctx.len() + 2 + w.len() + 8
}

pub fn rate_len(token: &str) -> usize {
    2 + token.len() + 8
}

/// A fast checksum (not cryptographic: it catches torn and damaged files).
pub fn checksum(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15 ^ bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let v = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        h = (h ^ v).wrapping_mul(0x0100_0000_01b3).rotate_left(29);
    }
    for &b in chunks.remainder() {
        h = (h ^ b as u64)
            .wrapping_mul(0x0100_0000_01b3)
            .rotate_left(29);
    }
    h ^ (h >> 31)
}

fn put_text(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u16).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_entry(out: &mut Vec<u8>, e: &Entry) {
    out.extend_from_slice(&e.count.to_le_bytes());
    out.extend_from_slice(&e.last.to_le_bytes());
}

/// Encodes `l` (words or contexts longer than MAX_TEXT are left out), the
/// words in the order of the word cache's prefix index and the pairs in the
/// order of their context's key, the order the frozen caches are built in
/// (`engine::frozen`), so that loading needs no sorting.
pub fn encode(l: &Learnt) -> Vec<u8> {
    let mut words: Vec<_> = l
        .words
        .iter()
        .filter(|(w, _)| w.len() <= MAX_TEXT)
        .collect();
    words.sort_unstable_by(|a, b| index_cmp(a.0, b.0));
    let mut pairs: Vec<_> = l
        .pairs
        .iter()
        .filter(|((_, c, w), _)| c.len() <= MAX_TEXT && w.len() <= MAX_TEXT)
        .map(|p| {
            let key = keys_before(&p.0 .1).get(p.0 .0 as usize).copied().flatten();
            (key.unwrap_or(0), p)
        })
        .collect();
    pairs.sort_unstable_by(|a, b| (a.0, &a.1 .0).cmp(&(b.0, &b.1 .0)));
    let np = pairs.len();
    let pairs = pairs.into_iter().map(|(_, p)| p);
    let mut out = Vec::with_capacity(l.encoded_len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(words.len() as u32).to_le_bytes());
    out.extend_from_slice(&(np as u32).to_le_bytes());
    for (w, e) in words {
        put_text(&mut out, w);
        put_entry(&mut out, e);
    }
    for ((order, c, w), e) in pairs {
        out.push(*order);
        put_text(&mut out, c);
        put_text(&mut out, w);
        put_entry(&mut out, e);
    }
    let rejections: Vec<_> = l
        .rejections
        .iter()
        .filter(|((c, w), _)| c.len() <= MAX_TEXT && w.len() <= MAX_TEXT)
        .collect();
    out.extend_from_slice(&(rejections.len() as u32).to_le_bytes());
    for ((c, w), e) in rejections {
        put_text(&mut out, c);
        put_text(&mut out, w);
        put_entry(&mut out, e);
    }
    let mut rates: Vec<_> = l
        .rates
        .iter()
        .filter(|(t, _)| t.len() <= MAX_TEXT)
        .collect();
    rates.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.extend_from_slice(&(rates.len() as u32).to_le_bytes());
    for (t, r) in rates {
        put_text(&mut out, t);
        out.extend_from_slice(&r.count.to_le_bytes());
        out.extend_from_slice(&r.expected.to_le_bytes());
    }
    let sum = checksum(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| DecodeError::Corrupt("truncated".into()))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("2")))
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }
    fn text(&mut self) -> Result<&'a str, DecodeError> {
        let n = self.u16()? as usize;
        std::str::from_utf8(self.take(n)?).map_err(|_| DecodeError::Corrupt("not UTF-8".into()))
    }
    fn count(&mut self) -> Result<f32, DecodeError> {
        let x = f32::from_le_bytes(self.take(4)?.try_into().expect("4"));
        if x.is_finite() && x >= 0.0 {
            Ok(x)
        } else {
            Err(DecodeError::Corrupt(format!("rate count {x}")))
        }
    }
    fn entry(&mut self) -> Result<Entry, DecodeError> {
        Ok(Entry {
            count: self.u32()?,
            last: self.u32()?,
        })
    }
}

/// Decodes a whole file.
pub fn decode(bytes: &[u8]) -> Result<Learnt, DecodeError> {
    let mut l = Learnt::default();
    // Counts bounded by the bytes present (a damaged count cannot allocate much).
    let (nw, np) = counts(bytes).unwrap_or((0, 0));
    l.words.reserve(nw.min(bytes.len() / 10));
    l.pairs.reserve(np.min(bytes.len() / 13));
    visit(bytes, |item| match item {
        Item::Word(w, e) => {
            l.words.insert(w.into(), e);
        }
        Item::Pair(order, c, w, e) => {
            l.pairs.insert((order, c.into(), w.into()), e);
        }
        Item::Rejection(c, w, e) => {
            l.rejections.insert((c.into(), w.into()), e);
        }
        Item::Rate(t, r) => {
            l.rates.insert(t.into(), r);
        }
    })?;
    Ok(l)
}

/// The numbers of words and pairs a file's header announces (unchecked).
pub fn counts(bytes: &[u8]) -> Result<(usize, usize), DecodeError> {
    let mut r = Reader { bytes, at: 18 };
    Ok((r.u32()? as usize, r.u32()? as usize))
}

/// One entry of a file: a word, a pair (order, context, word), a
/// rejection (context, word) or a token's rate counts.
pub enum Item<'a> {
    Word(&'a str, Entry),
    Pair(u8, &'a str, &'a str, Entry),
    Rejection(&'a str, &'a str, Entry),
    Rate(&'a str, Rate),
}

/// Hands every word and pair of a file to `item` without
/// building anything (loading at start). The header, version and checksum
/// are checked before the first entry is handed over; a file that turns out
/// malformed after that is an error, and what was handed over must then be
/// dropped by the caller.
pub fn visit(bytes: &[u8], mut item: impl FnMut(Item)) -> Result<(), DecodeError> {
    if bytes.len() < HEADER_LEN + TRAILER_LEN || &bytes[..MAGIC.len()] != MAGIC {
        return Err(DecodeError::Corrupt("not a Laya personal store".into()));
    }
    let version = u32::from_le_bytes(bytes[14..18].try_into().expect("4"));
    if version > VERSION {
        return Err(DecodeError::FutureVersion(version));
    }
    let (body, sum) = bytes.split_at(bytes.len() - TRAILER_LEN);
    if checksum(body) != u64::from_le_bytes(sum.try_into().expect("8")) {
        return Err(DecodeError::Corrupt("checksum mismatch".into()));
    }
    let mut r = Reader {
        bytes: body,
        at: 18,
    };
    let (nw, np) = (r.u32()? as usize, r.u32()? as usize);
    for _ in 0..nw {
        let w = r.text()?;
        item(Item::Word(w, r.entry()?));
    }
    for _ in 0..np {
        let order = r.u8()?;
        let c = r.text()?;
        let w = r.text()?;
        let e = r.entry()?;
        if order as usize >= ORDERS || (version < 3 && order > 1) {
            return Err(DecodeError::Corrupt(format!("pair order {order}")));
        }
        item(Item::Pair(order, c, w, e));
    }
    // Before version 4 the rejections' section is there only when there
    // are rejections; from version 4 on it and the rates' always are.
    if version >= 4 || (version >= 2 && r.at < body.len()) {
        for _ in 0..r.u32()? {
            let c = r.text()?;
            let w = r.text()?;
            item(Item::Rejection(c, w, r.entry()?));
        }
    }
    if version >= 4 {
        for _ in 0..r.u32()? {
            let t = r.text()?;
            let (count, expected) = (r.count()?, r.count()?);
            item(Item::Rate(t, Rate { count, expected }));
        }
    }
    if r.at != body.len() {
        return Err(DecodeError::Corrupt("trailing bytes".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Learnt {
        let mut l = Learnt::default();
        l.add_text(
            "fn main() { let zorb = 1; zorb + 2 }\nThe zorb returns.",
            42,
        );
        l.add_rejection("The ", "zorbs", 43);
        l.add_rate("zorb", 2.0, 0.25);
        l.add_rate("<nl>", 1.0, 1.5);
        l
    }

    #[test]
    fn round_trips() {
        let l = sample();
        let bytes = encode(&l);
        assert_eq!(bytes.len(), l.encoded_len());
        assert_eq!(decode(&bytes), Ok(l));
        assert_eq!(decode(&encode(&Learnt::default())), Ok(Learnt::default()));
    }

    #[test]
    fn every_truncation_and_every_flipped_byte_is_rejected() {
        let bytes = encode(&sample());
        for n in 0..bytes.len() {
            assert!(
                matches!(decode(&bytes[..n]), Err(DecodeError::Corrupt(_))),
                "cut at {n}"
            );
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x20;
            assert!(decode(&b).is_err(), "byte {i} flipped");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer).is_err());
    }

    /// `l` as `version` encodes it: the pairs of orders 0 and 1 before
    /// version 3, no rates before version 4, no rejections in version 1.
    fn older(l: &Learnt, version: u32) -> Learnt {
        let mut old = l.clone();
        if version < 2 {
            old.rejections.clear();
        }
        if version < 4 {
            old.rates.clear();
        }
        if version < 3 {
            old.pairs.retain(|(order, _, _), _| *order <= 1);
        }
        old
    }

    /// `l` (without rates before version 4) encoded as `version` wrote it:
    /// before 4, no rates' count, and no rejections' count without
    /// rejections.
    fn with_version(l: &Learnt, version: u32) -> Vec<u8> {
        let mut b = encode(l);
        b.truncate(b.len() - TRAILER_LEN);
        if version < 4 {
            assert!(l.rates.is_empty(), "no rates before version 4");
            b.truncate(b.len() - RATES_HEADER_LEN);
            if l.rejections.is_empty() {
                b.truncate(b.len() - REJECTIONS_HEADER_LEN);
            }
        }
        b[14..18].copy_from_slice(&version.to_le_bytes());
        let sum = checksum(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        b
    }

    #[test]
    fn version_1_is_read_without_rejections() {
        let l = older(&sample(), 1);
        assert!(l.rejections.is_empty() && !l.pairs.is_empty());
        assert_eq!(decode(&with_version(&l, 1)), Ok(l.clone()));
        assert_eq!(decode(&encode(&sample())).unwrap().rejections.len(), 1);
    }

    #[test]
    fn version_3_is_read_without_rates_and_rates_round_trip() {
        for l in [older(&sample(), 3), {
            let mut l = older(&sample(), 3);
            l.rejections.clear();
            l
        }] {
            assert_eq!(decode(&with_version(&l, 3)), Ok(l.clone()));
        }
        let l = decode(&encode(&sample())).unwrap();
        assert_eq!(
            l.rates["zorb"],
            Rate {
                count: 2.0,
                expected: 0.25
            }
        );
        assert_eq!(l.rates.len(), 2);
    }

    #[test]
    fn a_rate_that_is_not_a_count_is_corruption() {
        let mut l = Learnt::default();
        l.add_rate("zorb", 1.0, 0.5);
        for bad in [f32::NAN, -1.0, f32::INFINITY] {
            l.rates.get_mut("zorb").unwrap().expected = bad;
            assert!(
                matches!(decode(&encode(&l)), Err(DecodeError::Corrupt(why)) if why.starts_with("rate count")),
                "{bad}"
            );
        }
    }

    #[test]
    fn longer_contexts_are_kept_from_version_3_on() {
        let l = sample();
        let orders: std::collections::BTreeSet<u8> = l.pairs.keys().map(|p| p.0).collect();
        assert_eq!(orders.into_iter().collect::<Vec<_>>(), vec![0, 1, 2, 3]);
        assert_eq!(decode(&encode(&l)), Ok(l.clone()));
        // Version 2 had orders 0 and 1 only: a longer one is corruption.
        assert_eq!(decode(&with_version(&older(&l, 2), 2)), Ok(older(&l, 2)));
        let mut longer = l.clone();
        longer.rates.clear();
        assert!(matches!(
            decode(&with_version(&longer, 2)),
            Err(DecodeError::Corrupt(why)) if why.starts_with("pair order")
        ));
    }

    #[test]
    fn a_newer_version_is_named() {
        let mut bytes = encode(&sample());
        bytes[14..18].copy_from_slice(&7u32.to_le_bytes());
        assert_eq!(decode(&bytes), Err(DecodeError::FutureVersion(7)));
    }
}
