--- laya.log: one log file, `stdpath('log')/laya.log`, for the Lua side and
--- for the host's stderr lines (forwarded by laya.host). `:Laya log` opens it.

local M = {}

M.path = vim.fn.stdpath('log') .. '/laya.log'

local RANK = { error = 1, warn = 2, info = 3, debug = 4 }
local file

local function write(line)
  if not file then
    vim.fn.mkdir(vim.fn.fnamemodify(M.path, ':h'), 'p')
    file = io.open(M.path, 'a')
    if not file then
      return
    end
  end
  file:write(os.date('%Y-%m-%d %H:%M:%S '), line, '\n')
  file:flush()
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

return M
