--- laya.learn: personal learning. Text the user writes (what changed in a
--- buffer, on write and on InsertLeave) and files of a project (`:Laya
--- learn`) go to the host, which learns them in memory and keeps them in the
--- personal store (`learn.dir`). Special buffers, secret files and the deny
--- list never leave Neovim; nothing learnt is logged.

local M = {}
local H = {}

--- Per buffer: the lines as last learnt (only what changes is learnt).
H.seen = {}
--- `:Laya learn` in progress: { root, files, next, bytes, learnt, skipped, started, done }.
M.project = nil

--- Folders never learnt from (Lua patterns on the full path); file names
--- are the `disabled_files` globs, the list that also keeps predictions out.
M.secret_dirs = {
  '/%.ssh/',
  '/%.gnupg/',
  '/%.password%-store/',
  '/%.aws/',
  '/%.kube/',
}

local function options()
  return require('laya.config').options.learn
end

function M.enabled()
  return options() ~= false
end

--- Whether the file at `path` may be learnt from.
function M.path_allowed(path)
  if path == '' then
    return true
  end
  path = vim.fs.normalize(vim.fn.fnamemodify(path, ':p'))
  for _, pat in ipairs(M.secret_dirs) do
    if path:find(pat) then
      return false
    end
  end
  local name = vim.fn.fnamemodify(path, ':t')
  for _, glob in ipairs(require('laya.config').options.disabled_files) do
    if vim.fn.match(name, '\\c' .. vim.fn.glob2regpat(glob)) >= 0 then
      return false
    end
  end
  for _, glob in ipairs(options().deny) do
    local re = vim.fn.glob2regpat(vim.fn.expand(glob))
    if vim.fn.match(path, re) >= 0 or vim.fn.match(name, re) >= 0 then
      return false
    end
  end
  return true
end

--- Whether buffer `buf` may be learnt from.
function M.buffer_allowed(buf)
  if not M.enabled() or not vim.api.nvim_buf_is_valid(buf) then
    return false
  end
  if vim.bo[buf].buftype ~= '' or vim.b[buf].laya_learn == false then
    return false
  end
  local ft = vim.bo[buf].filetype
  if options().filetypes[ft] == false then
    return false
  end
  return M.path_allowed(vim.api.nvim_buf_get_name(buf))
end

local function send(text, path)
  local host = require('laya.host')
  if text == '' or not (host.running() or host.start()) then
    return
  end
  -- Bounded pieces: the host learns each between two keystrokes.
  local piece = 32768
  for i = 1, #text, piece do
    host.notify('learn', text:sub(i, i + piece - 1), path)
  end
end

--- Whether what the user does in `buf` may teach the host (what is typed
--- past there is remembered as rejected): a buffer being learnt from.
function M.teaches(buf)
  return H.seen[buf] ~= nil and vim.b[buf].laya_learn ~= false and M.enabled()
end

--- Remembers the buffer's lines as they are (learning starts from here).
function M.track(buf)
  if M.buffer_allowed(buf) and vim.api.nvim_buf_line_count(buf) <= options().max_buffer_lines then
    H.seen[buf] = { tick = vim.b[buf].changedtick, lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false) }
  end
end

--- Learns the lines of `buf` that changed since they were last seen.
function M.learn_changes(buf)
  local seen = H.seen[buf]
  if not seen or not M.buffer_allowed(buf) or seen.tick == vim.b[buf].changedtick then
    return
  end
  if vim.api.nvim_buf_line_count(buf) > options().max_buffer_lines then
    H.seen[buf] = nil
    return
  end
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local old, new = table.concat(seen.lines, '\n') .. '\n', table.concat(lines, '\n') .. '\n'
  local changed = {}
  for _, h in ipairs(vim.diff(old, new, { result_type = 'indices' }) or {}) do
    local start, count = h[3], h[4]
    for i = start, start + count - 1 do
      changed[#changed + 1] = lines[i]
    end
  end
  H.seen[buf] = { tick = vim.b[buf].changedtick, lines = lines }
  if #changed > 0 then
    send(table.concat(changed, '\n') .. '\n', vim.api.nvim_buf_get_name(buf))
  end
end

function M.forget_buffer(buf)
  H.seen[buf] = nil
end

function M.setup()
  local group = vim.api.nvim_create_augroup('laya_learn', { clear = true })
  if not M.enabled() then
    return
  end
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'BufEnter' }, {
    group = group,
    callback = function(ev)
      if not H.seen[ev.buf] then
        M.track(ev.buf)
      end
    end,
  })
  vim.api.nvim_create_autocmd({ 'BufWritePost', 'InsertLeave' }, {
    group = group,
    callback = function(ev)
      M.learn_changes(ev.buf)
    end,
  })
  vim.api.nvim_create_autocmd({ 'BufDelete', 'BufWipeout' }, {
    group = group,
    callback = function(ev)
      M.forget_buffer(ev.buf)
    end,
  })
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and not H.seen[buf] then
      M.track(buf)
    end
  end
  if options().on_startup then
    vim.schedule(function()
      M.learn_project(nil, true)
    end)
  end
