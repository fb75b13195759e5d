//! What a new user meets first, in a real headless Neovim with the real
//! host: a ghost highlight with terminal colours ('notermguicolors'), and
//! :checkhealth's warning when it would look like typed text; <Tab> that
//! indents in a code buffer's leading whitespace, and its fallback chain;
//! no predictions for secret-looking files; `:help laya` from a plain copy
//! of the plugin; scripts/try.sh with no nvim on PATH; the wording of
//! `:Laya status` while disabled and of the restart log.

mod common;
use common::{Session, HOST, ROOT};
use std::path::Path;
use std::process::{Command, Stdio};

/// LayaGhost as drawn (links followed).
async fn ghost_hl(s: &Session) -> serde_json::Value {
    s.lua("return vim.api.nvim_get_hl(0, { name = 'LayaGhost', link = false })")
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ghost_highlight_has_terminal_colours_without_termguicolors() {
    let s = Session::start("first-hl").await;
    s.command("set notermguicolors").await;
    s.command("colorscheme default").await;
    let hl = ghost_hl(&s).await;
    assert!(hl["ctermfg"].is_number(), "no terminal colour: {hl}");
    assert_eq!(hl["cterm"]["italic"], true, "{hl}");
    assert!(hl["fg"].is_number(), "no GUI colour: {hl}");
    let normal = s
        .lua("return vim.api.nvim_get_hl(0, { name = 'Normal', link = false })")
        .await;
    assert_ne!(hl["ctermfg"], normal["ctermfg"]);
    // The ghost on screen uses it.
    s.insert_after(&["zephyrine zephyrine"]).await;
    s.input("zeph").await;
    s.wait_ghost_starting("yrine").await;
    assert_eq!(s.ghost().await.unwrap().3, "LayaGhost");
    s.input("<Esc>").await;
    let report = s.health_report().await;
    assert!(
        report.contains("LayaGhost differs from normal text"),
        "{report}"
    );
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_own_ghost_highlight_is_kept_and_a_plain_one_warned_about() {
    let s = Session::start("first-hl-user").await;
    s.command("set notermguicolors").await;
    // The user's own, after setup(), survives a ColorScheme event.
    s.command("hi LayaGhost ctermfg=1 guifg=#ff0000").await;
    s.command("doautocmd ColorScheme").await;
    assert_eq!(ghost_hl(&s).await["ctermfg"], 1);
    // One that cannot be told from typed text: :checkhealth says so.
    s.command("hi clear LayaGhost").await;
    s.command("hi LayaGhost gui=NONE cterm=NONE").await;
    let report = s.health_report().await;
    assert!(
        report.contains("ghost text would look like typed text"),
        "{report}"
    );
    // A colour scheme that clears it: Laya's own comes back.
    s.command("colorscheme default").await;
    assert!(ghost_hl(&s).await["ctermfg"].is_number());
    s.quit().await;
}

/// Types `import os⏎import sys⏎⏎⏎` into a Python buffer; returns once the
/// cursor is on the empty line with a ghost shown there.
/// (The tests that call it show every top candidate, `threshold = 0`: the
/// ghost must not depend on how sure the model is of a new line's first word.)
async fn python_empty_line(s: &Session) {
    s.command("enew").await;
    s.command("setfiletype python").await;
    s.input("iimport os<CR>import sys<CR><CR><CR>").await;
    s.wait_for("a ghost on the empty line", || async {
        let g = s.ghost().await?;
        (g.1 == 4 && g.2 == 0 && s.cursor().await == (5, 0)).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tab_on_an_empty_python_line_indents_even_with_a_ghost() {
    let s = Session::start("first-tab-indent").await;
    s.lua("require('laya').setup({ ghost = { threshold = 0 } })")
        .await;
    python_empty_line(&s).await;
    s.input("<Tab>").await;
    let indent = s
        .lua("return vim.fn.indent(5) > 0 and vim.fn.getline(5):match('^%s+$') ~= nil")
        .await;
    assert_eq!(indent, true, "line 5: {:?}", s.lines().await);
    // In the leading whitespace too.
    s.input("<Tab>").await;
    s.wait_for("a second indent", || async {
        let l = s.lines().await;
        (l[4].trim().is_empty() && l[4].len() > 4).then_some(())
    })
    .await;
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tab_accepts_in_indentation_when_configured() {
    let s = Session::start("first-tab-in-indent").await;
    s.lua("require('laya').setup({ accept = { in_indent = true }, ghost = { threshold = 0 } })")
        .await;
    python_empty_line(&s).await;
    let ghost = s.ghost_text().await.unwrap();
    s.input("<Tab>").await;
    s.wait_for("the ghost accepted", || async {
        (s.lines().await[4] == ghost).then_some(())
    })
    .await;
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tab_runs_the_configured_fallback_chain_in_order() {
    let s = Session::start("first-tab-chain").await;
    s.lua(
        "require('laya').setup({ accept = { fallback = {
           function() vim.g.chain = (vim.g.chain or '') .. 'a'; return false end,
           function() vim.g.chain = (vim.g.chain or '') .. 'b'; return true end,
           'key',
         } } })",
    )
    .await;
    s.insert_after(&["zephyrine"]).await;
    s.input("xyzzy<Tab>").await;
    s.wait_for("the chain to run", || async {
        (s.lua("return vim.g.chain").await == "ab").then_some(())
    })
    .await;
    // 'key' came after a step that acted: no tab was inserted.
    assert_eq!(s.lines().await[1], "xyzzy");
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_looking_files_send_nothing_to_the_host() {
    let s = Session::start("first-secrets").await;
    for name in [
        ".env",
        ".env.local",
        "id_ed25519",
        "server.pem",
        "credentials.json",
    ] {
        s.command(&format!("edit {name}")).await;
        s.input("iAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI<Esc>").await;
        s.wait_for("normal mode", || async {
            (s.mode().await == "n").then_some(())
        })
        .await;
        assert_eq!(s.stats().await["sent"], 0, "{name}: something was sent");
        assert!(s.host_pid().await.is_none(), "{name}: the host started");
    }
    // An ordinary file gets predictions.
    s.command("edit notes.txt").await;
    s.input("ihello").await;
    s.wait_for("a request sent", || async {
        (s.stats().await["sent"].as_u64() > Some(0)).then_some(())
    })
    .await;
    s.input("<Esc>").await;
    // The list is the user's to change.
    s.lua("require('laya').setup({ disabled_files = { '*.txt' } })")
        .await;
    let sent = s.stats().await["sent"].clone();
    s.command("edit other.txt").await;
    s.input("ihello<Esc>").await;
    s.wait_for("hello typed", || async {
        (s.mode().await == "n" && s.lines().await[0] == "hello").then_some(())
    })
    .await;
    assert_eq!(s.stats().await["sent"], sent);
    s.command("edit .env.example").await;
    s.input("ihello").await;
    s.wait_for("a request sent for .env now", || async {
        (s.stats().await["sent"] != sent).then_some(())
    })
    .await;
    s.quit().await;
}

/// Copies the plugin's runtime files (no doc/tags) to `dir`.
fn copy_plugin(dir: &Path) {
    for sub in ["lua", "plugin", "doc", "scripts"] {
        let st = Command::new("cp")
            .arg("-r")
            .arg(Path::new(ROOT).join(sub))
            .arg(dir)
            .status()
            .unwrap();
        assert!(st.success());
    }
    let _ = std::fs::remove_file(dir.join("doc/tags"));
}

#[test]
fn help_laya_works_from_a_plain_copy_with_the_minimal_setup() {
    let dir = common::temp_dir("first-help");
    let plugin = dir.join("laya");
    std::fs::create_dir_all(&plugin).unwrap();
    copy_plugin(&plugin);
    let out = Command::new(common::nvim_binary())
        .args(["--headless", "--clean", "-u"])
        .arg(plugin.join("scripts/minimal_init.lua"))
        .args([
            "-c",
            "help laya-config",
            "-c",
            "call writefile([expand('%:t')], 'help.out')",
            "-c",
            "qa!",
        ])
        .current_dir(&dir)
        .env("LAYA_HOST", HOST)
        .env("XDG_STATE_HOME", dir.join("state"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let shown = std::fs::read_to_string(dir.join("help.out")).unwrap_or_default();
    assert_eq!(
        shown.trim(),
        "laya.txt",
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(plugin.join("doc/tags").exists());
}

/// PATH without any folder holding an `nvim`, but with cargo's.
fn path_without_nvim() -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<_> = std::env::split_paths(&path)
        .filter(|d| !d.join("nvim").exists())
        .collect();
    if let Some(cargo) = std::env::var_os("CARGO") {
        dirs.push(Path::new(&cargo).parent().unwrap().to_path_buf());
    }
    std::env::join_paths(dirs).unwrap().into_string().unwrap()
}

#[test]
fn try_sh_works_with_no_nvim_on_path() {
    let dir = common::temp_dir("first-try");
    let path = path_without_nvim();
    let which = Command::new("sh")
        .args(["-c", "command -v nvim"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(!which.status.success(), "nvim still on PATH");
    let out = Command::new(Path::new(ROOT).join("scripts/try.sh"))
        .args([
            "--headless",
            "-c",
            "help laya",
            "-c",
            &format!(
                "call writefile([expand('%:t'), exists(':Laya')], '{}')",
                dir.join("try.out").display()
            ),
            "-c",
            "qa!",
        ])
        .env("PATH", &path)
        .env("XDG_STATE_HOME", dir.join("state"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = std::fs::read_to_string(dir.join("try.out")).unwrap_or_default();
    assert!(
        out.status.success() && said == "laya.txt\n2\n",
        "try.sh: {:?} wrote {said:?}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_while_disabled_and_the_restart_log_say_what_happens() {
    let s = Session::start("first-wording").await;
    s.command("Laya disable").await;
    let out = s.output("Laya status").await;
    assert!(out.contains("Laya is disabled"), "{out}");
    assert!(!out.contains("InsertEnter"), "{out}");
    s.command("Laya enable").await;
    let out = s.output("Laya status").await;
    assert!(out.contains("starts on the next InsertEnter"), "{out}");

    s.lua("require('laya').setup({ host = { path = '/bin/false', max_restarts = 2 } })")
        .await;
    s.command("enew").await;
    s.input("ihello").await;
    s.wait_for("the give-up in the log", || async {
        s.log().contains("no restarts left").then_some(())
    })
    .await;
    let log = s.log();
    assert!(log.contains("restart 2 of at most 2"), "{log}");
    assert!(!log.contains("3 of 2"), "{log}");
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kind_of_text_at_the_cursor_comes_from_the_syntax() {
    let s = Session::start("first-syntax").await;
    s.command("enew").await;
    s.command("setfiletype c").await;
    s.set_lines(&[
        "int main(int argc, char **argv) {",
        "  /* a comment here */",
        "  printf(\"usage: %s f",
    ])
    .await;
    let at = |row: i64, col: i64| {
        format!(
            "return require('laya.syntax').at(vim.api.nvim_get_current_buf(), {row}, {col}, 'c')"
        )
    };
    assert_eq!(s.lua(&at(1, 12)).await, "code");
    assert_eq!(s.lua(&at(2, 12)).await, "comment");
    assert_eq!(s.lua(&at(3, 20)).await, "string");
    s.command("setfiletype markdown").await;
    assert_eq!(
        s.lua("return require('laya.syntax').at(0, 1, 5, vim.bo.filetype)")
            .await,
        "prose"
    );
    // Code set in prose is code: inline, and a fenced block (its comment a
    // comment where treesitter highlights the block's language).
    s.set_lines(&[
        "Call `open_file(path)` first.",
        "",
        "```c",
        "int x = foo(1); /* note */",
        "```",
        "Then close it.",
    ])
    .await;
    let at = |row: i64, col: i64| {
        format!("return require('laya.syntax').at(0, {row}, {col}, vim.bo.filetype)")
    };
    for (how, start) in [
        ("syntax groups", ""),
        (
            "treesitter",
            "vim.treesitter.start(0, 'markdown') vim.treesitter.get_parser(0):parse(true)",
        ),
    ] {
        s.lua(&format!("{start} return true")).await;
        assert_eq!(s.lua(&at(1, 12)).await, "code", "{how}: inline code");
        assert_eq!(s.lua(&at(1, 3)).await, "prose", "{how}");
        assert_eq!(s.lua(&at(4, 6)).await, "code", "{how}: fenced code");
        assert_eq!(s.lua(&at(6, 8)).await, "prose", "{how}");
    }
    assert_eq!(
        s.lua(&at(4, 22)).await,
        "comment",
        "treesitter: a comment in the block"
    );
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_next_word_after_a_closing_paren_brings_its_space() {
    let s = Session::start("first-separator").await;
    s.command("enew").await;
    s.command("setfiletype python").await;
    s.input("iimport os<CR><CR>with open(path)").await;
    // Every candidate, ghost and menu alike, starts with the space.
    let items = s
        .wait_for("candidates after the paren", || async {
            let v = s
                .lua("return vim.tbl_map(function(i) return i.word end, require('laya').candidates())")
                .await;
            let v: Vec<String> = serde_json::from_value(v).ok()?;
            (!v.is_empty() && s.cursor().await == (3, 15)).then_some(v)
        })
        .await;
    assert!(items.iter().all(|w| w.starts_with(' ')), "{items:?}");
    let ghost = s.wait_ghost_starting(" ").await;
    s.input("<Tab>").await;
    let want = format!("with open(path){ghost}");
    s.wait_for("the accepted ghost with its space", || async {
        (s.lines().await[2] == want).then_some(())
    })
    .await;
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buffer_that_cannot_be_changed_gets_no_predictions() {
    let s = Session::start("first-nomodifiable").await;
    let active = "return require('laya').active(0)";
    assert_eq!(s.lua(active).await, true, "a plain buffer");
    s.command("setlocal nomodifiable").await;
    assert_eq!(
        s.lua(active).await,
        false,
        "a buffer nothing can be typed into"
    );
    // :checkhealth's report is such a buffer.
    s.command("checkhealth laya").await;
    assert_eq!(s.lua("return vim.bo.filetype").await, "checkhealth");
    assert_eq!(s.lua(active).await, false, "the :checkhealth report");
    s.quit().await;
}
