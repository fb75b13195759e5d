--- laya.ghost: the suggestion at the cursor and its ghost text — an extmark
--- with inline virtual text (highlight `LayaGhost`) right after the cursor.
---
--- Owns the "current suggestion": the candidates of the last fresh answer,
--- which one is shown (next/prev), and the cursor state they belong to.
--- A typed character is answered here at once, without waiting for the
--- host: with the answer the host worked out in advance for that key (see
--- `on_next_keys`), else by trimming the ghost text when it starts with the
--- character; anything else hides it until the next answer.

local M = {}
local H = {}

M.ns = vim.api.nvim_create_namespace('laya_ghost')
local MARK = 1

---@class laya.Suggestion
---@field text string what accepting inserts (after deleting `replace` chars)
---@field replace integer characters before the cursor it replaces (corrections)
---@field word string the whole word it makes
---@field source string 'model' | 'buffer' | 'words' | 'correction'
---@field rank integer 1 = the engine's best

--- { buf, row, col, head, prefix, list = laya.Suggestion[], index, seq,
--- next_keys } or nil; `seq` is nil for a suggestion made here (typed
--- through), `next_keys` the host's answers to the next keys once they came.
M.current = nil
--- The state the user dismissed the ghost at: answers for it stay hidden.
H.dismissed = nil
H.mark_buf = nil
--- The ghost text on screen now (nil: none).
H.shown = nil
--- While an answer is drawn: its seq, passed to the observers.
H.answer_seq = nil
local bench = require('laya._bench')

local function on_screen(text)
  H.shown = text
  bench.notify(bench.screen_observers, text, H.answer_seq)
end

local function first_line(s)
  return (s:match('^[^\n]*'))
end

--- Suggestions from an answer: the engine's candidates, best first; the
--- ghost (which may run on past the first word) extends the candidate it
--- starts with, so ghost text and menu item 1 insert the same text.
function M.suggestions(answer)
  local list = {}
  for i, it in ipairs(answer.items or {}) do
    list[#list + 1] = {
      text = first_line(it.insert),
      replace = it.replace or 0,
      word = it.word,
      source = it.source,
      rank = i,
    }
  end
  local ghost = first_line(answer.ghost or '')
  if ghost ~= '' then
    local top = list[1]
    if top and top.replace == 0 and vim.startswith(ghost, top.text) then
      top.text = ghost
    else
      table.insert(
        list,
        1,
        { text = ghost, replace = 0, word = (answer.prefix or '') .. ghost, source = 'model', rank = 1 }
      )
    end
  end
  return list, ghost ~= '' and 1 or 0
end

--- The host's answers to the next keys after its answer `msg.seq` (see
--- `laya.host.on_next_keys`): kept, as suggestions ready to show, while
--- that answer is the current one.
function M.on_next_keys(msg)
  local c = M.current
  if not c or c.seq ~= msg.seq or c.buf ~= msg.buf or c.row ~= msg.row or c.col ~= msg.col then
    return false
  end
  local ready = {}
  for char, answer in pairs(msg.keys) do
    local list, index = M.suggestions(answer)
    ready[char] = { prefix = answer.prefix or '', list = list, index = index }
  end
  c.next_keys = ready
  return true
end

--- Handles one answer from the host; false when it was stale (dropped).
function M.on_answer(answer)
  local context = require('laya.context')
  if not context.is_fresh(answer) then
    return false
  end
  local state = context.state()
  local list, index = M.suggestions(answer)
  M.current = {
    buf = state.buf,
    row = state.row,
    col = state.col,
    head = state.head,
    prefix = answer.prefix or '',
    list = list,
    index = index,
    seq = answer.seq,
  }
  if context.same(H.dismissed, state) then
    M.current.index = 0
  end
  local source = package.loaded['laya.source']
  if source then
    source.on_answer()
  end
  H.answer_seq = answer.seq
  M.render()
  H.answer_seq = nil
  M.current.shown_at = M.visible() and vim.uv.hrtime() or nil
  if require('laya.config').options.menu.auto and #M.current.list > 0 then
    require('laya.menu').open(true)
  end
  return true
end

--- The suggestion shown now, or nil.
function M.item()
  local c = M.current
  if not c or c.index == 0 then
    return nil
  end
  local it = c.list[c.index]
  if not it or (it.text == '' and it.replace == 0) then
    return nil
  end
  return it
end

function M.visible()
  return H.mark_buf ~= nil and M.item() ~= nil
end

--- The ghost text on screen, or nil.
function M.shown()
  return H.shown
