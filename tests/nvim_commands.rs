//! :Laya subcommands and their completion, :checkhealth laya, the help file
//! (valid tags, :help laya), and setup()'s option validation — in a real
//! headless Neovim with the real host.

mod common;
use common::Session;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn laya_status_enable_disable_toggle_log_and_completion() {
    let s = Session::start("commands").await;
    let c = s
        .lua("return vim.fn.getcompletion('Laya ', 'cmdline')")
        .await;
    assert_eq!(
        c,
        serde_json::json!(["status", "enable", "disable", "toggle", "log", "learn", "forget"])
    );
    let c = s
        .lua("return vim.fn.getcompletion('Laya t', 'cmdline')")
        .await;
    assert_eq!(c, serde_json::json!(["toggle"]));

    let out = s.output("Laya status").await;
    assert!(out.contains("Laya 0.1.0: enabled"), "{out}");
    assert!(out.contains("Host: not running"), "{out}");

    s.insert_after(&["zephyrine zephyrine"]).await;
    s.input("zeph").await;
    s.wait_ghost_starting("yrine").await;
    let out = s.output("Laya status").await;
    assert!(out.contains("Host: laya 0.1.0, pid"), "{out}");
    assert!(out.contains("Engine: backend"), "{out}");
    assert!(out.contains("answered"), "{out}");
    // Memory: resident, allocated, and the caches as of the first answer.
    assert!(out.contains("Host memory: "), "{out}");
    assert!(out.contains("MB allocated, caches ~"), "{out}");
    assert!(out.contains(" buffers)"), "{out}");

    s.command("Laya disable").await;
    assert!(s.ghost().await.is_none());
    assert!(s.host_pid().await.is_none());
    s.input("<Esc>ozeph").await;
    s.wait_for("typed text", || async {
        (s.lines().await.last().unwrap() == "zeph").then_some(())
    })
    .await;
    assert!(s.ghost().await.is_none(), "disabled: no ghost");
    assert!(s.output("Laya status").await.contains("disabled"));

    s.command("Laya toggle").await;
    s.input("<Esc>ozeph").await;
    s.wait_ghost_starting("yrine").await;

    s.command("Laya log").await;
    let name = s.lua("return vim.api.nvim_buf_get_name(0)").await;
    assert!(name.as_str().unwrap().ends_with("laya.log"), "{name}");
    let err = s
        .lua("local ok, e = pcall(vim.cmd, 'Laya frobnicate'); return tostring(e)")
        .await;
    assert!(
        err.as_str()
            .unwrap()
            .contains("unknown subcommand `frobnicate`"),
        "{err}"
    );
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkhealth_reports_binary_version_host_and_latency() {
    let s = Session::start("health").await;
    s.insert_after(&["zephyrine zephyrine"]).await;
    s.input("zeph").await;
    s.wait_ghost_starting("yrine").await;
    s.input("<Esc>").await;
    let text = s.health_report().await;
    assert!(
        text.contains("version 0.1.0 (matches the plugin)"),
        "{text}"
    );
    assert!(text.contains("host running: pid"), "{text}");
    assert!(text.contains("backend"), "{text}");
    assert!(
        text.contains("laya-default.words.txt (100000 words beyond the vocabulary)"),
        "{text}"
    );
    assert!(!text.contains("ERROR"), "{text}");
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_word_list_shows_in_checkhealth_and_status() {
    let s = Session::start("words-error").await;
    // The default model's files beside a word list that is not FORMAT.md's.
    let models = std::path::Path::new(common::ROOT).join("models");
    for ext in ["safetensors", "vocab.txt"] {
        std::os::unix::fs::symlink(
            models.join(format!("laya-default.{ext}")),
            s.dir.join(format!("m.{ext}")),
        )
        .unwrap();
    }
    std::fs::write(s.dir.join("m.words.txt"), "<unk>\t10\nbad line\n").unwrap();
    // And a kinds file cut short.
    std::fs::write(s.dir.join("m.kinds.txt"), "<unk>\t1\t2\t3\nweather\t1").unwrap();
    let model = s.dir.join("m.safetensors");
    s.lua(&format!(
        "require('laya').setup({{ host = {{ model = '{}' }} }})",
        model.display()
    ))
    .await;
    s.insert_after(&["zephyrine zephyrine"]).await;
    s.input("zeph").await;
    s.wait_ghost_starting("yrine").await;
    s.input("<Esc>").await;
    let status = s.output("Laya status").await;
    assert!(
        status.contains("Word list error: word list ") && status.contains("m.words.txt: line 2"),
        "{status}"
    );
    let text = s.health_report().await;
    assert!(text.contains("word list not loaded: word list "), "{text}");
    // The typed error's advice for its kind.
    assert!(text.contains("restore STEM.words.txt"), "{text}");
    assert!(!text.contains("model not loaded"), "{text}");
    assert!(
        text.contains("kinds file not loaded: kinds file ")
            && text.contains("does not end with a newline")
            && text.contains("restore STEM.kinds.txt"),
        "{text}"
    );
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_help_file_has_valid_tags_and_opens() {
    let s = Session::start("help").await;
    // Build tags from a copy (the repository stays clean).
    let doc = s.dir.join("rt/doc");
    std::fs::create_dir_all(&doc).unwrap();
    std::fs::copy(
        std::path::Path::new(common::ROOT).join("doc/laya.txt"),
        doc.join("laya.txt"),
    )
    .unwrap();
    let err = s
        .lua(&format!(
            "vim.v.errmsg = ''
             local ok, e = pcall(vim.cmd, 'helptags {}')
             return ok and vim.v.errmsg or tostring(e)",
            doc.display()
        ))
        .await;
    assert_eq!(err, "", "helptags reported a problem");
    let tags = std::fs::read_to_string(doc.join("tags")).unwrap();
    for tag in [
        "laya\t",
        "laya-config\t",
        "laya-keys\t",
        ":Laya\t",
        "hl-LayaGhost\t",
    ] {
        assert!(tags.contains(tag), "missing tag {tag:?}");
    }
    s.command(&format!("set rtp^={}", s.dir.join("rt").display()))
        .await;
    s.command("help laya-keys").await;
    let line = s.lua("return vim.api.nvim_get_current_line()").await;
    assert!(line.as_str().unwrap().contains("*laya-keys*"), "{line}");
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shipped_model_is_chosen_by_its_name() {
    let s = Session::start("model-name").await;
    s.lua("require('laya').setup({ host = { model = 'polyglot' } })")
        .await;
    let polyglot = std::path::Path::new(common::ROOT).join("models/laya-polyglot.safetensors");
    let path = s
        .lua("return require('laya.config').options.host.model")
        .await;
    assert_eq!(path.as_str(), polyglot.to_str(), "{path}");
    // The host runs that model (its own vocabulary and lists beside it).
    s.insert_after(&["int main(void) {"]).await;
    s.input("ret").await;
    s.wait_ghost_starting("urn").await;
    s.input("<Esc>").await;
    let status = s.output("Laya status").await;
    assert!(status.contains("laya-polyglot"), "{status}");
    assert!(!status.contains("Model error"), "{status}");
    // A name Laya does not ship: one clear warning, the word sources go on.
    s.lua("require('laya').setup({ host = { model = 'nosuch' } })")
        .await;
    let text = s.health_report().await;
    assert!(
        text.contains("model file not found: ") && text.contains("models/laya-nosuch.safetensors"),
        "{text}"
    );
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_rejects_bad_options_with_the_option_name() {
    let s = Session::start("setup").await;
    let cases = [
        ("{ frobnicate = 1 }", "unknown option `frobnicate`"),
        ("{ host = { backend = 'gpu' } }", "option `host.backend`"),
        ("{ keymaps = { accept = 3 } }", "option `keymaps.accept`"),
        (
            "{ context = { max_bytes = 1 } }",
            "option `context.max_bytes`",
        ),
        ("{ log_level = 'loud' }", "option `log_level`"),
        ("{ host = { model = '' } }", "option `host.model`"),
        ("'nope'", "setup(opts)"),
    ];
    for (opts, expected) in cases {
        let err = s
            .lua(&format!(
                "local ok, e = pcall(require('laya').setup, {opts}); return ok and '' or e"
            ))
            .await;
        assert!(
            err.as_str().unwrap().contains(expected),
            "{opts}: {err} lacks {expected:?}"
        );
    }
    // Valid options still work afterwards.
    s.lua("require('laya').setup({ keymaps = false, menu = { auto = true } })")
        .await;
    // <Tab> is back to what it was (Neovim 0.11 maps it for snippets).
    let tab = s
        .lua("return vim.fn.maparg('<Tab>', 'i', false, true).desc or ''")
        .await;
    assert!(
        !tab.as_str().unwrap().starts_with("Laya"),
        "keymaps = false maps no keys: {tab}"
    );
    let plug = s
        .lua("return vim.fn.maparg('<Plug>(laya-accept)', 'i') ~= ''")
        .await;
    assert_eq!(plug, true);
    s.quit().await;
}

/// Keys typed so far that Lua sent to the host.
async fn sent(s: &Session) -> u64 {
    s.wait_idle().await;
    s.stats().await["sent"].as_u64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn laya_stays_off_where_it_is_turned_off_also_when_that_changes_while_typing() {
    let s = Session::start("active-here").await;
    s.insert_after(&["zebra zenith"]).await;
    s.input("ab").await;
    let on = sent(&s).await;
    assert!(on > 0);
    // A filetype that is off (default `filetypes`), set while in Insert
    // mode (not through <C-o>, which leaves and re-enters it).
    s.lua("vim.bo.filetype = 'TelescopePrompt' return true")
        .await;
    assert_eq!(s.mode().await, "i");
    s.input("cd").await;
    assert_eq!(sent(&s).await, on, "sent in a filetype that is off");
    // Off for this buffer, from the next Insert mode on.
    s.input("<Esc>").await;
    s.command("setfiletype markdown | let b:laya_enabled = v:false")
        .await;
    s.input("Aef").await;
    assert_eq!(sent(&s).await, on, "sent with b:laya_enabled false");
    s.input("<Esc>").await;
    s.command("unlet b:laya_enabled").await;
    // Another buffer is on again, and so is this one once allowed.
    s.input("Agh").await;
    s.wait_for("keys sent again", || async {
        (sent(&s).await >= on + 2).then_some(())
    })
    .await;
    s.quit().await;
}
