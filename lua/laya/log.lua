--- laya.log: one log file, `stdpath('log')/laya.log`, for the Lua side and
--- for the host's stderr lines (forwarded by laya.host). `:Laya log` opens it.
---
--- The file is private (0600), rotated to `laya.log.1` past `MAX_BYTES`,
--- every line is cut at `LINE_MAX` bytes, and one message repeated more than
--- `REPEAT_MAX` times in a `REPEAT_WINDOW_S` window is counted, not written.

local M = {}

M.path = vim.fn.stdpath('log') .. '/laya.log'
M.MAX_BYTES = 1024 * 1024
M.LINE_MAX = 1000
M.REPEAT_MAX = 10
M.REPEAT_WINDOW_S = 60

local RANK = { error = 1, warn = 2, info = 3, debug = 4 }
local PRIVATE = tonumber('600', 8)
local uv = vim.uv or vim.loop

local file
local size = 0
-- Per message: how often it came in this window, and how often it was held back.
local seen = {}
local distinct = 0
local window_start = 0

local function open()
  vim.fn.mkdir(vim.fn.fnamemodify(M.path, ':h'), 'p')
  -- Created 0600 (io.open would use 0666 & umask); an older file is made 0600 too.
  local fd = uv.fs_open(M.path, 'a', PRIVATE)
  if fd then
    uv.fs_close(fd)
  end
  uv.fs_chmod(M.path, PRIVATE)
  file = io.open(M.path, 'a')
  if file then
    size = file:seek('end') or 0
  end
  return file
end

local function rotate()
  file:close()
  file = nil
  os.rename(M.path, M.path .. '.1')
  open()
end

local function append(line)
  if not file and not open() then
    return
  end
  local text = os.date('%Y-%m-%d %H:%M:%S ') .. line .. '\n'
  file:write(text)
  file:flush()
  size = size + #text
  if size > M.MAX_BYTES then
    rotate()
  end
end

--- `line` cut to at most LINE_MAX bytes (never inside a UTF-8 character),
--- with a marker saying where it was cut.
function M.bound(line)
  if #line <= M.LINE_MAX then
    return line
  end
  local cut = M.LINE_MAX - 40
  while cut > 0 and line:byte(cut + 1) >= 0x80 and line:byte(cut + 1) < 0xC0 do
    cut = cut - 1
  end
  return string.format('%s … [line cut at %d bytes]', line:sub(1, cut), cut)
end

-- Writes the "suppressed" lines of the window that ended, and starts a new one.
local function new_window(now)
  for msg, s in pairs(seen) do
    if s.held > 0 then
      append(string.format('… suppressed %d similar lines: %s', s.held, msg:sub(1, 200)))
    end
  end
  seen = {}
  distinct = 0
  window_start = now
end

local function write(line)
  line = M.bound(line)
  local now = os.time()
  -- Many different lines also end the window: the table stays small.
  if now - window_start >= M.REPEAT_WINDOW_S or distinct >= 1000 then
    new_window(now)
  end
  local s = seen[line]
  if not s then
    s = { n = 0, held = 0 }
    seen[line] = s
    distinct = distinct + 1
  end
  s.n = s.n + 1
  if s.n > M.REPEAT_MAX then
    s.held = s.held + 1
    return
  end
  append(line)
end

--- Logs `msg` from the Lua side when `level` passes the configured log_level.
function M.log(level, msg)
  local max = RANK[require('laya.config').options.log_level] or 2
  if (RANK[level] or 4) <= max then
    write('lua ' .. level:upper() .. ' ' .. msg)
  end
end

--- A line the host wrote to stderr (already filtered by its --log-level).
function M.host_line(line)
  if line ~= '' then
    write('host ' .. line)
  end
end

--- Writes the counts of held-back lines now (on exit; tests).
function M.flush()
  new_window(os.time())
end

vim.api.nvim_create_autocmd('VimLeavePre', { callback = M.flush })

return M
