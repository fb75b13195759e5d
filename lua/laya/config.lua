--- laya.config: the options of `require('laya').setup()`, their defaults
--- and their validation. Every other module reads `require('laya.config').options`.
---
--- Unknown keys and wrong types are reported with the option's full name,
--- so a typo in a user's config says exactly what to fix.

local M = {}

--- The root of the plugin (the folder holding lua/, plugin/, target/).
M.root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h')

---@class laya.Keymaps
---@field accept string|false Accept the ghost text; falls back to what the key did before
---@field accept_word string|false Accept one word of the ghost text
---@field dismiss string|false Hide the ghost text
---@field next string|false Show the next candidate as ghost text
---@field prev string|false Show the previous candidate as ghost text
---@field menu string|false Open the completion menu with Laya's candidates

---@class laya.GhostConfig
---@field highlight string Highlight group `LayaGhost` links to
---@field hide_with_pum boolean Hide the ghost text while the completion menu is visible
---@field give_way integer|false Milliseconds on screen before typing past a ghost word counts as "not this one"
---@field threshold number Show a ghost when the top candidate's probability reaches this (0..1)
---@field code_threshold number The same where the cursor is in code (0..1)

---@class laya.MenuConfig
---@field auto boolean Open the completion menu after every answer
---@field max_items integer Most items in the menu

---@class laya.ContextConfig
---@field max_bytes integer Most bytes of text before the cursor sent per keystroke (64..16384)
---@field max_lines integer Most lines above the cursor read per keystroke

---@class laya.HostConfig
---@field path string The `laya` binary
---@field model string|false Model weights: a path or a shipped model's name; false: the host's default
---@field filetype_models table<string, string> Models by filetype, over `model`
---@field backend 'auto'|'cpu'|'mlx' Where the model runs
---@field max_restarts integer Host restarts after a crash before giving up
---@field args string[] More arguments for `laya serve` (see `laya serve --help`)

---@class laya.Config
---@field enabled boolean Master switch (also :Laya enable|disable|toggle)
---@field filetypes table<string, boolean> Filetypes on or off; `['*']` for any other
---@field disabled_buftypes string[] 'buftype' values that never get predictions
---@field in_floating_windows boolean Predict in floating windows
---@field keymaps laya.Keymaps|false Insert-mode keys, or false for none
---@field ghost laya.GhostConfig
---@field menu laya.MenuConfig
---@field context laya.ContextConfig
---@field host laya.HostConfig
---@field log_level 'error'|'warn'|'info'|'debug' Least severe messages in `:Laya log`

--- The filetypes whose text the 'neovim' model (the default until
--- 2026-12-06, trained on Neovim's and Vim's runtime and help) predicts better
--- than the default (models/README.md, "Round 4"), mapped to it.
M.NEOVIM_FILETYPES = {
  lua = 'neovim',
  vim = 'neovim',
  help = 'neovim',
}

