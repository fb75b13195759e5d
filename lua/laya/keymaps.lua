--- laya.keymaps: accepting, dismissing and cycling suggestions, as
--- <Plug>(laya-*) mappings plus the default keys (each can be switched off).
---
--- Accepting feeds the text as typed keys wrapped in CTRL-G u, so it is one
--- undo step and the cursor ends after it. The fed keys pass InsertCharPre,
--- where `H.accepting` stops them from each sending a prediction: the single
--- TextChangedI after the insert sends one.

local M = {}
local H = {}

--- Text still to arrive from the last accept (InsertCharPre consumes it).
M.accepting = nil

local function feed(keys, flags)
  vim.api.nvim_feedkeys(keys, flags, false)
end

local function escape_ks(s)
  -- nvim_feedkeys expects K_SPECIAL (0x80) bytes escaped in literal text.
  return (s:gsub('\128', '\128\253\90'))
end

--- The "insert this" part of accepting `text` replacing `replace` chars.
local function insert_keys(text, replace)
  local undo = vim.keycode('<C-g>u')
  return undo .. string.rep(vim.keycode('<BS>'), replace) .. escape_ks(text) .. undo
end

--- Inserts `text` from the current suggestion (all of it, or a first part).
local function insert(it, text)
  local ghost = require('laya.ghost')
  M.accepting = text
  if it.replace > 0 then
    -- A correction changes what was typed: no type-through possible.
    ghost.hide()
  end
  feed(insert_keys(text, it.replace), 'in')
  local buf = vim.api.nvim_get_current_buf()
  require('laya.host').notify('accepted', buf, it.replace > 0 and it.word or text)
end

--- Accepts the whole suggestion shown; false when none is shown.
function M.accept()
  local it = require('laya.ghost').item()
  if not it or not require('laya.ghost').visible() then
    return false
  end
  insert(it, it.text)
  return true
end

--- Accepts the shown suggestion up to the end of its first word.
function M.accept_word()
  local it = require('laya.ghost').item()
  if not it or not require('laya.ghost').visible() then
    return false
  end
  -- Leading separators, then one word (bytes >= 0x80 count as letters).
  local part = it.text:match('^[^%w_\128-\255]*[%w_\128-\255]+') or it.text
  insert(it, part)
  return true
end

function M.dismiss()
  return require('laya.ghost').dismiss()
end

function M.next()
  return require('laya.ghost').cycle(1)
end

function M.prev()
  return require('laya.ghost').cycle(-1)
end

function M.menu()
  return require('laya.menu').open()
end

--- InsertCharPre while accepted text arrives: true if `char` belongs to it.
function M.consume(char)
  local a = M.accepting
  if not a then
    return false
  end
  if vim.startswith(a, char) then
    a = a:sub(#char + 1)
    M.accepting = a ~= '' and a or nil
    return true
  end
  M.accepting = nil
  return false
end

--- What `lhs` did before Laya mapped it (`prev`, from maparg), if anything;
--- true when it had a mapping.
function H.previous(prev)
  if not (prev and prev.lhs) then
    return false
  end
  if prev.callback then
    local keys = prev.callback()
    if prev.expr == 1 and type(keys) == 'string' then
      if prev.replace_keycodes == 1 then
        keys = vim.keycode(keys)
      end
      feed(keys, prev.noremap == 1 and 'in' or 'im')
    end
    return true
  end
  local rhs = prev.rhs or ''
  if prev.expr == 1 then
    rhs = vim.api.nvim_eval(rhs)
  else
    rhs = vim.keycode(rhs)
  end
  feed(rhs, prev.noremap == 1 and 'in' or 'im')
  return true
end

--- The steps of a fallback chain (config `accept.fallback`): each acts and
--- returns true, or returns false to pass on to the next.
H.steps = {
  pum = function()
    if vim.fn.pumvisible() == 1 then
      feed(vim.keycode('<C-n>'), 'in')
      return true
    end
    return false
  end,
  snippet = function()
    if vim.snippet and vim.snippet.active({ direction = 1 }) then
      vim.snippet.jump(1)
      return true
    end
    return false
  end,
  mapping = function(prev)
    return H.previous(prev)
  end,
  key = function(_, lhs)
    feed(vim.keycode(lhs), 'in')
    return true
  end,
}

--- Runs the fallback chain `steps` for key `lhs` (its old mapping `prev`).
function H.fallback(steps, prev, lhs)
  for _, step in ipairs(steps) do
    local f = type(step) == 'function' and step or H.steps[step]
    if f(prev, lhs) == true then
      return
    end
  end
end

--- Is the cursor at column 0 or in the leading whitespace of a line of a
--- code buffer? There the accept key keeps its own job (indenting).
function M.in_code_indent()
  local col = vim.api.nvim_win_get_cursor(0)[2]
  if not vim.api.nvim_get_current_line():sub(1, col):match('^%s*$') then
    return false
  end
  return not require('laya.syntax').is_prose_filetype(vim.bo.filetype)
end

M.plugs = {
  accept = { '<Plug>(laya-accept)', M.accept, 'Accept the suggestion' },
  accept_word = { '<Plug>(laya-accept-word)', M.accept_word, 'Accept one word of the suggestion' },
  dismiss = { '<Plug>(laya-dismiss)', M.dismiss, 'Dismiss the suggestion' },
  next = { '<Plug>(laya-next)', M.next, 'Show the next candidate' },
  prev = { '<Plug>(laya-prev)', M.prev, 'Show the previous candidate' },
  menu = { '<Plug>(laya-menu)', M.menu, 'Open the completion menu with the candidates' },
}

--- Keys mapped by the last setup(), with what they did before.
H.mapped = {}

--- Gives back the keys an earlier setup() took (on a second setup()).
function H.unmap()
  for lhs, prev in pairs(H.mapped) do
    pcall(vim.keymap.del, 'i', lhs)
    if prev and prev.lhs then
      pcall(vim.fn.mapset, 'i', false, prev)
    end
  end
  H.mapped = {}
end

--- Defines the <Plug> mappings and the configured default keys.
function M.setup()
  H.unmap()
  for _, p in pairs(M.plugs) do
    vim.keymap.set('i', p[1], function()
      p[2]()
    end, { desc = 'Laya: ' .. p[3] })
  end
  local keys = require('laya.config').options.keymaps
  if not keys then
    return
  end
  for name, lhs in pairs(keys) do
    if lhs then
      local prev = vim.fn.maparg(lhs, 'i', false, true)
      H.mapped[lhs] = prev
      local action = M.plugs[name][2]
      -- accept/accept_word/dismiss fall back (accept: the configured chain,
      -- the others: the key's old meaning); next/prev/menu do nothing when
      -- there is nothing to show.
      local steps = nil
      if name == 'accept' then
        steps = require('laya.config').options.accept.fallback
      elseif name == 'accept_word' or name == 'dismiss' then
        steps = { 'mapping', 'key' }
      end
      local guard_indent = name == 'accept'
      vim.keymap.set('i', lhs, function()
        local o = require('laya.config').options.accept
        if guard_indent and not o.in_indent and M.in_code_indent() then
          H.fallback(steps, prev, lhs)
        elseif not action() and steps then
          H.fallback(steps, prev, lhs)
        end
      end, { desc = 'Laya: ' .. M.plugs[name][3] })
    end
  end
end

return M
