//! Garbage on the channel, in real Neovim: a shim between Neovim and the
//! real host (tests/support/garbage_shim.py) writes bytes that start no
//! msgpack-RPC message into the host's input before the next keystroke's
//! request. The host ends with exit code 3, the plugin starts a fresh one
//! at once, the keystroke's text is all there, the ghost comes back for
//! it, and one message says so however often it happens.

mod common;
use common::{Options, Session, HOST, ROOT};
use std::time::Instant;

const WORDS: &[&str] = &[
    "The zephyrine breeze came over the quokkalike hills.",
    "A zephyrine light, a zephyrine sky, a zebrawood table.",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_restarts_the_host_with_one_message_and_no_lost_key() {
    let dir = common::temp_dir("garbage-trigger");
    let trigger = dir.join("inject");
    let s = Session::start_with(
        "garbage",
        Options {
            env: vec![
                ("LAYA_HOST", format!("{ROOT}/tests/support/garbage_shim.py")),
                ("LAYA_SHIM_HOST", HOST.to_string()),
                ("LAYA_SHIM_TRIGGER", trigger.display().to_string()),
            ],
            ..Options::default()
        },
    )
    .await;
    s.insert_after(WORDS).await;
    s.input("zeph").await;
    s.wait_ghost_starting("yrine").await;
    let garbage: [&[u8]; 3] = [
        b"\xc1\xc1 not msgpack at all",
        b"\x93\x07\xa1x\x90",
        b"hello there",
    ];
    for (round, (junk, (word, ghost))) in garbage
        .iter()
        .zip([("quo", "kkalike"), ("zebr", "awood"), ("quokk", "alike")])
        .enumerate()
    {
        let pid = s.host_pid().await.unwrap();
        std::fs::write(&trigger, junk).unwrap();
        // The garbage goes in just before this key's request.
        let t0 = Instant::now();
        s.input(&format!("<C-w>{word}")).await;
        s.wait_for("a new host", || async {
            s.host_pid().await.filter(|p| *p != pid)
        })
        .await;
        s.wait_ghost_starting(ghost).await;
        eprintln!(
            "round {}: garbage -> new host -> ghost for `{word}` in {:.0} ms",
            round + 1,
            t0.elapsed().as_secs_f64() * 1000.0
        );
        assert_eq!(s.lines().await[2], word, "every key typed is in the buffer");
    }
    assert!(!trigger.exists(), "the shim wrote the garbage");
    let st = s.stats().await;
    assert_eq!(st["starts"], 4, "{st}");
    let messages = s.output("messages").await;
    assert_eq!(
        messages.matches("Laya:").count(),
        1,
        "one message in all: {messages}"
    );
    assert!(messages.contains("received garbage on its input and was restarted"));
    let log = s.log();
    assert_eq!(
        log.matches("out of sync").count(),
        3,
        "one line per restart: {log}"
    );
    assert!(!log.contains("panic"), "{log}");
    s.quit().await;
}