---@type laya.Config
M.defaults = {
  -- Master switch (also :Laya enable|disable|toggle).
  enabled = true,
  -- Filetypes: `['*']` is the default for any filetype not listed.
  filetypes = {
    ['*'] = true,
    TelescopePrompt = false,
    snacks_picker_input = false,
    fzf = false,
    minifiles = false,
    ['grug-far'] = false,
  },
  -- Buffers with these 'buftype' values never get predictions.
  disabled_buftypes = { 'prompt', 'terminal', 'quickfix', 'help' },
  -- Files whose name (the last path component) matches one of these globs
  -- never get predictions: nothing of them is sent to the host. The same
  -- list as the host's (src/learn/privacy.rs), which never learns from them.
  disabled_files = {
    '.env*',
    'id_*',
    '*.pem',
    '*.key',
    '.netrc',
    '.pgpass',
    '*.gpg',
    'credentials*',
    'secrets*',
    '*.p12',
    '*.pfx',
    '*.asc',
    '*.kdbx',
    '.git-credentials',
  },
  -- Filetypes written as prose: the engine prefers words there, and the
  -- accept key may accept in a line's leading whitespace. '' is a buffer
  -- with no filetype. `laya lsp` reads the same list (src/engine/kind.rs).
  prose_filetypes = {
    '',
    'text',
    'markdown',
    'gitcommit',
    'mail',
    'rst',
    'org',
    'norg',
    'asciidoc',
    'tex',
    'plaintex',
    'help',
  },
  -- Predict in floating windows (pickers, prompts)? Off by default.
  in_floating_windows = false,
  -- Keys (insert mode). Set one to false to leave that key alone, or set
  -- `keymaps = false` for none; the <Plug>(laya-*) mappings always exist.
  keymaps = {
    accept = '<Tab>', -- falls back to what <Tab> did before when nothing is shown
    accept_word = '<M-Right>',
    dismiss = '<C-]>',
    next = '<M-]>',
    prev = '<M-[>',
    menu = '<M-l>',
  },
  -- The accept key (keymaps.accept) when Laya does not take it.
  accept = {
    -- Accept at column 0 or in a line's leading whitespace of a code buffer
    -- (not in prose_filetypes)? Off: the key indents there, as without Laya.
    in_indent = false,
    -- What the key does instead, in order, until one step acts: 'pum'
    -- (next popup menu item), 'snippet' (jump to the next snippet field),
    -- 'mapping' (the key's own mapping from before setup()), 'key' (the
    -- key itself), or a function that returns true when it acted.
    fallback = { 'snippet', 'mapping', 'key' },
  },
  ghost = {
    -- Highlight group `LayaGhost` links to; false: Laya's own, grey and
    -- italic in both GUI and terminal colours. A `LayaGhost` defined by the
    -- colorscheme or the user wins over both.
    highlight = false,
    -- Hide the ghost text while the completion menu is visible.
    hide_with_pum = true,
    -- Milliseconds a ghost word must have been on screen for typing on past
    -- it (the same word, not accepted) to count as "not this one": it then
    -- gives way to the next best for the rest of that word and moves to the
    -- menu's end. `false`: never; 0: always (the reader of METRICS.md).
    give_way = 500,
    -- Show a ghost text when the engine's probability for its word reaches
    -- this (0..1). Lower: more ghosts, more of them wrong; 44 % of the
    -- ghosts shown at 0.12 are right on held-out prose. 0: always a ghost.
    threshold = 0.12,
    -- The same where the cursor is in code (not in its comments or
    -- strings): a ghost in code is right more often at the same probability,
    -- so code's threshold is lower for about the same share of right ghosts.
    code_threshold = 0.05,
  },
  menu = {
    -- Open the completion menu with Laya's candidates after every answer.
    auto = false,
    -- Most items in the menu.
    max_items = 8,
  },
  context = {
    -- Most bytes of text before the cursor sent per keystroke.
    max_bytes = 4096,
    -- Most lines above the cursor read per keystroke.
    max_lines = 64,
  },
  host = {
    -- The `laya` binary; built by `cargo build --release` in the plugin root.
    path = M.root .. '/target/release/laya',
    -- Model weights: a path, or the name of a model Laya ships ('default',
    -- or 'neovim': better on Lua, Vim script and Vim help, worse on most
    -- other code and prose; :help laya-models). A missing file leaves only
    -- the word sources.
    model = M.root .. '/models/laya-default.safetensors',
    -- Models by filetype, over `model`: typing in a buffer of one of these
    -- filetypes restarts the host with that model (a path or a shipped
    -- model's name) when another one runs (about 50 ms without
    -- predictions; typing never waits). These are where 'neovim' beats
    -- the default. `{}`: `model` everywhere. Setting `model` alone also
    -- means `model` everywhere. :help laya-models
    filetype_models = M.NEOVIM_FILETYPES,
    -- 'auto' | 'cpu' | 'mlx'
    backend = 'auto',
    -- Host restarts after a crash before giving up with one message.
    max_restarts = 5,
    -- More arguments for `laya serve`, e.g. { '--no-think-ahead' } to spend
    -- no CPU between keystrokes (`laya serve --help` lists them).
    args = {},
  },
  -- Personal learning (:help laya-learn); `learn = false` turns it off.
  learn = {
    -- The personal store's folder.
    dir = vim.fn.stdpath('data') .. '/laya',
    -- Bound on the store's size in MB (the least used, oldest go first).
    max_mb = 16,
    -- Files never learnt from, besides `disabled_files` and secret folders
    -- (~/.ssh, ~/.gnupg, password stores): globs like '*.secret' or '~/private/*'.
    deny = {},
    -- Filetypes not learnt from: { markdown = false }.
    filetypes = {},
    -- Learn the current project (:Laya learn) when Neovim starts.
    on_startup = false,
    -- Buffers longer than this are not learnt from.
    max_buffer_lines = 20000,
    -- Learn the suggestions typed past: a ghost word read and typed past
    -- three times after the same previous word, and never written there,
    -- moves down there in later buffers and sessions (kept in the store).
    rejections = false,
    -- Bounds of :Laya learn.
    project = { max_mb = 20, max_seconds = 120, max_file_kb = 512 },
  },
  -- 'error' | 'warn' | 'info' | 'debug': the log file is `:Laya log`.
  log_level = 'warn',
}

local LEVELS = { error = true, warn = true, info = true, debug = true }
local BACKENDS = { auto = true, cpu = true, mlx = true }
local FALLBACK_STEPS = { pum = true, snippet = true, mapping = true, key = true }

local function check(ok, name, expected, value)
  if not ok then
    error(string.format('laya.setup: option `%s`: expected %s, got %s', name, expected, vim.inspect(value)), 0)
  end
