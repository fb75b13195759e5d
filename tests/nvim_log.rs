//! The log file stays private and small whatever it is sent: mode 0600
//! (also for a file that existed with wider rights), every line bounded, a
//! flood of identical warnings held back, rotation past the size bound.

mod common;
use common::Session;
use std::os::unix::fs::PermissionsExt;

/// The bound of laya.log's lines (LINE_MAX in lua/laya/log.lua) plus the
/// timestamp in front.
const LINE_BOUND: usize = 1000 + 20;

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_is_private_bounded_and_rate_limited() {
    let s = Session::start("log").await;
    let path = s.dir.join("state/nvim/laya.log");
    // A log left with wider rights is made private when Laya opens it.
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "an old line\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    s.insert_after(&["hello"]).await;
    s.wait_for("the log's first host line", || async {
        s.log().contains("host ").then_some(())
    })
    .await;
    assert_eq!(mode(&path), 0o600, "laya.log must be 0600");

    // One huge unknown method name: the host logs a short head of it.
    s.lua("require('laya.host').notify(string.rep('m', 1000000)) return 0")
        .await;
    // A huge line reaching the log from anywhere is cut.
    s.lua("require('laya.log').host_line('WARN ' .. string.rep('é', 200000)) return 0")
        .await;
    // 1000 identical warnings.
    s.lua("for _ = 1, 1000 do require('laya.host').notify('frobnicate') end return 0")
        .await;
    // The host logs its bad input within a quota (20 lines a minute), so
    // the flood's end is marked by an answer: the decision thread logs it
    // after the reader has logged everything sent before it.
    s.wait_idle().await;
    let answered = || s.log().matches("DEBUG answered seq").count();
    let before = answered();
    s.input("x").await;
    s.wait_for("the answer after the flood in the log", || async {
        (answered() > before).then_some(())
    })
    .await;
    s.lua("require('laya.log').flush() return 0").await;

    let log = s.log();
    let longest = log.lines().map(str::len).max().unwrap_or(0);
    assert!(
        longest <= LINE_BOUND,
        "a line of {longest} bytes in the log"
    );
    assert!(
        log.contains("unknown notification `mmmmmmmmmm"),
        "the huge name's head is logged"
    );
    assert!(
        log.contains("(1000000 bytes)"),
        "the huge name's length is logged"
    );
    assert!(
        log.contains("[line cut at "),
        "the huge line is cut with a marker"
    );
    let frob = log
        .lines()
        .filter(|l| l.contains("unknown notification `frobnicate`"))
        .count();
    assert!(
        (1..=20).contains(&frob),
        "1000 identical warnings became {frob} lines"
    );
    assert!(
        log.lines()
            .any(|l| l.contains("suppressed") && l.contains("frobnicate")),
        "the held-back warnings are counted in the log"
    );
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_rotates_past_its_size_bound() {
    let s = Session::start("log-rotate").await;
    let path = s.dir.join("state/nvim/laya.log");
    // 3000 different lines of ~500 bytes: 1.5 MB, over the 1 MB bound.
    s.lua(
        "local log = require('laya.log')
         for i = 1, 3000 do log.host_line('INFO line ' .. i .. ' ' .. string.rep('x', 500)) end
         return 0",
    )
    .await;
    let size = std::fs::metadata(&path).unwrap().len();
    let old = path.with_extension("log.1");
    let old_size = std::fs::metadata(&old).map(|m| m.len()).unwrap_or(0);
    assert!(size <= 1024 * 1024, "laya.log is {size} bytes");
    assert!(old_size > 0, "laya.log.1 holds the older lines");
    assert!(
        old_size <= 1024 * 1024 + 1100,
        "laya.log.1 is {old_size} bytes"
    );
    assert_eq!(mode(&path), 0o600, "the new laya.log must be 0600");
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("INFO line 3000 "),
        "the newest line is in laya.log"
    );
    s.quit().await;
}
