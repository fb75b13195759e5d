--- laya.context: what one keystroke sends — the text before the cursor
--- (bounded by context.max_bytes / max_lines), the rest of the line after it,
--- the filetype, the kind of text at the cursor (laya.syntax: prose,
--- comment, string or code), and the seq that later tells a fresh answer
--- from a stale one.
---
--- At InsertCharPre the typed char is not in the buffer yet (and changedtick
--- is from before it), so the context is read with v:char applied. The
--- "state" of a context — row, col and the line's text before the cursor —
--- is what answers are checked against, and what de-duplicates the
--- InsertCharPre / TextChangedI / CursorMovedI sends of one keystroke.

local M = {}

local seq = 0
--- Per buffer: the state of the last context sent, with its seq.
M.last_sent = {}

--- Cuts `s` to its last `max` bytes without splitting a UTF-8 character.
local function tail(s, max)
  if #s <= max then
    return s
  end
  local start = #s - max + 1
  while start <= #s do
    local b = s:byte(start)
    if b < 0x80 or b >= 0xC0 then
      break
    end
    start = start + 1
  end
  return s:sub(start)
end

--- The state at the cursor: { buf, row, col, head } (head = line before cursor),
--- with `typed` (v:char at InsertCharPre) applied when given.
function M.state(typed)
  local buf = vim.api.nvim_get_current_buf()
  local cursor = vim.api.nvim_win_get_cursor(0)
  local line = vim.api.nvim_get_current_line()
  local head = line:sub(1, cursor[2])
  local rest = line:sub(cursor[2] + 1)
  if typed and typed ~= '' then
    head = head .. typed
  end
  -- cur: the cursor's byte column in the buffer (without `typed`).
  return { buf = buf, row = cursor[1], col = #head, cur = cursor[2], head = head, rest = rest }
end

function M.same(a, b)
  return a ~= nil and b ~= nil and a.buf == b.buf and a.row == b.row and a.col == b.col and a.head == b.head
end

--- The full context for `state`, with a new seq.
function M.build(state)
  local o = require('laya.config').options.context
  local before = state.head
  if #before < o.max_bytes and state.row > 1 and o.max_lines > 0 then
    local first = math.max(0, state.row - 1 - o.max_lines)
    local lines = vim.api.nvim_buf_get_lines(state.buf, first, state.row - 1, false)
    lines[#lines + 1] = before
    before = table.concat(lines, '\n')
  end
  seq = seq + 1
  local filetype = vim.api.nvim_get_option_value('filetype', { buf = state.buf })
  return {
    buf = state.buf,
    row = state.row,
    col = state.col,
    head = state.head,
    seq = seq,
    tick = vim.api.nvim_buf_get_changedtick(state.buf),
    before = tail(before, o.max_bytes),
    after = state.rest:sub(1, 256),
    filetype = filetype,
    syntax = require('laya.syntax').at(state.buf, state.row, state.cur or state.col, filetype),
  }
end

--- Sends the context for `state` unless the same state was just sent;
--- `seen`: the ghost text before this key was read (see laya.ghost.seen).
function M.send(state, seen)
  if M.same(M.last_sent[state.buf], state) then
    return false
  end
  local ctx = M.build(state)
  ctx.seen = seen
  ctx.learn = require('laya.learn').teaches(state.buf)
  M.last_sent[state.buf] = { buf = ctx.buf, row = ctx.row, col = ctx.col, head = ctx.head, seq = ctx.seq }
  require('laya.host').predict(ctx)
  return true
end

--- An answer is fresh when it is for the last context sent for its buffer
--- and the cursor is still exactly where that context was read.
function M.is_fresh(answer)
  local sent = M.last_sent[answer.buf]
  if not sent or sent.seq ~= answer.seq then
    return false
  end
  if vim.api.nvim_get_current_buf() ~= answer.buf or not vim.fn.mode():find('^i') then
    return false
  end
  return M.same(sent, M.state())
end

function M.forget(buf)
  M.last_sent[buf] = nil
end

return M