end

local function key_or_false(v)
  return v == false or (type(v) == 'string' and v ~= '')
end

--- Shipped models' former names: 'polyglot' (2026-12-05) became the default.
M.RENAMED_MODELS = { polyglot = 'default' }

--- `host.model` as the host takes it: a shipped model's name (letters,
--- digits, '-' and '_' alone, as 'neovim') is models/laya-{name}.safetensors
--- in the plugin; a path or false is kept.
function M.model_path(model)
  if type(model) == 'string' and model:match('^[%w_-]+$') then
    model = M.RENAMED_MODELS[model] or model
    return M.root .. '/models/laya-' .. model .. '.safetensors'
  end
  return model
end

--- `o.host`'s models as the host takes them (M.model_path), resolved once
--- here rather than on every keystroke.
local function resolve_models(o)
  o.host.model = M.model_path(o.host.model)
  local by_filetype = {}
  for ft, model in pairs(o.host.filetype_models) do
    by_filetype[ft] = M.model_path(model)
  end
  o.host.filetype_models = by_filetype
  return o
end

--- The options in effect (the defaults until setup()).
---@type laya.Config
M.options = resolve_models(vim.deepcopy(M.defaults))

--- The model for a buffer of `filetype`: its entry in `host.filetype_models`,
--- else `host.model` (a path, or false: the host's default).
function M.model_for(filetype)
  local o = M.options.host
  return o.filetype_models[filetype] or o.model
end

--- Checks the merged options; raises an error that names the option.
function M.validate(o)
  local function unknown(tbl, defaults, prefix)
    for k in pairs(tbl) do
      if defaults[k] == nil and prefix ~= 'filetypes.' then
        error(string.format('laya.setup: unknown option `%s%s`', prefix, tostring(k)), 0)
      end
    end
  end
  unknown(o, M.defaults, '')
  check(type(o.enabled) == 'boolean', 'enabled', 'a boolean', o.enabled)
  check(type(o.filetypes) == 'table', 'filetypes', 'a table of filetype = boolean', o.filetypes)
  for ft, on in pairs(o.filetypes) do
    check(type(on) == 'boolean', 'filetypes.' .. tostring(ft), 'a boolean', on)
  end
  check(vim.islist(o.disabled_buftypes), 'disabled_buftypes', 'a list of buftype names', o.disabled_buftypes)
  for name, list in pairs({ disabled_files = o.disabled_files, prose_filetypes = o.prose_filetypes }) do
    local ok = vim.islist(list)
    for _, v in ipairs(ok and list or {}) do
      ok = ok and type(v) == 'string'
    end
    check(ok, name, 'a list of strings', list)
  end
  check(type(o.in_floating_windows) == 'boolean', 'in_floating_windows', 'a boolean', o.in_floating_windows)
  check(o.keymaps == false or type(o.keymaps) == 'table', 'keymaps', 'a table or false', o.keymaps)
  if type(o.keymaps) == 'table' then
    unknown(o.keymaps, M.defaults.keymaps, 'keymaps.')
    for name, lhs in pairs(o.keymaps) do
      check(key_or_false(lhs), 'keymaps.' .. name, 'a key (string) or false', lhs)
    end
  end
  for _, section in ipairs({ 'accept', 'ghost', 'menu', 'context', 'host' }) do
    check(type(o[section]) == 'table', section, 'a table', o[section])
    unknown(o[section], M.defaults[section], section .. '.')
  end
  check(type(o.accept.in_indent) == 'boolean', 'accept.in_indent', 'a boolean', o.accept.in_indent)
  local steps_ok = vim.islist(o.accept.fallback)
  for _, step in ipairs(steps_ok and o.accept.fallback or {}) do
    steps_ok = steps_ok and (FALLBACK_STEPS[step] == true or type(step) == 'function')
  end
  check(steps_ok, 'accept.fallback', "a list of 'pum', 'snippet', 'mapping', 'key' or functions", o.accept.fallback)
  check(
    o.ghost.highlight == false or (type(o.ghost.highlight) == 'string' and o.ghost.highlight ~= ''),
    'ghost.highlight',
    'a highlight group name or false',
    o.ghost.highlight
  )
  check(type(o.ghost.hide_with_pum) == 'boolean', 'ghost.hide_with_pum', 'a boolean', o.ghost.hide_with_pum)
  check(
    o.ghost.give_way == false or (type(o.ghost.give_way) == 'number' and o.ghost.give_way >= 0),
    'ghost.give_way',
    'milliseconds (a number >= 0) or false',
    o.ghost.give_way
  )
  for _, key in ipairs({ 'threshold', 'code_threshold' }) do
    local x = o.ghost[key]
    check(type(x) == 'number' and x >= 0 and x <= 1, 'ghost.' .. key, 'a number in 0..1', x)
  end
  check(type(o.menu.auto) == 'boolean', 'menu.auto', 'a boolean', o.menu.auto)
  check(
    type(o.menu.max_items) == 'number' and o.menu.max_items >= 1,
    'menu.max_items',
    'a number >= 1',
    o.menu.max_items
  )
  check(
    type(o.context.max_bytes) == 'number' and o.context.max_bytes >= 64 and o.context.max_bytes <= 16384,
    'context.max_bytes',
    'a number in 64..16384',
    o.context.max_bytes
  )
  check(
    type(o.context.max_lines) == 'number' and o.context.max_lines >= 0,
    'context.max_lines',
    'a number >= 0',
    o.context.max_lines
  )
  check(type(o.host.path) == 'string' and o.host.path ~= '', 'host.path', 'a path to the laya binary', o.host.path)
  check(
    o.host.model == false or (type(o.host.model) == 'string' and o.host.model ~= ''),
    'host.model',
    "a path, a shipped model's name ('default', 'neovim') or false",
    o.host.model
  )
  check(
    type(o.host.filetype_models) == 'table',
    'host.filetype_models',
    'a table of filetype = model',
    o.host.filetype_models
  )
  for ft, model in pairs(o.host.filetype_models) do
    check(
      type(ft) == 'string' and type(model) == 'string' and model ~= '',
      'host.filetype_models.' .. tostring(ft),
      "a path or a shipped model's name",
      model
    )
  end
  check(BACKENDS[o.host.backend] == true, 'host.backend', "'auto', 'cpu' or 'mlx'", o.host.backend)
  check(vim.islist(o.host.args), 'host.args', 'a list of strings', o.host.args)
  for i, a in ipairs(o.host.args) do
    check(type(a) == 'string', 'host.args[' .. i .. ']', 'a string', a)
  end
  check(
    type(o.host.max_restarts) == 'number' and o.host.max_restarts >= 0,
    'host.max_restarts',
    'a number >= 0',
    o.host.max_restarts
  )
  check(LEVELS[o.log_level] == true, 'log_level', "'error', 'warn', 'info' or 'debug'", o.log_level)
  M.validate_learn(o.learn)
end

function M.validate_learn(l)
  check(l == false or type(l) == 'table', 'learn', 'a table or false', l)
  if l == false then
    return
  end
  local d = M.defaults.learn
  for k in pairs(l) do
    if d[k] == nil then
      error(string.format('laya.setup: unknown option `learn.%s`', tostring(k)), 0)
    end
  end
  check(type(l.dir) == 'string' and l.dir ~= '', 'learn.dir', 'a folder path', l.dir)
  check(type(l.max_mb) == 'number' and l.max_mb > 0, 'learn.max_mb', 'a number > 0', l.max_mb)
  check(vim.islist(l.deny), 'learn.deny', 'a list of globs', l.deny)
  check(type(l.filetypes) == 'table', 'learn.filetypes', 'a table of filetype = false', l.filetypes)
  check(type(l.on_startup) == 'boolean', 'learn.on_startup', 'a boolean', l.on_startup)
  check(type(l.max_buffer_lines) == 'number', 'learn.max_buffer_lines', 'a number', l.max_buffer_lines)
  check(type(l.rejections) == 'boolean', 'learn.rejections', 'a boolean', l.rejections)
  check(type(l.project) == 'table', 'learn.project', 'a table', l.project)
  for _, k in ipairs({ 'max_mb', 'max_seconds', 'max_file_kb' }) do
    check(type(l.project[k]) == 'number' and l.project[k] > 0, 'learn.project.' .. k, 'a number > 0', l.project[k])
  end
end

--- Merges `user` over the defaults, validates, and makes it current.
---@param user? table Any subset of `laya.Config`, nested the same way
---@return laya.Config
function M.set(user)
  check(user == nil or type(user) == 'table', 'setup(opts)', 'a table or nil', user)
  local merged = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), user or {})
  if user and user.keymaps == false then
    merged.keymaps = false
  end
  -- A list given replaces the default list (a deep merge would mix them).
  for _, key in ipairs({ 'disabled_buftypes', 'disabled_files', 'prose_filetypes' }) do
    if user and user[key] ~= nil then
      merged[key] = user[key]
    end
  end
  if user and type(user.accept) == 'table' and user.accept.fallback ~= nil then
    merged.accept.fallback = user.accept.fallback
  end
  -- A table of models by filetype replaces the default one; a model set
  -- without one is the model everywhere.
  local host = user and type(user.host) == 'table' and user.host or {}
  if host.filetype_models ~= nil then
    merged.host.filetype_models = host.filetype_models
  elseif host.model ~= nil then
    merged.host.filetype_models = {}
  end
  if user and user.learn == false then
    merged.learn = false
  end
  M.validate(merged)
  resolve_models(merged)
  M.options = merged
  return merged
end

return M
