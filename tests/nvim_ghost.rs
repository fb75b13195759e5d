//! Ghost text in a real headless Neovim with the real host: it appears for
//! words of the buffer (the engine's cache model), shows on screen, is
//! accepted with <Tab> as one undo step, dismissed, trimmed while typing,
//! cycled, gives way when read and typed past (`ghost.give_way`), and the
//! completion menu inserts the same text.
//!
//! The words used here ("zephyrine", "quokkalike") come from the test's own
//! buffer, so the expected text does not depend on the trained model; where
//! a model may continue the ghost with further words, the tests read the
//! ghost's start and derive the rest of their expectations from what is shown.

mod common;
use common::Session;

const WORDS: &[&str] = &[
    "The zephyrine breeze came over the quokkalike hills.",
    "A zephyrine light, a zephyrine sky.",
];
/// After "ze": zebra (the buffer's likeliest) and zenith.
const ZEBRAS: &[&str] = &["zebra zebra zebra zenith", "the zebra and the zenith"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ghost_text_shows_the_rest_of_a_buffer_word_inline() {
    let s = Session::start("ghost-shows").await;
    s.insert_after(WORDS).await;
    s.input("zeph").await;
    let ghost = s.wait_ghost_starting("yrine").await;
    let (text, row, col, hl) = s.ghost().await.unwrap();
    assert_eq!((text.as_str(), row, col), (ghost.as_str(), 2, 4));
    assert_eq!(hl, "LayaGhost");
    // What the screen shows: the typed part followed by the ghost text.
    s.wait_screen_line(2, &format!("zeph{ghost}")).await;
    // Laya's own highlight by default: grey italic, GUI and terminal colours.
    let hl = s
        .lua("return vim.api.nvim_get_hl(0, { name = 'LayaGhost' })")
        .await;
    assert!(hl["ctermfg"].is_number() && hl["fg"].is_number(), "{hl}");
    assert_eq!(hl["italic"], true, "{hl}");
    // The buffer itself holds only what was typed.
    assert_eq!(s.lines().await[2], "zeph");
    s.quit().await;
}

/// Two words share the prefix "zeph": neither is that sure.
const TWO_ZEPHS: &[&str] = &["zephyrine zephyrus zephyrine zephyrus"];

/// Types "zeph" after `TWO_ZEPHS`: the answer comes (it has "zephyrine")
/// and no ghost shows.
async fn answered_without_ghost(s: &Session) {
    s.input("zeph").await;
    let (prefix, words) = answered(s).await;
    assert_eq!(prefix, "zeph");
    assert!(words.iter().any(|w| w == "zephyrine"), "{words:?}");
    assert_eq!(s.ghost().await, None, "{words:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ghost_threshold_reaches_the_host() {
    let s = Session::start("ghost-threshold").await;
    // Two words share the prefix: neither is that sure, so the answer
    // comes and no ghost shows (at the default threshold one would).
    s.lua("require('laya').setup({ ghost = { threshold = 0.9999 } }) return true")
        .await;
    s.insert_after(TWO_ZEPHS).await;
    answered_without_ghost(&s).await;
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_has_its_own_threshold() {
    let s = Session::start("ghost-code-threshold").await;
    // Any ghost in prose, none but a certain one in code.
    s.lua(
        "require('laya').setup({ ghost = { threshold = 0, code_threshold = 0.9999 } }) return true",
    )
    .await;
    s.command("enew | setfiletype c").await;
    s.insert_after_here(TWO_ZEPHS).await;
    answered_without_ghost(&s).await;
    // The same words in prose (filetype text) get their ghost.
    s.command("stopinsert | enew | setfiletype text").await;
    s.insert_after_here(TWO_ZEPHS).await;
    s.input("zeph").await;
    s.wait_ghost_starting("yr").await;
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tab_accepts_as_one_undo_step_with_the_cursor_after_it() {
    let s = Session::start("ghost-accept").await;
    s.insert_after(WORDS).await;
    s.input("a quokk").await;
    let ghost = s.wait_ghost_starting("alike").await;
    let accepted = format!("a quokk{ghost}");
    s.input("<Tab>").await;
    s.wait_for("the accepted text in the buffer", || async {
        (s.lines().await[2] == accepted).then_some(())
    })
    .await;
    let after = (3, accepted.len() as i64);
    assert_eq!(
        s.cursor().await,
        after,
        "cursor right after the inserted text"
    );
    assert_eq!(s.mode().await, "i");
    // Typing goes on after the accepted text.
    s.input(" x<Esc>").await;
    s.wait_for("normal mode", || async {
        (s.mode().await == "n").then_some(())
    })
    .await;
    assert_eq!(s.lines().await[2], format!("{accepted} x"));
    // One undo removes what was typed after, the next exactly the accepted text.
    s.input("u").await;
    s.wait_for("undo of ' x'", || async {
        (s.lines().await[2] == accepted).then_some(())
    })
    .await;
    s.input("u").await;
    s.wait_for("undo of the accepted text", || async {
        (s.lines().await[2] == "a quokk").then_some(())
    })
    .await;
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tab_without_ghost_text_inserts_a_tab() {
    let s = Session::start("ghost-tab-fallback").await;
    s.insert_after(WORDS).await;
    s.input("xyzzy<Tab>q").await;
    s.wait_for("a literal tab", || async {
        (s.lines().await[2] == "xyzzy\tq").then_some(())
    })
    .await;
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dismiss_hides_the_ghost_until_the_next_keystroke() {
    let s = Session::start("ghost-dismiss").await;
    s.insert_after(WORDS).await;
    s.input("zeph").await;
    s.wait_ghost_starting("yrine").await;
    s.input("<C-]>").await;
    s.wait_for("the ghost to disappear", || async {
        s.ghost().await.is_none().then_some(())
    })
    .await;
    // Tab now has nothing to accept: it inserts a tab.
    s.input("<Tab>").await;
    s.wait_for("a literal tab", || async {
        (s.lines().await[2] == "zeph\t").then_some(())
    })
    .await;
    s.input("<BS>y").await;
    s.wait_ghost_starting("rine").await;
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typing_what_the_ghost_shows_trims_it_without_a_round_trip() {
    let s = Session::start("ghost-type-through").await;
    // Trimming is for a ghost that does not give way (the default gives
    // way after 500 ms on screen, which a slow machine could reach here).
    s.lua("require('laya').setup({ ghost = { give_way = false } }) return true")
        .await;
    s.insert_after(WORDS).await;
    s.input("zeph").await;
    let ghost = s.wait_ghost_starting("yrine").await;
    // Freeze the host: from now on no answer can arrive.
    let pid = s.host_pid().await.unwrap();
    Session::signal(pid, "STOP");
    let answers = s.stats().await["answers"].clone();
    s.input("yr").await;
    s.wait_ghost(&ghost[2..]).await;
    s.wait_screen_line(2, &format!("zeph{ghost}")).await;
    assert_eq!(s.stats().await["answers"], answers, "trimmed locally");
    // A char that differs from the ghost hides it at once.
    s.input("x").await;
    s.wait_for("the ghost to disappear", || async {
        s.ghost().await.is_none().then_some(())
    })
    .await;
    Session::signal(pid, "CONT");
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_the_host_answered_in_advance_shows_its_ghost_without_a_round_trip() {
    let s = Session::start("ghost-next-keys").await;
    s.lua("require('laya').setup({ ghost = { give_way = false } }) return true")
        .await;
    s.insert_after(ZEBRAS).await;
    s.input("ze").await;
    s.wait_ghost_starting("bra").await;
    // After its answer the host works out the answers to the next keys.
    s.wait_for("the answers to the next keys", || async {
        let v = s
            .lua("local c = require('laya.ghost').current return c and c.next_keys and c.next_keys.n and c.next_keys.n.prefix or vim.NIL")
            .await;
        v.as_str().map(str::to_string)
    })
    .await;
    // Freeze the host: from now on no answer can arrive.
    let pid = s.host_pid().await.unwrap();
    Session::signal(pid, "STOP");
    let answers = s.stats().await["answers"].clone();
    // "n" is not what the ghost shows ("bra"), so trimming would hide it;
    // the host's answer for "zen", worked out in advance, is shown instead.
    s.input("n").await;
    let ghost = s.wait_ghost_starting("ith").await;
    s.wait_screen_line(2, &format!("zen{ghost}")).await;
    assert_eq!(
        s.stats().await["answers"],
        answers,
        "shown without an answer"
    );
    Session::signal(pid, "CONT");
    // The host's own answer to "zen", when it comes, is the same.
    s.wait_for("the answer to zen", || async {
        (s.stats().await["answers"] != answers).then_some(())
    })
    .await;
    let (prefix, words) = answered(&s).await;
    assert_eq!((prefix.as_str(), words[0].as_str()), ("zen", "zenith"));
    s.wait_ghost_starting("ith").await;
    s.quit().await;
}

/// The suggestion for the last context sent, once its answer is in:
/// (typed prefix, candidate words best first).
async fn answered(s: &Session) -> (String, Vec<String>) {
    s.wait_for("the answer to the last key", || async {
        let v = s
            .lua(
                "local c, sent = require('laya.ghost').current, require('laya.context').last_sent[vim.api.nvim_get_current_buf()]
                 if not c or not sent or c.seq ~= sent.seq then return vim.NIL end
                 return { c.prefix, vim.tbl_map(function(it) return it.word end, c.list) }",
            )
            .await;
        let words = v.get(1)?.as_array()?.iter();
        Some((
            v[0].as_str()?.to_string(),
            words.map(|w| w.as_str().unwrap_or("").to_string()).collect(),
        ))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ghost_word_read_and_typed_past_gives_way() {
    // 0 ms: any time on screen counts as read; a minute: typed on sooner.
    for (give_way, gives_way) in [("0", true), ("false", false), ("60000", false)] {
        let s = Session::start("ghost-give-way").await;
        s.lua(&format!(
            "require('laya').setup({{ ghost = {{ give_way = {give_way} }} }}) return true"
        ))
        .await;
        s.insert_after(ZEBRAS).await;
        s.input("z").await;
        s.wait_ghost_starting("ebra").await;
        assert_eq!(answered(&s).await.1[0], "zebra");
        // Typing on past "zebra" (read: give_way = 0 counts any time on screen).
        s.input("e").await;
        let (prefix, words) = answered(&s).await;
        assert_eq!(prefix, "ze");
        if gives_way {
            assert_eq!(words[0], "zenith", "{words:?}");
            assert_eq!(words.last().map(String::as_str), Some("zebra"), "{words:?}");
            s.wait_ghost_starting("nith").await;
        } else {
            assert_eq!(words[0], "zebra", "{words:?}");
            s.wait_ghost_starting("bra").await;
        }
        s.quit().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_word_next_and_previous_candidates() {
    let s = Session::start("ghost-cycle").await;
    s.insert_after(ZEBRAS).await;
    s.input("ze").await;
    let first = s.wait_ghost_starting("bra").await;
    s.input("<M-]>").await;
    s.wait_ghost_starting("nith").await;
    s.input("<M-[>").await;
    s.wait_ghost(&first).await;
    s.input("<M-Right>").await;
    s.wait_for("the accepted word", || async {
        (s.lines().await[2] == "zebra").then_some(())
    })
    .await;
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_menu_offers_the_candidates_and_inserts_what_tab_inserts() {
    let s = Session::start("menu").await;
    s.insert_after(ZEBRAS).await;
    s.input("ze").await;
    s.wait_ghost_starting("bra").await;
    s.input("<Tab><CR>ze").await;
    let ghost = s.wait_ghost_starting("bra").await;
    s.input("<M-l>").await;
    let items = s
        .wait_for("the completion menu", || async {
            let v = s
                .lua("local i = vim.fn.complete_info({ 'pum_visible', 'items' }); return i.pum_visible == 1 and i.items or nil")
                .await;
            (!v.is_null()).then_some(v)
        })
        .await;
    // Item 1 inserts what the ghost shows; each item names source and rank.
    assert_eq!(items[0]["word"], format!("ze{ghost}"));
    let menus: Vec<&str> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["menu"].as_str().unwrap())
        .collect();
    assert!(menus[0].ends_with(" #1]"), "{menus:?}");
    let zenith = items
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["word"] == "zenith")
        .expect("zenith offered");
    assert!(
        zenith["menu"].as_str().unwrap().starts_with("[buffer #"),
        "{zenith}"
    );
    // While the menu is visible the ghost is hidden.
    assert!(s.ghost().await.is_none());
    s.input("<C-y>").await;
    s.wait_for("the menu's word in the buffer", || async {
        let l = s.lines().await;
        (l.len() > 3 && l[3] == format!("ze{ghost}")).then_some(())
    })
    .await;
    assert_eq!(
        s.lines().await[2],
        s.lines().await[3],
        "menu and Tab insert the same"
    );
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_message_each_way_per_keystroke() {
    let s = Session::start("one-message").await;
    s.insert_after(WORDS).await;
    s.wait_idle().await;
    let before = s.stats().await;
    let (sent, answers) = (
        before["sent"].as_u64().unwrap(),
        before["answers"].as_u64().unwrap(),
    );
    // Type one key at a time and wait for its answer: each key sends one
    // predict (InsertCharPre; the TextChangedI/CursorMovedI that follow see
    // the same state) and gets one answer back (and, once it is out, the
    // answers to the next keys, which are not answers to a key sent).
    let text = "the zephyrine";
    for (i, c) in text.chars().enumerate() {
        s.input(&c.to_string()).await;
        s.wait_for("the answer to this key", || async {
            let st = s.stats().await;
            (st["answers"].as_u64() >= Some(answers + i as u64 + 1)).then_some(())
        })
        .await;
    }
    s.wait_idle().await;
    let st = s.stats().await;
    assert_eq!(st["sent"].as_u64().unwrap() - sent, text.len() as u64);
    assert_eq!(st["answers"].as_u64().unwrap() - answers, text.len() as u64);
    let host = s.lua("return require('laya.host').request('status')").await;
    assert_eq!(
        host["counters"]["predict_received"].as_u64().unwrap(),
        st["sent"].as_u64().unwrap()
    );
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_menu_opens_by_itself_when_menu_auto_is_on() {
    let s = Session::start("menu-auto").await;
    s.lua("require('laya').setup({ menu = { auto = true } })")
        .await;
    s.insert_after(ZEBRAS).await;
    s.input("ze").await;
    let words = s
        .wait_for("the completion menu", || async {
            let v = s
                .lua(
                    "local i = vim.fn.complete_info({ 'pum_visible', 'items' })
                      if i.pum_visible ~= 1 then return nil end
                      return vim.tbl_map(function(it) return it.word end, i.items)",
                )
                .await;
            (!v.is_null()).then_some(v)
        })
        .await;
    let words: Vec<String> = serde_json::from_value(words).unwrap();
    assert!(words.iter().any(|w| w.starts_with("zebra")), "{words:?}");
    assert!(words.iter().any(|w| w == "zenith"), "{words:?}");
    // Opening it by itself selects and inserts nothing.
    assert_eq!(s.lines().await[2], "ze");
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ghost_hides_on_cursor_moves_and_on_leaving_insert_mode() {
    let s = Session::start("ghost-hide").await;
    s.insert_after(WORDS).await;
    s.input("a zeph").await;
    s.wait_ghost_starting("yrine").await;
    // Freeze the host so only the hiding itself can change the ghost.
    let pid = s.host_pid().await.unwrap();
    Session::signal(pid, "STOP");
    s.input("<Left>").await;
    s.wait_for("the ghost to hide on a cursor move", || async {
        s.ghost().await.is_none().then_some(())
    })
    .await;
    s.wait_screen_line(2, "a zeph").await;
    Session::signal(pid, "CONT");
    s.input("<End>").await;
    s.wait_ghost_starting("yrine").await;
    s.input("<Esc>").await;
    s.wait_for("the ghost to hide on InsertLeave", || async {
        s.ghost().await.is_none().then_some(())
    })
    .await;
    s.wait_screen_line(2, "a zeph").await;
    s.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_correction_replaces_the_misspelled_word_when_accepted() {
    let s = Session::start("ghost-correction").await;
    s.insert_after(WORDS).await;
    // A misspelling of a buffer word: no word completes it, so the engine
    // offers the correction (not as ghost text: in the list, reached by cycling).
    s.input("the zepyrine").await;
    let at = s
        .wait_for("a correction among the suggestions", || async {
            let found = s
                .lua(
                    "local c = require('laya.ghost').current
                     for i, it in ipairs(c and c.list or {}) do
                       if it.replace > 0 then return { i, it.word, it.replace } end
                     end",
                )
                .await;
            found.as_array().cloned()
        })
        .await;
    assert_eq!(at[1], "zephyrine");
    assert_eq!(at[2], "zepyrine".len());
    for _ in 0..at[0].as_i64().unwrap() {
        s.input("<M-]>").await;
    }
    s.wait_ghost(" → zephyrine").await;
    s.input("<Tab>").await;
    s.wait_for("the corrected word in the buffer", || async {
        (s.lines().await[2] == "the zephyrine").then_some(())
    })
    .await;
    assert_eq!(s.cursor().await, (3, "the zephyrine".len() as i64));
    // One undo step brings back what was typed.
    s.input("<Esc>u").await;
    s.wait_for("undo of the correction", || async {
        (s.lines().await[2] == "the zepyrine").then_some(())
    })
    .await;
    s.quit().await;
}