end

--- InsertCharPre at `before` (the state now): was the engine's best word on
--- screen as ghost text for `ghost.give_way` ms or more? Typing on past it
--- then tells the host it was read and not wanted.
function M.seen(before)
  local wait = require('laya.config').options.ghost.give_way
  local c = M.current
  if wait == false or not M.visible() or M.item().rank ~= 1 or not c.shown_at then
    return false
  end
  return require('laya.context').same(c, before) and (vim.uv.hrtime() - c.shown_at) >= wait * 1e6
end

function H.clear_mark()
  if H.mark_buf then
    pcall(vim.api.nvim_buf_del_extmark, H.mark_buf, M.ns, MARK)
    H.mark_buf = nil
    on_screen(nil)
  end
end

--- Does `it` agree with the first entry of a completion engine's open
--- menu (blink.cmp, nvim-cmp)? See laya.source.
function H.agrees(prefix, it)
  local source = package.loaded['laya.source']
  return not source or source.agrees(prefix, it)
end

--- Draws the current suggestion at (row, col) (defaults to its own state).
function M.render(col)
  local c = M.current
  local it = M.item()
  local o = require('laya.config').options.ghost
  if not it or (o.hide_with_pum and vim.fn.pumvisible() == 1) or not H.agrees(c.prefix, it) then
    H.clear_mark()
    return
  end
  local shown = it.replace == 0 and it.text or (' → ' .. it.word)
  if H.mark_buf and H.mark_buf ~= c.buf then
    H.clear_mark()
  end
  local ok = pcall(vim.api.nvim_buf_set_extmark, c.buf, M.ns, c.row - 1, col or c.col, {
    id = MARK,
    virt_text = { { shown, 'LayaGhost' } },
    virt_text_pos = 'inline',
    right_gravity = true,
    hl_mode = 'combine',
  })
  H.mark_buf = ok and c.buf or nil
  on_screen(ok and shown or nil)
end

--- Removes the ghost text and forgets the suggestion.
function M.hide()
  M.current = nil
  H.clear_mark()
end

--- Hides the ghost unless it belongs to `state` (the cursor state now).
function M.sync(state)
  if M.current and not require('laya.context').same(M.current, state) then
    M.hide()
  end
end

--- InsertCharPre: the user typed `char` at `before` (the state now). Shows
--- at once what the host will answer: its answer worked out in advance for
--- this key when it has one, else the suggestions trimmed (`type_through`).
--- True when a suggestion is shown.
function M.typed(before, char)
  local c = M.current
  local next = c and c.next_keys and c.next_keys[char]
  if not next or not require('laya.context').same(c, before) then
    return M.type_through(before, char)
  end
  M.current = {
    buf = c.buf,
    row = c.row,
    col = c.col + #char,
    head = c.head .. char,
    prefix = next.prefix,
    list = next.list,
    index = next.index,
  }
  -- The char is not inserted yet: draw at the old column (see type_through).
  M.render(before.col)
  M.current.shown_at = M.visible() and vim.uv.hrtime() or nil
  return M.visible()
end

--- InsertCharPre: `char` is about to be inserted at `before` (the state
--- now). Keeps the suggestions that start with it, trimmed; true if kept.
function M.type_through(before, char)
  local c = M.current
  if not c or not require('laya.context').same(c, before) then
    return false
  end
  local shown = M.item()
  local kept, index = {}, 0
  for _, it in ipairs(c.list) do
    if it.replace == 0 and it.text ~= '' and vim.startswith(it.text, char) then
      kept[#kept + 1] = vim.tbl_extend('force', it, { text = it.text:sub(#char + 1) })
      if it == shown then
        index = #kept
      end
    end
  end
  if index == 0 then
    M.hide()
    return false
  end
  c.list, c.index = kept, index
  c.col, c.head, c.prefix = c.col + #char, c.head .. char, c.prefix .. char
  -- The char is not inserted yet: draw at the old column; the mark's right
  -- gravity moves it past the char when Neovim inserts it.
  M.render(before.col)
  return true
end

--- Shows the next (step 1) or previous (step -1) candidate.
function M.cycle(step)
  local c = M.current
  if not c or #c.list == 0 then
    return false
  end
  c.index = (c.index - 1 + step) % #c.list + 1
  H.dismissed = nil
  M.render()
  return true
end

--- Dismisses the ghost; answers for this same state stay hidden.
function M.dismiss()
  if not M.visible() then
    return false
  end
  H.dismissed = require('laya.context').state()
  M.hide()
  return true
end

return M
