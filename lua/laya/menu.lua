--- laya.menu: the current candidates in Neovim's built-in completion menu
--- (vim.fn.complete), and `items()`, the candidate list in a plugin-neutral
--- shape for the completion-engine sources (laya.source: blink.cmp, nvim-cmp).
---
--- Item 1 inserts exactly what accepting the ghost text inserts.

local M = {}

--- Byte offset in `s` after dropping its last `n` characters.
local function drop_chars(s, n)
  if n <= 0 then
    return s
  end
  local keep = math.max(0, vim.fn.strchars(s) - n)
  return s:sub(1, vim.fn.byteidx(s, keep))
end

--- The candidates at the cursor: list of { word, text, replace, source,
--- rank, start_col } where `word` replaces the line from `start_col` (0-based
--- byte) to the cursor. Empty when there is no current suggestion.
function M.items()
  local c = require('laya.ghost').current
  if not c then
    return {}
  end
  local max = require('laya.config').options.menu.max_items
  local start_col = c.col - #c.prefix
  local out = {}
  for i, it in ipairs(c.list) do
    if i > max then
      break
    end
    out[#out + 1] = {
      word = drop_chars(c.prefix, it.replace) .. it.text,
      text = it.text,
      replace = it.replace,
      source = it.source,
      rank = it.rank,
      start_col = start_col,
    }
  end
  return out
end

--- Opens the menu; false when there is nothing to offer. `auto` (opened
--- by an answer, not a key): nothing is selected or inserted by opening it.
function M.open(auto)
  local items = M.items()
  if #items == 0 or not vim.fn.mode():find('^i') then
    return false
  end
  local entries = {}
  for i, it in ipairs(items) do
    entries[i] = {
      word = it.word,
      abbr = it.word,
      menu = string.format('[%s #%d]', it.source, it.rank),
      icase = 1,
      dup = 1,
      empty = 1,
      user_data = { laya = { rank = it.rank, source = it.source } },
    }
  end
  if auto then
    local saved = vim.o.completeopt
    vim.o.completeopt = 'menu,menuone,noselect'
    vim.fn.complete(items[1].start_col + 1, entries)
    vim.o.completeopt = saved
  else
    vim.fn.complete(items[1].start_col + 1, entries)
  end
  return true
end

--- CompleteDone: tell the host when a Laya item was taken from the menu.
function M.on_complete_done()
  local item = vim.v.completed_item
  if type(item) == 'table' and type(item.user_data) == 'table' and item.user_data.laya then
    require('laya.host').notify('accepted', vim.api.nvim_get_current_buf(), item.word)
  end
end

return M
