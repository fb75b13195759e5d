--- laya.source: what the completion-engine adapters (laya.blink, laya.cmp)
--- share — the candidates of the host's answer for the cursor state now,
--- asked for asynchronously, and the rule that keeps an engine's menu and
--- the ghost text from showing different first choices.
---
--- An adapter's request is answered from the host's last answer when it is
--- for the cursor state now; else it waits for that answer (sending the
--- context itself if Laya has not). It is the same answer the ghost text
--- draws, so menu and ghost text list the same candidates in the same order.

local M = {}
local H = {}

--- Milliseconds a request waits for the host before answering with nothing.
M.timeout = 1000

--- The last fresh answer: the state it is for and its candidates
--- (laya.menu.items()), copied when it arrived (typing through trims
--- laya.ghost's list in place afterwards).
H.latest = nil
--- Requests waiting for an answer: id → { state, done }.
H.waiting = {}
H.next_id = 0

--- Engines whose menu may show Laya's items: name → function returning the
--- text the menu's first entry would make of the word at the cursor (nil
--- while that menu is closed or empty).
M.menus = {}

local function same(a, b)
  return require('laya.context').same(a, b)
end

--- Called by laya.ghost when a fresh answer became the current suggestion.
function M.on_answer()
  local c = require('laya.ghost').current
  if not c then
    return
  end
  local state = { buf = c.buf, row = c.row, col = c.col, head = c.head }
  H.latest = { state = state, items = require('laya.menu').items() }
  for id, w in pairs(H.waiting) do
    if same(w.state, state) then
      H.waiting[id] = nil
      w.done(H.latest.items, state)
    end
  end
end

--- Asks for the candidates at the cursor; `done(items, state)` is called
--- once with laya.menu.items()-shaped items (possibly empty) and the cursor
--- state they are for, now or when the host answers. Returns a function that cancels the request.
function M.request(done)
  local context = require('laya.context')
  local state = context.state()
  local buf = state.buf
  if not vim.fn.mode():find('^i') or not require('laya').active(buf) then
    done({}, state)
    return function() end
  end
  if H.latest and same(H.latest.state, state) then
    done(H.latest.items, state)
    return function() end
  end
  H.next_id = H.next_id + 1
  local id = H.next_id
  H.waiting[id] = { state = state, done = done }
  -- Laya sends the context of every keystroke itself; this is for an
  -- engine that asks where Laya has not (a manual trigger, say).
  context.send(state)
  vim.defer_fn(function()
    local w = H.waiting[id]
    if w then
      H.waiting[id] = nil
      w.done({}, w.state)
    end
  end, M.timeout)
  return function()
    H.waiting[id] = nil
  end
end

--- LSP CompletionItems for `items` (laya.source.request's), best first:
--- a textEdit (byte columns: UTF-8 positions) that replaces the word typed
--- so far with the candidate, `sortText` and a descending `score_offset` so
--- the engines keep our order, and `filterText` that their filters match
--- (a correction's is what was typed, which it need not contain).
function M.lsp_items(items, state)
  local out = {}
  local row, head = state.row - 1, state.head
  for i, it in ipairs(items) do
    local typed = head:sub(it.start_col + 1)
    out[i] = {
      label = it.word,
      kind = 1, -- Text
      labelDetails = { description = it.source },
      filterText = it.replace > 0 and typed or it.word,
      sortText = string.format('%04d', i),
      insertTextFormat = 1, -- PlainText
      textEdit = {
        newText = it.word,
        range = {
          start = { line = row, character = it.start_col },
          ['end'] = { line = row, character = #head },
        },
      },
      score_offset = (#items - i + 1) * M.rank_step,
      data = { laya = { rank = it.rank, source = it.source } },
    }
  end
  return out
end

--- Score added per rank (blink.cmp): larger than any difference its fuzzy
--- matcher makes between words that all start with what was typed.
M.rank_step = 100

--- Would the ghost text showing `it` (a laya.Suggestion after `prefix`)
--- agree with every open engine menu's first entry? laya.ghost hides the
--- ghost text when not. A candidate the user cycled to is not the first
--- choice and is always shown.
function M.agrees(prefix, it)
  if it.rank ~= 1 then
    return true
  end
  local word = it.replace == 0 and (prefix .. it.text) or it.word
  for _, first in pairs(M.menus) do
    local ok, text = pcall(first)
    if ok and text ~= nil and text ~= word then
      return false
    end
  end
  return true
end

--- An engine's menu changed: draw the ghost text again (shown or hidden by
--- `agrees`).
function M.menu_changed()
  local ghost = require('laya.ghost')
  if ghost.current and same(ghost.current, require('laya.context').state()) then
    ghost.render()
  end
end

return M
