//! The engine's CLI as a user runs it: `laya --version`, `predict`,
//! `protocol` scored by ../shared/eval/ksr.py, and `laya eval` agreeing with
//! ksr.py on the same file (METRICS.md: within 0.1 points).

use laya::model::testgen::write_random_model;
use laya::model::weights::WeightType;
use std::path::{Path, PathBuf};
use std::process::Command;

const LAYA: &str = env!("CARGO_BIN_EXE_laya");

fn ksr_py() -> PathBuf {
    let candidates = [
        std::env::var_os("LAYA_KSR").map(PathBuf::from),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/eval/ksr.py")),
        // A copy of the same harness, for a clone without ../shared (CI).
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/ksr.py")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| p.exists())
        .expect("ksr.py not found: set LAYA_KSR to a copy of shared/eval/ksr.py")
}

#[path = "support/scratch.rs"]
mod scratch;
use scratch::Dir;

/// Three documents, prose and code, with non-ASCII text and blank lines.
fn sample_text() -> String {
    let prose = "The river ran past the old mill, and the mill wheel turned all day.\n\
                 In the evening the miller walked along the river to the village.\n\
                 The village was quiet; the miller's café — closed — stood by the river.\n"
        .repeat(6);
    let code = "fn parse_line(line: &str) -> Option<Entry> {\n    let parts: Vec<&str> = line.split(',').collect();\n    \
                if parts.len() < 2 {\n        return None;\n    }\n    Some(Entry { name: parts[0].to_string(), value: parts[1].parse().ok()? })\n}\n\n"
        .repeat(5);
    format!("{prose}\u{c}\n{code}\u{c}\nshort doc with words words words\n")
}

fn small_model(dir: &Path) -> PathBuf {
    let words: Vec<String> = sample_text()
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .fold(Vec::new(), |mut v, w| {
            if !v.iter().any(|x: &String| x == w) {
                v.push(w.to_string());
            }
            v
        });
    let mut tokens: Vec<&str> = words.iter().map(String::as_str).collect();
    tokens.extend([".", ",", "(", ")", "{", "}", ";", ":"]);
    write_random_model(dir, "tiny", &tokens, 32, 48, WeightType::Int8, 5).unwrap()
}

fn json_of(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn version_and_predict() {
    let out = Command::new(LAYA).arg("--version").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("laya {}", env!("CARGO_PKG_VERSION"))
    );
    let out = Command::new(LAYA)
        .args(["predict", "--no-model", "counter = 1; counter += 1; cou"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("counter") && text.contains("buffer"),
        "{text}"
    );
    let out = Command::new(LAYA).args(["frobnicate"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn eval_agrees_with_ksr_py_on_the_same_file() {
    let dir = Dir::new("cli-agree");
    let text = dir.path.join("sample.txt");
    std::fs::write(&text, sample_text()).unwrap();
    let model = small_model(&dir.path);
    for engine_args in [
        vec!["--model".to_string(), model.display().to_string()],
        vec!["--no-model".to_string()],
    ] {
        for sampling in [
            vec![],
            vec![
                "--block-chars",
                "300",
                "--every",
                "2",
                "--offset",
                "1",
                "--window",
                "200",
            ],
        ] {
            let native = json_of(
                &Command::new(LAYA)
                    .arg("eval")
                    .arg(&text)
                    .args(&engine_args)
                    .args(&sampling)
                    .arg("--json")
                    .output()
                    .unwrap(),
            );
            let out_json = dir.path.join("ksr.json");
            let cmd = format!("{LAYA} protocol {}", engine_args.join(" "));
            let status = Command::new("python3")
                .arg(ksr_py())
                .args(["run", "--quiet", "--text"])
                .arg(&text)
                .args(["--cmd", &cmd, "--out"])
                .arg(&out_json)
                .args(&sampling)
                .status()
                .unwrap();
            assert!(status.success());
            let harness: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
            let m = &harness["metrics"];
            assert_eq!(m["chars"], native["chars"]);
            assert_eq!(m["queries"], native["queries"]);
            for key in [
                "KSR@1",
                "KSR@3",
                "KSR@3_rankcost",
                "KSR_max",
                "ghost_precision",
                "ghost_shown_rate",
                "nextword_top1",
                "nextword_top3",
                "comp1_top1",
                "comp2_top1",
                "comp3_top3",
            ] {
                let (a, b) = (m[key].as_f64().unwrap(), native[key].as_f64().unwrap());
                assert!(
                    (a - b).abs() <= 0.001,
                    "{key}: ksr.py {a} vs laya eval {b} ({engine_args:?} {sampling:?})"
                );
            }
            assert!(
                m["KSR@1"].as_f64().unwrap() > 0.05,
                "the engine saves keystrokes: {m}"
            );
            assert_eq!(m["predictor_errors"], 0);
        }
    }
}

/// `laya eval --trace` writes one line per keystroke the KSR@1 user spends
/// in a word (the other keystrokes are the non-word characters, always
/// typed), each naming the word typed there, and marks the accepted ghosts.
#[test]
fn eval_trace_has_a_line_for_every_keystroke_in_a_word() {
    let dir = Dir::new("cli-trace");
    let text = dir.path.join("sample.txt");
    let sample = sample_text();
    std::fs::write(&text, &sample).unwrap();
    let model = small_model(&dir.path);
    let trace = dir.path.join("trace.tsv");
    let m = json_of(
        &Command::new(LAYA)
            .arg("eval")
            .arg(&text)
            .arg("--model")
            .arg(&model)
            .arg("--trace")
            .arg(&trace)
            .arg("--json")
            .output()
            .unwrap(),
    );
    let docs: Vec<Vec<char>> = sample
        .split("\u{c}\n")
        .map(|d| d.chars().collect())
        .collect();
    let is_word = |c: &char| c.is_ascii_alphanumeric() || *c == '_';
    let nonword: usize = docs
        .iter()
        .map(|d| d.iter().filter(|c| !is_word(c)).count())
        .sum();
    let lines = std::fs::read_to_string(&trace).unwrap();
    let mut accepted = 0;
    for line in lines.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 6, "{line:?}");
        let doc = &docs[f[0].parse::<usize>().unwrap()];
        let (start, pos): (usize, usize) = (f[1].parse().unwrap(), f[2].parse().unwrap());
        let word: String = doc[start..].iter().take_while(|c| is_word(c)).collect();
        assert_eq!(f[3], word, "{line:?}");
        assert!(start <= pos && pos < start + word.len(), "{line:?}");
        assert!(start == 0 || !is_word(&doc[start - 1]), "{line:?}");
        if f[5] == "1" {
            assert_eq!(f[4], &word[pos - start..], "{line:?}");
            accepted += 1;
        }
    }
    let n = lines.lines().count();
    assert_eq!(m["keystrokes"]["ksr1"].as_u64(), Some((n + nonword) as u64));
    assert_eq!(m["accepted"]["ksr1"].as_u64(), Some(accepted));
    assert!(accepted > 0, "the engine saves keystrokes: {m}");
}

#[test]
fn protocol_survives_bad_lines() {
    use std::io::Write;
    let mut child = Command::new(LAYA)
        .args(["protocol", "--no-model"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{{\"op\":\"hello\",\"protocol\":1}}").unwrap();
    writeln!(stdin, "this is not json").unwrap();
    writeln!(stdin, "{{\"op\":\"predict\",\"doc\":\"x\",\"context\":42}}").unwrap();
    writeln!(stdin, "{{\"op\":\"predict\",\"doc\":0,\"pos\":9,\"context\":\"hello he\",\"new\":\"hello he\",\"k\":3,\"reset\":true}}").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["name"], "laya");
    assert_eq!(lines[1]["errors"], 1);
    assert_eq!(lines[3]["candidates"][0], "llo");
}

/// The protocol's peak resident memory while it reads `lines` (VmHWM,
/// read before its input closes), and its answer lines.
fn protocol_reading(args: &[&str], lines: &[Vec<u8>]) -> (u64, Vec<serde_json::Value>) {
    use std::io::{BufRead, BufReader, Write};
    let mut child = Command::new(LAYA)
        .arg("protocol")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut answers = Vec::new();
    for l in lines {
        stdin.write_all(l).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
        let mut a = String::new();
        stdout.read_line(&mut a).unwrap();
        answers.push(serde_json::from_str(&a).unwrap());
    }
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let hwm_kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    drop(stdin);
    child.wait().unwrap();
    (hwm_kb, answers)
}

#[test]
fn a_protocol_line_over_the_cap_is_skipped_with_an_error() {
    let predict = |context: &str| {
        format!(r#"{{"op":"predict","doc":0,"context":"{context}","k":3,"reset":true}}"#)
            .into_bytes()
    };
    // A 1 KB cap: the 5 KB line is skipped, the next one answered.
    let (_, a) = protocol_reading(
        &["--no-model", "--max-line-mb", "0.001"],
        &[predict(&"x".repeat(5000)), predict("hello he")],
    );
    let error = a[0]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains(
            "a line of 5056 bytes is over the limit of 1048 bytes (laya protocol --max-line-mb)"
        ),
        "{:?}",
        a[0]
    );
    assert_eq!(a[0]["candidates"].as_array().map(Vec::len), Some(0));
    assert_eq!(a[1]["candidates"][0], "llo", "{:?}", a[1]);
    assert!(a[1].get("error").is_none());

    // The default cap (16 MB): a 160 MB line is answered with the error
    // without ever being held (the process stays far below its size).
    let (hwm_kb, a) = protocol_reading(
        &["--no-model"],
        &[predict(&"y".repeat(160 << 20)), predict("hello he")],
    );
    assert!(
        a[0]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("over the limit of 16777216 bytes"),
        "{:?}",
        a[0]
    );
    assert_eq!(a[1]["candidates"][0], "llo", "{:?}", a[1]);
    assert!(
        hwm_kb < 80 << 10,
        "peak RSS {hwm_kb} kB reading a 160 MB line"
    );
}

/// `laya eval --learn FILE --via-store DIR`: the history learnt and saved
/// the host's way, then loaded by a new engine (the user's next start).
/// The real default model; the history's made-up names help there too.
#[test]
fn eval_learns_through_a_personal_store_as_the_next_start_finds_it() {
    let dir = Dir::new("cli-via-store");
    let names = "let frobnicated_widget = make_quuxed_gadget(snorfle_count);\n\
                 frobnicated_widget.attach(make_quuxed_gadget(snorfle_count));\n";
    let history = dir.path.join("history.txt");
    std::fs::write(&history, format!("{}\u{c}\n{}", names.repeat(3), names)).unwrap();
    let text = dir.path.join("score.txt");
    std::fs::write(&text, names.repeat(2)).unwrap();
    let store = dir.path.join("store");
    let ksr = |extra: &[&std::ffi::OsStr]| {
        let out = Command::new(LAYA)
            .arg("eval")
            .arg(&text)
            .args(extra)
            .arg("--json")
            .output()
            .unwrap();
        json_of(&out)["KSR@1"].as_f64().unwrap()
    };
    let without = ksr(&[]);
    let learnt = ksr(&["--learn".as_ref(), history.as_os_str()]);
    let next_start = ksr(&[
        "--learn".as_ref(),
        history.as_os_str(),
        "--via-store".as_ref(),
        store.as_os_str(),
    ]);
    assert!(
        learnt > without + 0.05 && next_start > without + 0.05,
        "without {without}, learnt {learnt}, through the store {next_start}"
    );
    let saved: Vec<_> = std::fs::read_dir(&store).unwrap().flatten().collect();
    assert!(
        saved
            .iter()
            .any(|e| e.metadata().is_ok_and(|m| m.is_file() && m.len() > 0)),
        "a store was saved in {}",
        store.display()
    );
}

/// `laya agree --margins` on the shipped model (its 4-bit file against its
/// f32 numbers, which disagree here and there): the bins hold every
/// position compared, agree as often as the whole, and their shares of the
/// disagreements add up to all of them.
#[test]
fn agree_margins_account_for_every_position() {
    let dir = Dir::new("cli-agree-margins");
    let text = dir.path.join("text.txt");
    std::fs::write(&text, sample_text()).unwrap();
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let out = Command::new(LAYA)
        .args(["agree", text.to_str().unwrap(), "--model"])
        .arg(models.join("laya-default-bf16.safetensors"))
        .arg("--other")
        .arg(models.join("laya-default-q4.safetensors"))
        .args(["--backend", "cpu", "--positions", "600", "--margins"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    let cells = |line: &str| -> Vec<String> {
        line.split('|')
            .map(|c| c.trim().trim_end_matches('%').to_string())
            .collect()
    };
    let first = table.lines().nth(2).map(cells).expect("the agreement row");
    let (positions, agreement): (u64, f64) = (first[2].parse().unwrap(), first[3].parse().unwrap());
    assert_eq!(positions, 600, "{table}");
    let bins: Vec<Vec<String>> = table
        .lines()
        .skip_while(|l| !l.contains("runner-up"))
        .skip(2)
        .map(cells)
        .collect();
    assert_eq!(bins.len(), 5, "{table}");
    let in_bins: u64 = bins.iter().map(|b| b[2].parse::<u64>().unwrap()).sum();
    assert_eq!(in_bins, positions, "{table}");
    let agreed: f64 = bins
        .iter()
        .map(|b| b[2].parse::<f64>().unwrap() * b[3].parse::<f64>().unwrap() / 100.0)
        .sum();
    assert!(
        (agreed / positions as f64 * 100.0 - agreement).abs() < 0.1,
        "{table}"
    );
    assert!(agreement < 100.0, "no disagreement to place: {table}");
    let shares: f64 = bins.iter().map(|b| b[4].parse::<f64>().unwrap()).sum();
    assert!((shares - 100.0).abs() < 0.5, "{table}");
}
