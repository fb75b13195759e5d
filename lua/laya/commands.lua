--- laya.commands: `:Laya status|enable|disable|toggle|log` (defined in
--- plugin/laya.lua, implemented here so startup loads nothing).

local M = {}

M.subcommands = { 'status', 'enable', 'disable', 'toggle', 'log', 'learn', 'forget' }

--- `host.filetype_models` as "help, lua, vim → laya-neovim; …" ('' when empty).
function M.filetypes_by_model()
  local groups = {}
  for ft, model in pairs(require('laya.config').options.host.filetype_models) do
    groups[model] = groups[model] or {}
    table.insert(groups[model], ft)
  end
  local parts = {}
  for model, fts in pairs(groups) do
    table.sort(fts)
    parts[#parts + 1] = table.concat(fts, ', ') .. ' → ' .. vim.fn.fnamemodify(model, ':t:r')
  end
  table.sort(parts)
  return table.concat(parts, '; ')
end

--- Lines describing the plugin and the host (also used by :checkhealth).
function M.status_lines()
  local laya = require('laya')
  local host = require('laya.host')
  local s = host.stats
  local lines = {
    string.format('Laya %s: %s', laya.version, laya.is_enabled() and 'enabled' or 'disabled'),
    string.format(
      'Lua: %d sent, %d answers, %d shown, %d dropped as stale; next keys %d (%d in time); host starts: %d (%d for another model)',
      s.sent,
      s.answers,
      s.shown,
      s.dropped,
      s.next_keys,
      s.next_keys_kept,
      s.starts,
      s.switches
    ),
  }
  local by_model = M.filetypes_by_model()
  if by_model ~= '' then
    lines[#lines + 1] = 'Models by filetype: ' .. by_model
  end
  if not host.running() then
    lines[#lines + 1] = laya.is_enabled() and 'Host: not running (it starts on the next InsertEnter)'
      or 'Host: not running (Laya is disabled; :Laya enable starts it again)'
    vim.list_extend(lines, require('laya.learn').status_lines(nil))
    return lines
  end
  local st, err = host.request('status')
  if not st then
    lines[#lines + 1] = 'Host: pid ' .. tostring(host.pid) .. ', status request failed: ' .. err
    return lines
  end
  vim.list_extend(lines, require('laya.learn').status_lines(st))
  local e, c, l = st.engine or {}, st.counters or {}, st.latency or {}
  lines[#lines + 1] = string.format('Host: laya %s, pid %d, up %.1f s', st.version, st.pid, st.uptime_ms / 1000)
  if e.ready then
    lines[#lines + 1] = string.format('Engine: backend %s (%s), model %s', e.backend, e.device, tostring(e.model))
    if e.model_error and e.model_error ~= vim.NIL then
      lines[#lines + 1] = 'Model error: ' .. tostring(e.model_error)
    end
    if e.backend_error and e.backend_error ~= vim.NIL then
      lines[#lines + 1] = 'Backend error: ' .. tostring(e.backend_error)
    end
    if e.words_error and e.words_error ~= vim.NIL then
      lines[#lines + 1] = 'Word list error: ' .. tostring(e.words_error)
    end
  else
    lines[#lines + 1] = 'Engine: loading (backend ' .. tostring(e.backend) .. ')'
  end
  lines[#lines + 1] = string.format(
    'Requests: %d received, %d superseded, %d answered, %d accepted, %d bad input',
    c.predict_received or 0,
    c.predict_superseded or 0,
    c.predict_answered or 0,
    c.accepted or 0,
    c.bad_input or 0
  )
  lines[#lines + 1] = string.format(
    'Host latency (receive → decision done, last %d): p50 %d µs, p99 %d µs, max %d µs',
    l.n or 0,
    l.p50_us or 0,
    l.p99_us or 0,
    l.max_us or 0
  )
  local m = type(st.memory) == 'table' and st.memory or {}
  if type(m.rss_kb) == 'number' then
    local mem = string.format('Host memory: %.1f MB resident', m.rss_kb / 1024)
    if type(m.malloc) == 'table' then
      mem = mem .. string.format(', %.1f MB allocated', m.malloc.in_use / 1048576)
    end
    if type(m.engine) == 'table' then
      mem = mem .. string.format(', caches ~%.1f MB (%d buffers)', m.engine.estimated_bytes / 1048576, m.engine.buffers)
    end
    lines[#lines + 1] = mem
  end
  return lines
end

function M.run(args)
  local sub = args[1] or 'status'
  local laya = require('laya')
  if sub == 'status' then
    vim.api.nvim_echo({ { table.concat(M.status_lines(), '\n') } }, true, {})
  elseif sub == 'enable' then
    laya.enable()
  elseif sub == 'disable' then
    laya.disable()
  elseif sub == 'toggle' then
    laya.toggle()
  elseif sub == 'learn' then
    require('laya').ensure_setup()
    require('laya.learn').learn_project(args[2])
  elseif sub == 'forget' then
    require('laya').ensure_setup()
    require('laya.learn').forget(args[2])
  elseif sub == 'log' then
    vim.cmd.split(vim.fn.fnameescape(require('laya.log').path))
  else
    vim.notify(
      string.format('Laya: unknown subcommand `%s`; use one of: %s', sub, table.concat(M.subcommands, ', ')),
      vim.log.levels.ERROR
    )
  end
end

function M.complete(arglead)
  return vim.tbl_filter(function(s)
    return vim.startswith(s, arglead)
  end, M.subcommands)
end

return M
