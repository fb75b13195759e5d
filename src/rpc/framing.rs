//! Cuts the byte stream from Neovim into whole msgpack-RPC messages.
//!
//! Each byte is looked at once: the scanner follows msgpack's markers and
//! lengths (a stack of items still to come per open array or map) without
//! decoding anything, so a message is parsed for real only once it is
//! whole. A message over the size cap is never held in memory: its bytes
//! are counted and dropped until it ends, and only its envelope (kind,
//! request id) is kept to answer it. A message must start as msgpack-RPC
//! messages do (an array of 3 or 4 items whose first is the kind 0, 1 or
//! 2); anything else means the stream is out of sync and no later message
//! boundary can be trusted.

use std::fmt;

/// The largest message kept by default. The plugin's largest is a
/// 32 KB piece of text to learn; a keystroke's context is a few KB.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 4 << 20;

/// Arrays and maps nested deeper than this are not a message from Neovim;
/// the bound keeps the scanner's stack small.
pub const MAX_DEPTH: usize = 256;

/// What the scanner found.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// The bytes of one whole message, at most the cap.
    Message(Vec<u8>),
    /// A message over the cap, skipped: its size, its kind (0 request,
    /// 1 response, 2 notification) and, for a request, its id.
    Oversized {
        bytes: u64,
        kind: u8,
        msgid: Option<u64>,
    },
}

/// The stream cannot be cut into messages any more.
#[derive(Debug, PartialEq)]
pub struct OutOfSync(pub String);

impl fmt::Display for OutOfSync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a marker and its length bytes announce.
enum Item {
    /// Complete in its header (nil, booleans, numbers).
    Scalar(Option<u64>),
    /// Followed by this many bytes (str, bin, ext).
    Bytes(u64),
    /// Followed by this many items (an array's, or twice a map's length).
    Items(u64),
}

pub struct Framer {
    max: usize,
    /// The current message's bytes while it is within the cap.
    buf: Vec<u8>,
    /// Bytes of the current message seen so far (kept or not).
    len: u64,
    /// The current message is over the cap: its bytes are not kept.
    skipping: bool,
    /// A marker and its length bytes, while they arrive.
    header: Vec<u8>,
    /// Bytes of a str/bin/ext still to come.
    payload_left: u64,
    /// Items still to come in each open array or map, outermost first.
    open: Vec<u64>,
    /// Items in the message's outer array.
    top_len: u64,
    /// Messages completed so far.
    messages: u64,
    kind: u8,
    msgid: Option<u64>,
}

impl Framer {
    pub fn new(max_message_bytes: usize) -> Framer {
        Framer {
            max: max_message_bytes,
            buf: Vec::new(),
            len: 0,
            skipping: false,
            header: Vec::with_capacity(9),
            payload_left: 0,
            open: Vec::new(),
            top_len: 0,
            messages: 0,
            kind: 0,
            msgid: None,
        }
    }

    /// How many messages were completed (kept or skipped).
    pub fn messages(&self) -> u64 {
        self.messages
    }

    /// True while a message has begun and not ended.
    pub fn in_message(&self) -> bool {
        self.len > 0 || !self.header.is_empty()
    }

