//! Laya inside the completion engines people use, in a real headless
//! Neovim with the real host and unmodified copies of blink.cmp (v1.10.2,
//! its Lua fuzzy matcher) and nvim-cmp from ../shared/vendor: typing shows
//! Laya's candidates in the engine's menu, in the ghost text's order with
//! the ghost's word first, and accepting from the menu inserts that text.
//!
//! Without ../shared/vendor these tests skip, saying so.

mod common;
use common::{Session, ROOT};
use std::path::PathBuf;

const WORDS: &[&str] = &[
    "The zephyrine breeze came over the quokkalike hills.",
    "A zephyrine light, a zephyrine sky, a zephyrean tune.",
];

/// The vendored engine `name`, or None (and a note on stderr) when absent.
fn vendor(name: &str) -> Option<PathBuf> {
    let dir = PathBuf::from(ROOT).join("../shared/vendor").join(name);
    if dir.join("lua").is_dir() {
        Some(dir.canonicalize().unwrap())
    } else {
        eprintln!(
            "SKIPPED: {} not found; these tests need unmodified copies of blink.cmp and nvim-cmp in ../shared/vendor/",
            dir.display()
        );
        None
    }
}

const BLINK_SETUP: &str = r#"
  require('laya').setup({ keymaps = { accept = false }, log_level = 'debug', host = { path = vim.env.LAYA_HOST } })
  require('blink.cmp').setup({
    fuzzy = { implementation = 'lua' },
    sources = {
      default = { 'laya', 'buffer' },
      providers = { laya = { module = 'laya.blink', name = 'Laya', score_offset = 100 } },
    },
    keymap = {
      preset = 'none',
      ['<Tab>'] = {
        function(cmp)
          if require('laya').accept() then
            cmp.hide()
            return true
          end
        end,
        'select_and_accept',
        'fallback',
      },
    },
    completion = { menu = { auto_show = true }, documentation = { auto_show = false } },
  })
"#;

const CMP_SETUP: &str = r#"
  require('laya').setup({ keymaps = { accept = false }, log_level = 'debug', host = { path = vim.env.LAYA_HOST } })
  local cmp = require('cmp')
  require('laya.cmp').register()
  cmp.setup({
    sources = { { name = 'laya' } },
    sorting = { comparators = require('laya.cmp').comparators() },
    mapping = {
      ['<Tab>'] = function(fallback)
        if require('laya').accept() then
          cmp.close()
        elseif cmp.visible() then
          cmp.confirm({ select = true })
        else
          fallback()
        end
      end,
    },
  })
"#;

async fn start(name: &str, plugin: &str, setup: &str) -> Option<Session> {
    let dir = vendor(plugin)?;
    let s = Session::start(name).await;
    let plugin_file = if plugin == "blink.cmp" {
        "blink-cmp.lua"
    } else {
        "cmp.lua"
    };
    s.lua(&format!(
        "vim.opt.runtimepath:append([==[{}]==]) vim.cmd('runtime plugin/{plugin_file}') {setup}",
        dir.display()
    ))
    .await;
    Some(s)
}

/// Laya's candidates now (what the ghost text cycles through), as words.
async fn laya_words(s: &Session) -> Vec<String> {
    let v = s
        .lua("return vim.tbl_map(function(it) return it.word end, require('laya').candidates())")
        .await;
    serde_json::from_value(v).unwrap()
}

/// Waits until the engine's menu lists Laya's items; returns the words of
/// its Laya entries in menu order, with the text its first entry makes.
async fn wait_menu(s: &Session, entries_lua: &str) -> (Vec<String>, String) {
    s.wait_for("Laya items in the engine's menu", || async {
        let v = s.lua(entries_lua).await;
        let words: Vec<String> = serde_json::from_value(v["laya"].clone()).ok()?;
        let first = v["first"].as_str()?.to_string();
        (!words.is_empty()).then_some((words, first))
    })
    .await
}

