--- laya: predictive typing from a small local language model — the rest of
--- the word and the next words as inline ghost text and in the completion
--- menu. `require('laya').setup(opts)`; see :help laya.
---
--- Event flow: InsertCharPre (with v:char applied) / TextChangedI /
--- CursorMovedI → laya.context (state + bounded context, seq) → laya.host
--- (rpcnotify to `laya serve`) … the host calls back laya.host.on_answer →
--- laya.ghost (drop stale, render) → laya.keymaps / laya.menu (accept).

local M = {}
local H = {}

--- Must equal the host's version (Cargo.toml); :checkhealth compares them.
M.version = '0.1.0'

H.configured = false
H.group = nil
--- `M.active` for the current buffer and window, kept for the keystroke
--- events: { buf, win, on }. Worked out again on InsertEnter and whenever
--- the buffer, window, filetype, buftype or settings change, not on every
--- key (it reads several options and variables: tens of µs a key).
H.here = nil

--- Configures Laya (options: :help laya-config). Safe to call again.
---@param opts? table Any subset of `laya.Config` (lua/laya/config.lua)
function M.setup(opts)
  local config = require('laya.config')
  config.set(opts)
  H.here = nil
  H.configured = true
  require('laya.highlight').define()
  require('laya.keymaps').setup()
  H.create_autocmds()
  require('laya.learn').setup()
  if not config.options.enabled then
    M.disable()
  end
end

--- Called by plugin/laya.lua on the first InsertEnter: setup() with the
--- defaults if the user never called it.
function M.ensure_setup()
  if not H.configured then
    M.setup({})
    H.on_insert_enter()
  end
end

function M.is_enabled()
  return require('laya.config').options.enabled
end

function M.enable()
  require('laya.config').options.enabled = true
  H.here = nil
  require('laya.host').reset()
  if vim.fn.mode():find('^i') then
    H.on_insert_enter()
  end
end

function M.disable()
  require('laya.config').options.enabled = false
  H.here = nil
  require('laya.ghost').hide()
  require('laya.host').stop()
end

function M.toggle()
  if M.is_enabled() then
    M.disable()
  else
    M.enable()
  end
end

--- Accept / dismiss / cycle, for your own mappings (true when it acted).
M.accept = function()
  return require('laya.keymaps').accept()
end
M.accept_word = function()
  return require('laya.keymaps').accept_word()
end
M.dismiss = function()
  return require('laya.keymaps').dismiss()
end
M.next = function()
  return require('laya.keymaps').next()
end
M.prev = function()
  return require('laya.keymaps').prev()
end
--- The candidates at the cursor (for completion-source adapters).
M.candidates = function()
  return require('laya.menu').items()
end

--- Is Laya on for buffer `buf` in the current window?
function M.active(buf)
  local o = require('laya.config').options
  if not o.enabled or vim.b[buf].laya_enabled == false then
    return false
  end
  local bt = vim.bo[buf].buftype
  if vim.tbl_contains(o.disabled_buftypes, bt) then
    return false
  end
  -- Nothing can be typed into it (:checkhealth's report, man pages, a
  -- file manager's listing): predicting there would only cost the host.
  if not vim.bo[buf].modifiable then
    return false
  end
  if H.secret(vim.api.nvim_buf_get_name(buf), o.disabled_files) then
    return false
  end
  local ft = vim.bo[buf].filetype
  local on = o.filetypes[ft]
  if on == nil then
    on = o.filetypes['*'] ~= false
  end
  if not on then
    return false
  end
  if not o.in_floating_windows and vim.api.nvim_win_get_config(0).relative ~= '' then
    return false
  end
  return true
end

--- Does the file name of `path` match one of the `patterns` (globs)?
function H.secret(path, patterns)
  local name = vim.fn.fnamemodify(path, ':t')
  if name == '' then
    return false
  end
  for _, pat in ipairs(patterns) do
    if vim.fn.match(name, '\\c' .. vim.fn.glob2regpat(pat)) >= 0 then
      return true
    end
  end
  return false
end

--- Is Laya on where the cursor is? (`M.active`, kept in `H.here`.)
function H.active_here()
  local buf, win = vim.api.nvim_get_current_buf(), vim.api.nvim_get_current_win()
  local here = H.here
  if not here or here.buf ~= buf or here.win ~= win then
    here = { buf = buf, win = win, on = M.active(buf) }
    H.here = here
  end
  return here.on
end

function H.on_insert_enter()
  H.here = nil
  if not H.active_here() then
    return
  end
  require('laya.host').start()
  require('laya.context').send(require('laya.context').state())
end

function H.on_char()
  if not H.active_here() then
    return
  end
  local char = vim.v.char
  local context = require('laya.context')
  local keymaps = require('laya.keymaps')
  if keymaps.consume(char) then
    -- Part of an accept: trim the ghost, send once the insert is done.
    require('laya.ghost').type_through(context.state(), char)
    return
  end
  local before = context.state()
  local ghost = require('laya.ghost')
  local seen = ghost.seen(before)
  if seen then
    -- Read and typed on past: the host's answer will give its word's place
    -- to the next best, so it is not trimmed in the meantime.
    ghost.hide()
  else
    ghost.typed(before, char)
  end
  context.send(context.state(char), seen)
end

function H.on_change()
  if not H.active_here() then
    return
  end
  local context = require('laya.context')
  local state = context.state()
  require('laya.ghost').sync(state)
  if not require('laya.keymaps').accepting then
    context.send(state)
  end
end

function H.on_insert_leave()
  H.here = nil
  require('laya.ghost').hide()
  require('laya.keymaps').accepting = nil
  require('laya.context').forget(vim.api.nvim_get_current_buf())
end

function H.create_autocmds()
  H.group = vim.api.nvim_create_augroup('laya', { clear = true })
  local function on(events, fn)
    vim.api.nvim_create_autocmd(events, { group = H.group, callback = fn })
  end
  on('InsertEnter', H.on_insert_enter)
  on({ 'BufEnter', 'WinEnter', 'FileType', 'BufFilePost' }, function()
    H.here = nil
  end)
  vim.api.nvim_create_autocmd('OptionSet', {
    group = H.group,
    pattern = 'buftype',
    callback = function()
      H.here = nil
    end,
  })
  on('InsertCharPre', H.on_char)
  on({ 'TextChangedI', 'CursorMovedI' }, H.on_change)
  on('InsertLeave', H.on_insert_leave)
  on('CompleteChanged', function()
    if require('laya.config').options.ghost.hide_with_pum then
      require('laya.ghost').render()
    end
  end)
  on('CompleteDone', function()
    require('laya.menu').on_complete_done()
  end)
  on({ 'BufDelete', 'BufWipeout' }, function(ev)
    require('laya.context').forget(ev.buf)
    if require('laya.host').running() then
      require('laya.host').notify('forget', ev.buf)
    end
  end)
  on('ColorScheme', function()
    require('laya.highlight').define()
  end)
  on('VimLeavePre', function()
    require('laya.learn').flush()
    require('laya.host').stop()
  end)
end

return M
