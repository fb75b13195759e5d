--- laya.blink: Laya's candidates as a blink.cmp source.
---
---   sources = {
---     default = { 'laya', 'lsp', 'path', 'buffer' },
---     providers = { laya = { module = 'laya.blink', name = 'Laya', score_offset = 100 } },
---   }
---
--- The items are those of the ghost text, in its order (laya.source); blink
--- asks again on every key (the list is incomplete both ways) and cancels
--- what it no longer needs. See :help laya-blink.

local source = {}

function source.new(opts)
  local self = setmetatable({}, { __index = source })
  self.opts = opts or {}
  source.watch_menu()
  return self
end

function source:enabled()
  return require('laya').active(vim.api.nvim_get_current_buf())
end

function source:get_completions(_, callback)
  return require('laya.source').request(function(items, state)
    callback({
      items = require('laya.source').lsp_items(items, state),
      is_incomplete_forward = true,
      is_incomplete_backward = true,
    })
  end)
end

--- Accepting an item from blink's menu tells the host, as Laya's own
--- accept does (the word then weighs more in this buffer).
function source:execute(ctx, item, callback, default_implementation)
  default_implementation(ctx, item)
  local laya = item.data and item.data.laya
  if laya then
    require('laya.host').notify('accepted', vim.api.nvim_get_current_buf(), item.textEdit.newText)
  end
  callback()
end

--- The text of blink's first menu entry while its menu is open.
local function first_entry()
  local blink = require('blink.cmp')
  if not blink.is_menu_visible() then
    return nil
  end
  local item = blink.get_items()[1]
  if not item then
    return nil
  end
  return item.textEdit and item.textEdit.newText or item.insertText or item.label
end

--- Keeps the ghost text agreeing with blink's menu (laya.source.agrees).
function source.watch_menu()
  local laya_source = require('laya.source')
  if laya_source.menus.blink then
    return
  end
  laya_source.menus.blink = first_entry
  local group = vim.api.nvim_create_augroup('laya_blink', { clear = true })
  vim.api.nvim_create_autocmd('User', {
    group = group,
    pattern = { 'BlinkCmpShow', 'BlinkCmpHide', 'BlinkCmpMenuOpen', 'BlinkCmpMenuClose' },
    callback = laya_source.menu_changed,
  })
end

return source