const BLINK_ENTRIES: &str = r#"
  local blink = require('blink.cmp')
  if not blink.is_menu_visible() then return {} end
  local out = {}
  for _, it in ipairs(blink.get_items()) do
    if it.source_id == 'laya' then out[#out + 1] = it.textEdit.newText end
  end
  local first = blink.get_items()[1]
  return { laya = out, first = first and first.textEdit and first.textEdit.newText or first and first.label }
"#;

const CMP_ENTRIES: &str = r#"
  local cmp = require('cmp')
  if not cmp.visible() then return {} end
  local out = {}
  for _, e in ipairs(cmp.get_entries()) do
    if e.source.name == 'laya' then out[#out + 1] = e.completion_item.textEdit.newText end
  end
  local first = cmp.get_entries()[1]
  return { laya = out, first = first and first.completion_item.textEdit and first.completion_item.textEdit.newText }
"#;

/// Types "a zeph" after WORDS and checks the menu against the ghost text;
/// returns the ghost's word (what item 1 inserts).
async fn menu_agrees_with_ghost(s: &Session, entries_lua: &str) -> String {
    s.insert_after(WORDS).await;
    s.input("a zeph").await;
    let ghost = s.wait_ghost_starting("yr").await;
    let word = format!("zeph{ghost}");
    let (menu, first) = s
        .wait_for("the menu to agree with the ghost text", || async {
            let (menu, first) = wait_menu(s, entries_lua).await;
            let ghost_now = s.ghost_text().await;
            (ghost_now.as_deref() == Some(ghost.as_str()) && menu.len() > 1)
                .then_some((menu, first))
        })
        .await;
    assert_eq!(
        first, word,
        "the menu's first entry is the ghost text's word"
    );
    // Same candidates, same order as Laya's own list (the ghost text's).
    let laya = laya_words(s).await;
    assert_eq!(menu, laya, "menu entries in Laya's order");
    assert!(
        menu.iter().any(|w| w.starts_with("zephyrean")),
        "both buffer words offered: {menu:?}"
    );
    word
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blink_menu_lists_laya_candidates_in_ghost_order_and_accepts() {
    let Some(s) = start("blink-menu", "blink.cmp", BLINK_SETUP).await else {
        return;
    };
    let word = menu_agrees_with_ghost(&s, BLINK_ENTRIES).await;
    // Accepting the menu's selection (blink's own accept) inserts the word.
    s.lua("require('blink.cmp').select_and_accept() return true")
        .await;
    s.wait_for("the accepted word in the buffer", || async {
        (s.lines().await[2] == format!("a {word}")).then_some(())
    })
    .await;
    // A second item, taken from the menu, inserts exactly that item.
    s.input(" and a zeph").await;
    let (menu, _) = wait_menu(&s, BLINK_ENTRIES).await;
    let idx = menu.len();
    s.lua(&format!(
        "require('blink.cmp').accept({{ index = {idx} }}) return true"
    ))
    .await;
    let last = menu.last().unwrap().clone();
    s.wait_for("the last menu item in the buffer", || async {
        (s.lines().await[2] == format!("a {word} and a {last}")).then_some(())
    })
    .await;
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blink_tab_recipe_accepts_the_ghost_text() {
    let Some(s) = start("blink-tab", "blink.cmp", BLINK_SETUP).await else {
        return;
    };
    let word = menu_agrees_with_ghost(&s, BLINK_ENTRIES).await;
    s.input("<Tab>").await;
    s.wait_for("the ghost's word in the buffer", || async {
        (s.lines().await[2] == format!("a {word}")).then_some(())
    })
    .await;
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cmp_menu_lists_laya_candidates_in_ghost_order_and_accepts() {
    let Some(s) = start("cmp-menu", "nvim-cmp", CMP_SETUP).await else {
        return;
    };
    let word = menu_agrees_with_ghost(&s, CMP_ENTRIES).await;
    // nvim-cmp's own confirm of its first entry inserts the ghost's word.
    s.lua("require('cmp').confirm({ select = true }) return true")
        .await;
    s.wait_for("the accepted word in the buffer", || async {
        (s.lines().await[2] == format!("a {word}")).then_some(())
    })
    .await;
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cmp_tab_recipe_accepts_the_ghost_text() {
    let Some(s) = start("cmp-tab", "nvim-cmp", CMP_SETUP).await else {
        return;
    };
    let word = menu_agrees_with_ghost(&s, CMP_ENTRIES).await;
    s.input("<Tab>").await;
    s.wait_for("the ghost's word in the buffer", || async {
        (s.lines().await[2] == format!("a {word}")).then_some(())
    })
    .await;
    s.quit().await;
}