    /// Scans `input`, appending each message it completes to `out`.
    pub fn push(&mut self, mut input: &[u8], out: &mut Vec<Frame>) -> Result<(), OutOfSync> {
        while !input.is_empty() {
            if self.payload_left > 0 {
                let n = self.payload_left.min(input.len() as u64) as usize;
                self.keep(&input[..n]);
                self.payload_left -= n as u64;
                input = &input[n..];
                if self.payload_left == 0 {
                    self.item_done(out);
                }
                continue;
            }
            let marker = *self.header.first().unwrap_or(&input[0]);
            let need = header_len(marker)
                .ok_or_else(|| OutOfSync(format!("byte 0x{marker:02x} is no msgpack marker")))?;
            let n = (need - self.header.len()).min(input.len());
            self.header.extend_from_slice(&input[..n]);
            input = &input[n..];
            if self.header.len() < need {
                continue;
            }
            let header = std::mem::take(&mut self.header);
            self.keep(&header);
            let item = read_header(&header);
            self.header = header;
            self.header.clear();
            self.check_envelope(marker, &item)?;
            match item {
                Item::Scalar(_) | Item::Bytes(0) | Item::Items(0) => self.item_done(out),
                Item::Bytes(n) => {
                    self.payload_left = n;
                    self.announce(n);
                }
                Item::Items(n) => {
                    if self.open.len() >= MAX_DEPTH {
                        return Err(OutOfSync(format!(
                            "arrays or maps nested deeper than {MAX_DEPTH} levels"
                        )));
                    }
                    self.open.push(n);
                    // Every item takes at least one byte.
                    self.announce(n);
                }
            }
        }
        Ok(())
    }

    /// The first item must open an array of 3 or 4 whose first item is the
    /// kind of message; the second is a request's or response's id.
    fn check_envelope(&mut self, marker: u8, item: &Item) -> Result<(), OutOfSync> {
        let index = match self.open.as_slice() {
            [] => {
                return match item {
                    Item::Items(n @ (3 | 4)) if is_array(marker) => {
                        self.top_len = *n;
                        Ok(())
                    }
                    _ => Err(OutOfSync(format!(
                        "a message starts with an array of 3 or 4 items, not marker 0x{marker:02x}"
                    ))),
                }
            }
            [left] => self.top_len - left,
            _ => return Ok(()),
        };
        match (index, item) {
            (0, Item::Scalar(Some(k @ 0..=2))) => self.kind = *k as u8,
            (0, _) => {
                return Err(OutOfSync(format!(
                    "a message's first item is its kind (0, 1 or 2), not marker 0x{marker:02x}"
                )))
            }
            (1, Item::Scalar(id)) if self.kind != 2 => self.msgid = *id,
            _ => {}
        }
        Ok(())
    }

    /// Counts (and, within the cap, keeps) bytes of the current message.
    fn keep(&mut self, bytes: &[u8]) {
        self.len += bytes.len() as u64;
        if !self.skipping {
            self.buf.extend_from_slice(bytes);
        }
    }

    /// `n` more bytes are certain to come: past the cap, stop keeping them.
    fn announce(&mut self, n: u64) {
        if !self.skipping && self.len.saturating_add(n) > self.max as u64 {
            self.skipping = true;
            self.buf = Vec::new();
        }
    }

    /// One item ended: close the arrays and maps it completes; the message
    /// ends with the outer array.
    fn item_done(&mut self, out: &mut Vec<Frame>) {
        loop {
            match self.open.last_mut() {
                None => return self.message_done(out),
                Some(left) => {
                    *left -= 1;
                    if *left > 0 {
                        return;
                    }
                    self.open.pop();
                }
            }
        }
    }

    fn message_done(&mut self, out: &mut Vec<Frame>) {
        if self.skipping {
            out.push(Frame::Oversized {
                bytes: self.len,
                kind: self.kind,
                msgid: self.msgid,
            });
            self.buf = Vec::new();
        } else {
            out.push(Frame::Message(std::mem::take(&mut self.buf)));
        }
        self.messages += 1;
        self.len = 0;
        self.skipping = false;
        self.kind = 0;
        self.msgid = None;
    }
}

fn is_array(marker: u8) -> bool {
    matches!(marker, 0x90..=0x9f | 0xdc | 0xdd)
}

