--- laya.cmp: Laya's candidates as an nvim-cmp source named `laya`.
---
---   require('laya.cmp').register()
---   cmp.setup({
---     sources = { { name = 'laya' }, { name = 'nvim_lsp' }, { name = 'buffer' } },
---     sorting = { comparators = require('laya.cmp').comparators() },
---   })
---
--- The items are those of the ghost text, in its order (laya.source); the
--- response is incomplete, so cmp asks again on every key, and a new
--- request cancels the one before. `compare` keeps Laya's order against
--- cmp's own scoring. See :help laya-cmp.

local M = {}
local source = {}

function source.new()
  return setmetatable({}, { __index = source })
end

function source:is_available()
  return require('laya').active(vim.api.nvim_get_current_buf())
end

function source:get_debug_name()
  return 'laya'
end

--- Columns in the items are byte offsets.
function source:get_position_encoding_kind()
  return 'utf-8'
end

function source:complete(_, callback)
  if self.cancel then
    self.cancel()
  end
  self.cancel = require('laya.source').request(function(items, state)
    self.cancel = nil
    local lsp = require('laya.source').lsp_items(items, state)
    for _, it in ipairs(lsp) do
      it.score_offset = nil
    end
    callback({ items = lsp, isIncomplete = true })
  end)
end

--- Accepting an item from cmp's menu tells the host, as Laya's own accept
--- does (the word then weighs more in this buffer).
function source:execute(item, callback)
  if item.data and item.data.laya then
    require('laya.host').notify('accepted', vim.api.nvim_get_current_buf(), item.textEdit.newText)
  end
  callback(item)
end

local function laya_rank(entry)
  local data = entry.completion_item.data
  return type(data) == 'table' and data.laya and data.laya.rank or nil
end

--- A comparator for `sorting.comparators` (put it first): Laya's items
--- before the others and in Laya's order; nil (no opinion) otherwise.
function M.compare(a, b)
  local ra, rb = laya_rank(a), laya_rank(b)
  if ra and rb then
    if ra ~= rb then
      return ra < rb
    end
    return nil
  end
  if ra or rb then
    return ra ~= nil
  end
  return nil
end

--- nvim-cmp's default comparators with `compare` first.
function M.comparators()
  local list = require('cmp.config.default')().sorting.comparators
  table.insert(list, 1, M.compare)
  return list
end

--- The text of cmp's first menu entry while its menu is open.
local function first_entry()
  local cmp = require('cmp')
  if not cmp.visible() then
    return nil
  end
  local e = cmp.get_entries()[1]
  if not e then
    return nil
  end
  local item = e.completion_item
  return item.textEdit and item.textEdit.newText or item.insertText or item.label
end

--- Registers the source `laya` with nvim-cmp (once) and keeps the ghost
--- text agreeing with cmp's menu (laya.source.agrees).
function M.register()
  if M.id then
    return M.id
  end
  local cmp = require('cmp')
  M.id = cmp.register_source('laya', source.new())
  local laya_source = require('laya.source')
  laya_source.menus.cmp = first_entry
  for _, event in ipairs({ 'menu_opened', 'menu_closed' }) do
    cmp.event:on(event, function()
      vim.schedule(laya_source.menu_changed)
    end)
  end
  return M.id
end

return M