end

--- How many saves the host has done on request (`flush`); nil when it does not say.
local function flushes(host)
  local status = host.request('status')
  return type(status) == 'table' and type(status.learn) == 'table' and status.learn.flushes or nil
end

--- Before Neovim exits: the host saves what it learnt, and Neovim waits for
--- that save (at most `flush_timeout_ms`) before it stops the host.
M.flush_timeout_ms = 2000
function M.flush()
  local host = require('laya.host')
  if not (M.enabled() and host.running()) then
    return
  end
  local before = flushes(host)
  host.notify('flush')
  if before == nil then
    return
  end
  -- Polled with plain waits: host.request waits itself, and vim.wait must not nest.
  local deadline = vim.uv.hrtime() + M.flush_timeout_ms * 1e6
  repeat
    vim.wait(20)
    local now = flushes(host)
    if now == nil or now > before then
      return
    end
  until vim.uv.hrtime() >= deadline
end

-- Files of a project -------------------------------------------------------

local GENERATED = {
  '%.min%.[%w]+$',
  '%.lock$',
  '/package%-lock%.json$',
  '%.map$',
  '/node_modules/',
  '/vendor/',
  '/dist/',
  '/target/',
  '/build/',
}

--- The project's files: git-tracked ones under `root`, else every file.
local function list_files(root)
  local res = vim.system({ 'git', '-C', root, 'ls-files', '-z', '--full-name', '.' }, { text = true }):wait(10000)
  local top = vim.system({ 'git', '-C', root, 'rev-parse', '--show-toplevel' }, { text = true }):wait(5000)
  if res.code == 0 and top.code == 0 then
    local base = vim.trim(top.stdout)
    local files = {}
    for name in res.stdout:gmatch('[^%z]+') do
      files[#files + 1] = base .. '/' .. name
    end
    return files
  end
  return vim.fs.find(function()
    return true
  end, { path = root, type = 'file', limit = 20000 })
end

--- Whether `text` is something to learn from (not binary, not minified).
local function is_text(text, path)
  if text:find('%z') then
    return false
  end
  local lines = select(2, text:gsub('\n', '')) + 1
  if #text / lines > 300 then
    return false -- minified
  end
  local head = text:sub(1, 1000)
  if head:find('@generated') or head:find('DO NOT EDIT') or head:find('[Aa]uto%-?generated') then
    return false
  end
  for _, pat in ipairs(GENERATED) do
    if path:find(pat) then
      return false
    end
  end
  return true
end

local function read_file(path, max)
  local st = vim.uv.fs_stat(path)
  if not st or st.type ~= 'file' or st.size > max then
    return nil
  end
  local fd = vim.uv.fs_open(path, 'r', 0)
  if not fd then
    return nil
  end
  local data = vim.uv.fs_read(fd, st.size, 0)
  vim.uv.fs_close(fd)
  return data
end

--- `:Laya learn [path]`: learns a project's files in the background.
function M.learn_project(path, quiet)
  if not M.enabled() then
    vim.notify('Laya: learning is off (learn = false)', vim.log.levels.WARN)
    return
  end
  if M.project and not M.project.done then
    vim.notify('Laya: already learning ' .. M.project.root, vim.log.levels.WARN)
    return
  end
  local root = vim.fs.normalize(vim.fn.fnamemodify(path or vim.fn.getcwd(), ':p'))
  local o = options().project
  local files = vim.fn.isdirectory(root) == 1 and list_files(root) or { root }
  local p = {
    root = root,
    files = files,
    next = 1,
    bytes = 0,
    learnt = 0,
    skipped = 0,
    started = vim.uv.now(),
    done = false,
  }
  M.project = p
  if not quiet then
    vim.notify(string.format('Laya: learning %d files of %s in the background (:Laya status)', #files, root))
  end
  local function step()
    local budget = 256 * 1024
    while p.next <= #p.files and budget > 0 do
      if p.bytes >= o.max_mb * 1048576 or vim.uv.now() - p.started > o.max_seconds * 1000 then
        p.next = #p.files + 1
        p.stopped = true
        break
      end
      local f = p.files[p.next]
      p.next = p.next + 1
      local text = M.path_allowed(f) and read_file(f, o.max_file_kb * 1024)
      if text and is_text(text, f) then
        send(text, f)
        p.bytes = p.bytes + #text
        p.learnt = p.learnt + 1
        budget = budget - #text
      else
        p.skipped = p.skipped + 1
      end
    end
    if p.next <= #p.files then
      vim.defer_fn(step, 20)
    else
      p.done = true
      p.seconds = (vim.uv.now() - p.started) / 1000
    end
  end
  vim.defer_fn(step, 0)
end

--- `:Laya forget [word]`: everything (after confirmation) or one word.
function M.forget(word)
  local host = require('laya.host')
  if not (host.running() or host.start()) then
    vim.notify('Laya: the host is not running', vim.log.levels.ERROR)
    return
  end
  if word then
    host.notify('forget_learnt', word)
    vim.notify('Laya: forgot `' .. word .. '`')
    return
  end
  if vim.fn.confirm('Forget everything Laya learnt from your writing?', '&Yes\n&No', 2) ~= 1 then
    return
  end
  host.notify('forget_learnt', vim.NIL)
  vim.notify('Laya: forgot everything it had learnt')
end

--- Lines for :Laya status and :checkhealth.
function M.status_lines(st)
  local lines = {}
  if not M.enabled() then
    return { 'Learning: off (learn = false)' }
  end
  local l = st and st.learn
  if type(l) == 'table' then
    local path = l.path ~= vim.NIL and l.path or '(in memory only)'
    lines[#lines + 1] = string.format(
      'Personal store: %s, %.1f KB, %d words learnt, permissions dir %s file %s, loaded in %.1f ms',
      path,
      (l.bytes or 0) / 1024,
      l.words or 0,
      l.dir_mode ~= vim.NIL and l.dir_mode or '-',
      l.file_mode ~= vim.NIL and l.file_mode or '-',
      l.load_ms or 0
    )
    -- Nil (vim.NIL) from the host when rejections are not learnt (learn.rejections off).
    if type(l.rejections) == 'number' then
      lines[#lines + 1] = string.format('Rejections remembered: %d', l.rejections)
    else
      lines[#lines + 1] = 'Rejections remembered: off (learn.rejections)'
    end
    if type(l.rated_tokens) == 'number' then
      local waiting = ''
      if (l.measuring_bytes or 0) > 0 then
        waiting = string.format(', %.1f KB waiting', l.measuring_bytes / 1024)
      end
      local line = 'Rates: measured on %d tokens of your writing%s'
      lines[#lines + 1] = string.format(line, l.rated_tokens, waiting)
    end
    if l.error and l.error ~= vim.NIL then
      lines[#lines + 1] = 'Personal store problem: ' .. l.error
    end
  end
  local p = M.project
  if p then
    lines[#lines + 1] = string.format(
      'Learning %s: %s, %d/%d files (%d learnt, %d skipped), %.1f MB%s',
      p.root,
      p.done and 'done' or 'in progress',
      math.min(p.next - 1, #p.files),
      #p.files,
      p.learnt,
      p.skipped,
      p.bytes / 1048576,
      p.stopped and ' (stopped at the size or time bound)' or ''
    )
  end
  return lines
end

return M
