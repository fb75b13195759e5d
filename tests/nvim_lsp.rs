//! `laya lsp` with Neovim's built-in LSP client (vim.lsp.start and
//! vim.lsp.completion with autotrigger), in a real headless Neovim: typing
//! shows Laya's candidates in the completion menu, in Laya's order, and
//! accepting one inserts it. Laya's own plugin is turned off here, so the
//! items can only come from the language server.

mod common;
use common::{Session, HOST};

const WORDS: &[&str] = &[
    "The zephyrine breeze came over the quokkalike hills.",
    "A zephyrine light, a zephyrine sky, a zephyrean tune.",
];

async fn start_with_lsp(name: &str) -> Session {
    let s = Session::start(name).await;
    s.lua("require('laya').disable()").await;
    s.command("edit notes.txt").await;
    s.set_lines(WORDS).await;
    let id = s
        .lua(&format!(
            "vim.o.completeopt = 'menuone,noselect,popup'
             vim.api.nvim_create_autocmd('LspAttach', {{ callback = function(ev)
               vim.lsp.completion.enable(true, ev.data.client_id, ev.buf, {{ autotrigger = true }})
             end }})
             return vim.lsp.start({{ name = 'laya', cmd = {{ [==[{HOST}]==], 'lsp' }}, root_dir = vim.fn.getcwd() }})"
        ))
        .await;
    assert!(id.as_i64().is_some(), "vim.lsp.start failed: {id}");
    s.wait_for("the language server to initialize", || async {
        let ok = s
            .lua("local c = vim.lsp.get_clients({ name = 'laya' })[1] return c ~= nil and c.initialized == true")
            .await;
        (ok == true).then_some(())
    })
    .await;
    s
}

/// The words in Neovim's completion menu while it is open.
async fn menu_words(s: &Session) -> Option<Vec<String>> {
    let v = s
        .lua("if vim.fn.pumvisible() == 0 then return nil end
              return vim.tbl_map(function(it) return it.word end, vim.fn.complete_info({ 'items' }).items)")
        .await;
    serde_json::from_value(v).ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn builtin_client_shows_laya_items_while_typing_and_accepts_one() {
    let s = start_with_lsp("nvim-lsp-menu").await;
    s.input("Goa zeph").await;
    let words = s
        .wait_for("Laya items in the completion menu", || async {
            menu_words(&s)
                .await
                .filter(|w| w.iter().any(|w| w.starts_with("zephyrean")))
        })
        .await;
    assert!(
        words[0].starts_with("zephyrine"),
        "the buffer's likeliest first: {words:?}"
    );
    // Accept the first item.
    s.lua("vim.api.nvim_select_popupmenu_item(0, true, true, {})")
        .await;
    let want = format!("a {}", words[0]);
    s.wait_for("the accepted item in the buffer", || async {
        (s.lines().await[2] == want).then_some(())
    })
    .await;
    // Typing on asks again (the list is incomplete): a later word completes too.
    s.input(" the quokk").await;
    s.wait_for("quokkalike in the menu", || async {
        menu_words(&s)
            .await
            .filter(|w| w.first().is_some_and(|w| w.starts_with("quokkalike")))
    })
    .await;
    s.input("<Esc>").await;
    s.lua("vim.lsp.stop_client(vim.lsp.get_clients({ name = 'laya' }))")
        .await;
    s.wait_for("the server to exit", || async {
        let n = s
            .lua("return #vim.lsp.get_clients({ name = 'laya' })")
            .await;
        (n == 0).then_some(())
    })
    .await;
    s.quit().await;
}