/// Bytes of the marker plus its length or value bytes; None for 0xc1, the
/// one byte msgpack never uses.
fn header_len(marker: u8) -> Option<usize> {
    Some(match marker {
        0x00..=0xbf | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => 1,
        0xc1 => return None,
        0xc4 | 0xd9 => 2, // bin8, str8
        0xc5 | 0xda => 3, // bin16, str16
        0xc6 | 0xdb => 5, // bin32, str32
        0xc7 => 3,        // ext8: length, type
        0xc8 => 4,        // ext16
        0xc9 => 6,        // ext32
        0xca => 5,        // float32
        0xcb => 9,        // float64
        0xcc | 0xd0 => 2, // (u)int8
        0xcd | 0xd1 => 3, // (u)int16
        0xce | 0xd2 => 5, // (u)int32
        0xcf | 0xd3 => 9, // (u)int64
        0xd4 => 2 + 1,    // fixext1: type + 1
        0xd5 => 2 + 2,
        0xd6 => 2 + 4,
        0xd7 => 2 + 8,
        0xd8 => 2 + 16,
        0xdc | 0xde => 3, // array16, map16
        0xdd | 0xdf => 5, // array32, map32
    })
}

/// Reads a complete header (`header_len` bytes).
fn read_header(h: &[u8]) -> Item {
    let be = |bytes: &[u8]| bytes.iter().fold(0u64, |n, b| n << 8 | u64::from(*b));
    let m = h[0];
    match m {
        0x00..=0x7f => Item::Scalar(Some(u64::from(m))),
        0x80..=0x8f => Item::Items(2 * u64::from(m & 0x0f)),
        0x90..=0x9f => Item::Items(u64::from(m & 0x0f)),
        0xa0..=0xbf => Item::Bytes(u64::from(m & 0x1f)),
        0xc4..=0xc6 | 0xd9..=0xdb => Item::Bytes(be(&h[1..])),
        0xc7..=0xc9 => Item::Bytes(be(&h[1..h.len() - 1])),
        0xcc..=0xcf => Item::Scalar(Some(be(&h[1..]))),
        0xdc | 0xdd => Item::Items(be(&h[1..])),
        0xde | 0xdf => Item::Items(2 * be(&h[1..])),
        // nil, booleans, negative and signed integers, floats, fixext (its
        // data is part of the header): nothing follows.
        _ => Item::Scalar(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmpv::Value;

    fn encode(v: &Value) -> Vec<u8> {
        let mut b = Vec::new();
        rmpv::encode::write_value(&mut b, v).unwrap();
        b
    }

    fn notification(method: &str, params: Vec<Value>) -> Vec<u8> {
        encode(&Value::Array(vec![
            2.into(),
            method.into(),
            Value::Array(params),
        ]))
    }

    fn request(id: u64, method: &str, params: Vec<Value>) -> Vec<u8> {
        encode(&Value::Array(vec![
            0.into(),
            id.into(),
            method.into(),
            Value::Array(params),
        ]))
    }

    fn frames(max: usize, chunks: &[&[u8]]) -> Result<Vec<Frame>, OutOfSync> {
        let mut f = Framer::new(max);
        let mut out = Vec::new();
        for c in chunks {
            f.push(c, &mut out)?;
        }
        assert!(!f.in_message(), "a message left open");
        Ok(out)
    }

    fn every_kind_of_value() -> Vec<Value> {
        vec![
            Value::Nil,
            true.into(),
            0.into(),
            200.into(),
            70_000.into(),
            u64::MAX.into(),
            (-1).into(),
            (-200).into(),
            i64::MIN.into(),
            Value::F32(1.5),
            Value::F64(-2.25),
            "".into(),
            "é".repeat(20).into(),
            "x".repeat(300).into(),
            "y".repeat(70_000).into(),
            Value::Binary(vec![0xc1; 40]),
            Value::Ext(1, vec![7]),
            Value::Ext(2, vec![7; 16]),
            Value::Ext(3, vec![7; 5]),
            Value::Ext(4, vec![7; 300]),
            Value::Array(vec![]),
            Value::Array((0..20).map(Value::from).collect()),
            Value::Map(vec![("a".into(), Value::Map(vec![]))]),
            Value::Map((0..20).map(|i| (i.into(), "v".into())).collect()),
        ]
    }

    #[test]
    fn messages_come_out_whole_however_the_stream_is_cut() {
        let mut stream = Vec::new();
        let mut expected = Vec::new();
        for (i, v) in every_kind_of_value().into_iter().enumerate() {
            let m = if i % 2 == 0 {
                notification("predict", vec![v, 1.into()])
            } else {
                request(i as u64, "status", vec![v])
            };
            stream.extend_from_slice(&m);
            expected.push(Frame::Message(m));
        }
        assert_eq!(frames(1 << 20, &[&stream]).unwrap(), expected);
        for cut in [1, 2, 3, 7, 64, 4096] {
            let chunks: Vec<&[u8]> = stream.chunks(cut).collect();
            assert_eq!(frames(1 << 20, &chunks).unwrap(), expected, "cut {cut}");
        }
    }

    #[test]
    fn an_oversized_message_is_skipped_not_kept() {
        let big = request(7, "status", vec!["z".repeat(5000).into()]);
        let big_note = notification("learn", vec![Value::Array(vec![1.into(); 5000])]);
        let small = notification("predict", vec![1.into()]);
        let stream = [big.clone(), small.clone(), big_note.clone(), small.clone()].concat();
        let mut f = Framer::new(1000);
        let mut out = Vec::new();
        for c in stream.chunks(100) {
            f.push(c, &mut out).unwrap();
            assert!(f.buf.capacity() <= 1100, "kept {} bytes", f.buf.capacity());
        }
        assert_eq!(
            out,
            vec![
                Frame::Oversized {
                    bytes: big.len() as u64,
                    kind: 0,
                    msgid: Some(7)
                },
                Frame::Message(small.clone()),
                Frame::Oversized {
                    bytes: big_note.len() as u64,
                    kind: 2,
                    msgid: None
                },
                Frame::Message(small),
            ]
        );
    }

    #[test]
    fn a_message_of_exactly_the_cap_is_kept() {
        let m = notification("learn", vec!["q".repeat(100).into()]);
        let out = frames(m.len(), &[&m]).unwrap();
        assert_eq!(out, vec![Frame::Message(m.clone())]);
        let out = frames(m.len() - 1, &[&m]).unwrap();
        assert!(matches!(out[0], Frame::Oversized { .. }));
    }

    #[test]
    fn what_cannot_start_a_message_is_out_of_sync() {
        let good = notification("predict", vec![]);
        for (bad, says) in [
            (&b"hello"[..], "array of 3 or 4"),
            (&[0x92, 0x02, 0x00], "array of 3 or 4"),
            (&[0x93, 0x05, 0xa1, b'x', 0x90], "kind (0, 1 or 2)"),
            (&[0x93, 0xff, 0xa1, b'x', 0x90], "kind (0, 1 or 2)"),
            (&[0x93, 0x90], "kind (0, 1 or 2)"),
            (&[0x93, 0x02, 0xc1], "0xc1 is no msgpack marker"),
            (&[0xc1], "0xc1"),
        ] {
            let e = frames(1 << 20, &[&good, bad]).unwrap_err();
            assert!(e.0.contains(says), "{bad:?}: {e}");
        }
        let mut deep = vec![0x93, 0x02, 0xa1, b'x'];
        deep.extend(std::iter::repeat_n(0x91, MAX_DEPTH + 1));
        assert!(frames(1 << 20, &[&deep]).unwrap_err().0.contains("nested"));
    }

    #[test]
    fn a_truncated_message_stays_open() {
        let m = notification("predict", vec!["abc".into()]);
        let mut f = Framer::new(1 << 20);
        let mut out = Vec::new();
        f.push(&m[..m.len() - 1], &mut out).unwrap();
        assert!(out.is_empty() && f.in_message());
        f.push(&m[m.len() - 1..], &mut out).unwrap();
        assert_eq!(out, vec![Frame::Message(m)]);
        assert!(!f.in_message());
    }
}
