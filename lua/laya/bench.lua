--- laya.bench: `:LayaBench [path] [rate=MS] [keys=N] [warmup=N] [text=sample|buffer]`.
--- Replays typing into a scratch buffer through the real plugin and host,
--- times every keystroke on one clock (vim.uv.hrtime and the host's
--- CLOCK_MONOTONIC stamps) stage by stage, and two floors: a no-work ping
--- (a blocking request) and an echo (sent and answered the way a keystroke's
--- `predict` is, without the engine).
---
--- The replay runs synchronously: `feedkeys('i', 'x!')` holds the command in
--- Insert mode while a timer feeds one key per `rate` ms and the host's
--- answers arrive as they would for a user, so `nvim --headless -c
--- "LayaBench out.json" -c "qa!"` has written the file when the command ends.

local M = {}
local H = {}

M.defaults = {
  -- Write the results as JSON here (nil: only the report).
  path = nil,
  -- Milliseconds between keys (a fast typist leaves about 80).
  rate_ms = 10,
  -- Keystrokes measured; the text is typed again from the start if shorter.
  keys = 2000,
  -- Keystrokes typed first and not measured (caches, first answers).
  warmup = 20,
  -- 'sample' (the built-in text, laya.bench.sample) or 'buffer' (the
  -- current buffer's text).
  text = 'sample',
  -- Show the floating report (default: when a UI is attached).
  report = nil,
}

local hrtime = vim.uv.hrtime

--- Parses the command's arguments: a bare word is the path, `k=v` an option.
function M.parse(fargs)
  local opts = {}
  local numbers = { rate = 'rate_ms', rate_ms = 'rate_ms', keys = 'keys', warmup = 'warmup' }
  for _, a in ipairs(fargs) do
    local k, v = a:match('^(%w+)=(.*)$')
    if not k then
      opts.path = a
    elseif numbers[k] then
      local n = tonumber(v)
      if not n or n < 0 or n ~= math.floor(n) then
        error(string.format('LayaBench: `%s` needs a whole number, got `%s`', k, v), 0)
      end
      opts[numbers[k]] = n
    elseif k == 'text' then
      if v ~= 'sample' and v ~= 'buffer' then
        error('LayaBench: text= must be `sample` or `buffer`', 0)
      end
      opts.text = v
    else
      error(string.format('LayaBench: unknown option `%s` (use rate=MS keys=N warmup=N text=sample|buffer)', k), 0)
    end
  end
  if opts.rate_ms == 0 or opts.keys == 0 then
    error('LayaBench: rate and keys must be at least 1', 0)
  end
  return opts
end

--- The keys to type: one entry per character; newlines become <CR>.
function H.keys_of(text, count)
  local chars = {}
  for ch in text:gmatch('[%z\1-\127\194-\244][\128-\191]*') do
    chars[#chars + 1] = ch == '\n' and '\r' or ch
  end
  local keys = {}
  if #chars == 0 then
    return keys
  end
  for i = 1, count do
    keys[i] = chars[(i - 1) % #chars + 1]
  end
  return keys
end

--- The host's status once its engine is ready, or nil, error.
function H.ready_status(host)
  local st, err
  -- Polled in a plain loop: host.request waits itself (no vim.wait inside vim.wait).
  local deadline = vim.uv.hrtime() + 120e9
  while vim.uv.hrtime() < deadline do
    if not host.running() then
      return nil, 'the host stopped while loading (:Laya log)'
    end
    st, err = host.request('status')
    if st and st.engine and st.engine.ready == true then
      return st
    end
    vim.wait(50)
  end
  return nil, err or 'the engine did not become ready within 120 s'
end

--- A scratch buffer in a new tab page, with nothing that rewrites typed text.
function H.open_scratch()
  vim.cmd('tabnew')
  local buf = vim.api.nvim_get_current_buf()
  local bo = vim.bo[buf]
  bo.buftype = 'nofile'
  bo.bufhidden = 'wipe'
  bo.swapfile = false
  bo.buflisted = false
  bo.textwidth = 0
  bo.autoindent = false
  bo.smartindent = false
  bo.cindent = false
  bo.indentexpr = ''
  bo.formatoptions = ''
  bo.undolevels = -1
  vim.api.nvim_buf_set_name(buf, 'laya-bench://' .. buf)
  return buf
end

--- Closes the scratch tab page and buffer, back to tab page `tab`.
function H.close_scratch(tab, buf)
  local scratch_tab = vim.api.nvim_get_current_tabpage()
  if scratch_tab ~= tab and vim.api.nvim_tabpage_is_valid(tab) then
    pcall(vim.api.nvim_set_current_tabpage, tab)
    pcall(vim.cmd.tabclose, vim.api.nvim_tabpage_get_number(scratch_tab))
  end
  if vim.api.nvim_buf_is_valid(buf) then
    pcall(vim.api.nvim_buf_delete, buf, { force = true })
  end
end

--- CLOCK_MONOTONIC at the host clock's zero, in µs on the Lua clock: read
--- from the host where it can (Linux), else estimated from the ping with the
--- shortest round trip (its midpoint ≈ the host's reading).
function H.clock_origin(st, pings)
  if st.clock_origin_us and st.clock_origin_us ~= vim.NIL then
    return st.clock_origin_us, 'host CLOCK_MONOTONIC'
  end
  local best
  for _, p in ipairs(pings) do
    if p.host_us and (not best or p.rtt_ns < best.rtt_ns) then
      best = p
    end
  end
  if not best then
    return nil, 'none'
  end
  return (best.t0_ns + best.rtt_ns / 2) / 1000 - best.host_us, 'ping midpoint estimate'
end

--- Runs the replay; returns the results table (see BENCHMARKS.md) or nil, error.
function M.run(opts)
  opts = vim.tbl_extend('force', M.defaults, opts or {})
  local text = opts.text == 'buffer' and table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
    or require('laya.bench.sample')
  local keys = H.keys_of(text, opts.warmup + opts.keys)
  if #keys == 0 then
    return nil, 'LayaBench: the text to type is empty'
  end
  if vim.fn.mode() ~= 'n' then
    return nil, 'LayaBench: run it from Normal mode'
  end

  local laya = require('laya')
  laya.ensure_setup()
  if not laya.is_enabled() then
    return nil, 'LayaBench: Laya is disabled (:Laya enable)'
  end
  local host = require('laya.host')
  if not host.start() then
    return nil, 'LayaBench: the host did not start (:checkhealth laya, :Laya log)'
  end
  H.say('LayaBench: waiting for the host to load its model …')
  local st, err = H.ready_status(host)
  H.say('')
  if not st then
    return nil, 'LayaBench: ' .. tostring(err)
  end

  local tab = vim.api.nvim_get_current_tabpage()
  local buf = H.open_scratch()
  if not laya.active(buf) then
    H.close_scratch(tab, buf)
    return nil, "LayaBench: Laya is off for a scratch buffer with no filetype (see the `filetypes['*']` option)"
  end
  local run = { keys = keys, key_ns = {}, shown = {}, on_screen = {}, pings = {}, echoes = {}, typed = 0 }
  local observer = function(t, answer)
    H.on_shown(run, t, answer)
  end
  local hooks = require('laya._bench')
  local screen_observer = function(text, answer_seq)
    H.on_screen(run, text, answer_seq)
  end
  table.insert(hooks.screen_observers, screen_observer)
  local echo_observer = function(answer, received_ns)
    H.on_echo(run, answer, received_ns)
  end
  table.insert(hooks.answer_observers, observer)
  table.insert(hooks.echo_observers, echo_observer)
  -- An automatic completion menu would take the typed <CR> as "accept".
  local menu = require('laya.config').options.menu
  local auto_menu = menu.auto
  menu.auto = false
  run.win = vim.api.nvim_get_current_win()
  H.progress(run)
  local ok, res = pcall(H.replay, run, keys, opts, host)
  menu.auto = auto_menu
  H.remove(hooks.answer_observers, observer)
  H.remove(hooks.echo_observers, echo_observer)
  H.remove(hooks.screen_observers, screen_observer)
  -- The host's view after the run (its latency ring, counters).
  local after = host.request('status') or st
  local host_pid = host.pid
  H.close_scratch(tab, buf)
  if not ok then
    return nil, 'LayaBench: ' .. tostring(res)
  end
  return require('laya.bench.results').build(run, opts, st, after, host_pid, H.clock_origin(st, run.pings))
end

--- A message on the command line at once (also while the command runs).
function H.say(msg)
  if #vim.api.nvim_list_uis() > 0 then
    vim.api.nvim_echo({ { msg } }, false, {})
    vim.cmd.redraw()
  end
end

--- The replay's progress in the scratch window's winbar. The replay runs
--- inside one command, where Neovim draws nothing by itself: redrawn here.
function H.progress(run)
  if vim.api.nvim_win_is_valid(run.win) then
    vim.wo[run.win].winbar =
      string.format('LayaBench: %d of %d keys typed   <Esc> or <C-c> cancels', run.typed, #run.keys)
    if #vim.api.nvim_list_uis() > 0 then
      vim.cmd.redraw()
    end
  end
end

function H.remove(list, item)
  for i, f in ipairs(list) do
    if f == item then
      table.remove(list, i)
      return
    end
  end
end

--- Echo observer of laya.host: the echo's answer back in Lua.
function H.on_echo(run, answer, received_ns)
  local e = run.echoes[answer.seq]
  if e and not e.received_ns then
    e.received_ns = received_ns
    e.host_recv_us, e.host_start_us, e.host_done_us = answer.t_recv, answer.t_start, answer.t_done
  end
end

--- Observer of laya.host: the first answer shown for each key, matched to
--- the latest key fed before its context was sent.
function H.on_shown(run, t, answer)
  if not t.sent_ns then
    return
  end
  local k = run.typed
  while k > 0 and run.key_ns[k] > t.sent_ns do
    k = k - 1
  end
  if k > 0 and not run.shown[k] then
    t.ghost = type(answer) == 'table' and answer.ghost or nil
    t.text = require('laya.ghost').shown()
    run.shown[k] = t
  end
end

--- Observer of laya.ghost: the ghost text changed on screen without an
--- answer (typed through at InsertCharPre, or hidden), during key `typed`.
function H.on_screen(run, text, answer_seq)
  if answer_seq or run.typed == 0 then
    return
  end
  local list = run.on_screen[run.typed] or {}
  list[#list + 1] = { ns = hrtime(), text = text }
  run.on_screen[run.typed] = list
end

--- Types `keys`, one per `rate_ms`; half way between two keys, in turn, a
--- ping or an echo of the last context sent.
function H.replay(run, keys, opts, host)
  local timer = assert(vim.uv.new_timer())
  local finished = false
  local function finish()
    if not finished then
      finished = true
      vim.api.nvim_feedkeys('\27', 'n', false)
    end
  end
  -- Each key's slot of `rate_ms`: the key at its start, a floor half way
  -- (the key's answer is normally in by then, and the host has been idle
  -- for half a slot before each, as between a typist's keys): a ping in
  -- odd slots, an echo in even ones, so neither warms the host for the other.
  local half_ns = opts.rate_ms * 1e6 / 2
  local tick = 0
  local function ping()
    local t0 = hrtime()
    local okp, pong = pcall(vim.rpcrequest, host.chan, 'ping')
    local t1 = hrtime()
    if okp and run.typed > opts.warmup then
      run.pings[#run.pings + 1] =
        { t0_ns = t0, rtt_ns = t1 - t0, host_us = type(pong) == 'table' and pong.now_us or nil }
    end
  end
  local function echo()
    local t0 = hrtime()
    local seq = require('laya._bench').echo()
    if seq and run.typed > opts.warmup then
      run.echoes[seq] = { t0_ns = t0 }
      run.echoes_sent = (run.echoes_sent or 0) + 1
    end
  end
  local function key()
    if run.typed >= #keys then
      return finish()
    end
    run.typed = run.typed + 1
    run.key_ns[run.typed] = hrtime()
    vim.api.nvim_feedkeys(keys[run.typed], 'nt', false)
    if run.typed % 50 == 0 then
      H.progress(run)
    end
  end
  local schedule
  local function step()
    if finished then
      return
    end
    if not vim.fn.mode():find('^i') or not host.chan then
      run.aborted = not host.chan and 'the host stopped' or 'cancelled (Insert mode was left)'
      return finish()
    end
    tick = tick + 1
    if tick % 2 == 1 then
      key()
    elseif tick % 4 == 2 then
      ping()
    else
      echo()
    end
    schedule()
  end
  -- One-shot timers against fixed deadlines, so slow callbacks do not drift
  -- the rate.
  schedule = function()
    local due = run.started_ns + (tick + 1) * half_ns
    local delay = math.max(0, math.floor((due - hrtime()) / 1e6 + 0.5))
    timer:start(delay, 0, function()
      vim.schedule(step)
    end)
  end
  run.started_ns = hrtime()
  schedule()
  -- Blocks in Insert mode until step() feeds <Esc>; timers, scheduled
  -- callbacks and the host's answers run meanwhile, as when a user types.
  local ok, err = pcall(vim.api.nvim_feedkeys, 'i', 'nx!', false)
  finished = true
  run.ended_ns = hrtime()
  timer:stop()
  timer:close()
  if not ok then
    error(err, 0)
  end
  if run.typed < #keys and not run.aborted then
    -- <Esc> or <C-c> left Insert mode before the next key was due.
    run.aborted = 'cancelled (Insert mode was left)'
  end
end

--- `:LayaBench` entry point.
function M.command(fargs)
  local ok, opts = pcall(M.parse, fargs)
  if not ok then
    vim.notify(opts, vim.log.levels.ERROR)
    return
  end
  local results, err = M.run(opts)
  if not results then
    vim.notify(err, vim.log.levels.ERROR)
    return
  end
  if results.aborted and results.aborted:find('^cancelled') then
    local full = vim.tbl_extend('force', M.defaults, opts)
    local msg =
      string.format('LayaBench: cancelled after %d of %d keys', results.keys_typed or 0, full.warmup + full.keys)
    -- After the redraw that closing the scratch tab page brings.
    vim.schedule(function()
      vim.notify(msg, vim.log.levels.WARN)
    end)
    return
  end
  local report = require('laya.bench.report')
  if opts.path then
    local okw, werr = report.write_json(results, opts.path)
    if not okw then
      vim.notify('LayaBench: cannot write ' .. opts.path .. ': ' .. tostring(werr), vim.log.levels.ERROR)
    end
  end
  local show = opts.report
  if show == nil then
    show = #vim.api.nvim_list_uis() > 0
  end
  if show then
    report.open(results)
  else
    -- Headless, messages go to stderr with no line end of their own.
    vim.api.nvim_echo({ { table.concat(report.summary_lines(results), '\n') .. '\n' } }, true, {})
  end
  return results
end

return M
