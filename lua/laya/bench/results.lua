--- laya.bench.results: turns one :LayaBench replay (key times, the answers
--- shown, pings, echoes) into the results table written as JSON: `e2e`,
--- `ping`, `echo`, per-stage summaries, the histogram, and what ran
--- (backend, model, machine).

local M = {}
local stats = require('laya.bench.stats')

--- Stages of one keystroke, in order; each is the time from the previous
--- mark to this one (µs). Host marks are put on the Lua clock first.
M.STAGES = {
  { 'key_to_send', 'key fed → context sent (Neovim + InsertCharPre)' },
  { 'send_to_host', 'sent → host received' },
  { 'host_queue', 'host received → decision started' },
  { 'decision', 'decision (engine.predict)' },
  { 'host_to_lua', 'decision done → back in Lua' },
  { 'render', 'back in Lua → ghost text set' },
}

local function first_line_of_file(path, pattern)
  local f = io.open(path, 'r')
  if not f then
    return nil
  end
  for line in f:lines() do
    local m = line:match(pattern)
    if m then
      f:close()
      return m
    end
  end
  f:close()
  return nil
end

--- nproc, CPU model, OS: where the figures were measured.
function M.machine()
  local u = vim.uv.os_uname()
  return {
    nproc = vim.uv.available_parallelism(),
    cpu = first_line_of_file('/proc/cpuinfo', '^model name%s*:%s*(.-)%s*$') or u.machine,
    os = u.sysname .. ' ' .. u.release,
    hostname = vim.uv.os_gethostname(),
    -- The machine may be shared: 1/5/15-minute load averages at the end.
    loadavg = { vim.uv.loadavg() },
  }
end

--- Resident memory (kB) of process `pid` (Linux), or nil.
function M.rss_kb(pid)
  if not pid then
    return nil
  end
  local kb = first_line_of_file('/proc/' .. pid .. '/status', '^VmRSS:%s*(%d+)')
  return kb and tonumber(kb) or nil
end

local function nil_if_nil(v)
  if v == vim.NIL then
    return nil
  end
  return v
end

--- The results table. `run`: laya.bench's record; `before`/`after`: the
--- host's status before and after; `origin_us`: host clock zero on the Lua
--- clock (µs) or nil; `sync`: how it was found.
function M.build(run, opts, before, after, host_pid, origin_us, sync)
  -- Decisions split by the key typed: a word character usually costs no
  -- model step (the prefix narrows a cached distribution), anything else
  -- ends a word and steps the model — what the seed baseline times.
  local samples = {
    e2e = {},
    rpc = {},
    host_total = {},
    decision_word = {},
    decision_boundary = {},
    ghost_ready = {},
    ghost_at_once = {},
    e2e_ghost = {},
  }
  -- Keys whose answer showed ghost text: how many had it on screen before
  -- the answer (typed through at once), and how often what was shown at once
  -- was then replaced or withdrawn by the answer.
  local screen = { ghost_keys = 0, ready_at_once = 0, replaced = 0, withdrawn = 0 }
  for _, s in ipairs(M.STAGES) do
    samples[s[1]] = {}
  end
  local answered, ghosts = 0, 0
  local measured = 0
  for k = opts.warmup + 1, run.typed do
    measured = measured + 1
    local t = run.shown[k]
    if t then
      answered = answered + 1
      local key_us = run.key_ns[k] / 1000
      local sent_us = t.sent_ns / 1000
      local back_us = t.received_ns / 1000
      local shown_us = t.shown_ns / 1000
      table.insert(samples.e2e, shown_us - key_us)
      table.insert(samples.rpc, back_us - sent_us)
      table.insert(samples.key_to_send, sent_us - key_us)
      table.insert(samples.render, shown_us - back_us)
      if t.host_recv_us and t.host_start_us and t.host_done_us then
        table.insert(samples.host_queue, t.host_start_us - t.host_recv_us)
        table.insert(samples.decision, t.host_done_us - t.host_start_us)
        local word_key = (run.keys[k] or ''):match('^[%w_]$') ~= nil
        table.insert(word_key and samples.decision_word or samples.decision_boundary, t.host_done_us - t.host_start_us)
        table.insert(samples.host_total, t.host_done_us - t.host_recv_us)
        if origin_us then
          table.insert(samples.send_to_host, origin_us + t.host_recv_us - sent_us)
          table.insert(samples.host_to_lua, back_us - (origin_us + t.host_done_us))
        end
      end
      if t.ghost and t.ghost ~= '' then
        ghosts = ghosts + 1
      end
      M.ghost_ready(run.on_screen[k], t, key_us, samples, screen)
    end
  end
  local ping = {}
  for i, p in ipairs(run.pings) do
    ping[i] = p.rtt_ns / 1000
  end

  local echo = M.echo_samples(run, origin_us)

  local e = nil_if_nil(before.engine) or {}
  local elapsed_s = ((run.ended_ns or run.started_ns) - run.started_ns) / 1e9
  local r = {
    tool = 'LayaBench',
    laya_version = require('laya').version,
    host_version = before.version,
    nvim_version = tostring(vim.version()),
    date = os.date('!%Y-%m-%dT%H:%M:%SZ'),
    machine = M.machine(),
    backend = e.backend,
    device = e.device,
    model = e.model or vim.NIL, -- null (not absent) when there is none
    quantization = e.dtype,
    vocab_size = e.vocab_size,
    model_error = e.model_error or vim.NIL,
    text = opts.text,
    rate_ms = opts.rate_ms,
    warmup = opts.warmup,
    keys_typed = run.typed,
    keys_measured = measured,
    answered = answered,
    missed = measured - answered,
    with_ghost_text = ghosts,
    aborted = run.aborted,
    elapsed_s = elapsed_s,
    keystrokes_per_s = elapsed_s > 0 and run.typed / elapsed_s or nil,
    clock_sync = sync,
    e2e = stats.summary(samples.e2e),
    ghost_ready = stats.summary(samples.ghost_ready),
    e2e_ghost = stats.summary(samples.e2e_ghost),
    ghost_at_once = stats.summary(samples.ghost_at_once),
    ghost_screen = screen,
    ping = stats.summary(ping),
    echo = stats.summary(echo.rtt),
    echo_sent = echo.sent,
    echo_stages = {
      send_to_host = stats.summary(echo.send_to_host),
      host_queue = stats.summary(echo.host_queue),
      host_to_lua = stats.summary(echo.host_to_lua),
    },
    rpc_roundtrip = stats.summary(samples.rpc),
    host_total = stats.summary(samples.host_total),
    decision_by_key = {
      word_char = stats.summary(samples.decision_word),
      boundary = stats.summary(samples.decision_boundary),
    },
    stages = {},
    stage_order = {},
    histogram = stats.histogram(samples.e2e),
    histogram_ghost_ready = stats.histogram(samples.ghost_ready),
    host_status_latency = nil_if_nil(after.latency),
    host_counters = nil_if_nil(after.counters),
    rss_kb = { nvim = math.floor(vim.uv.resident_set_memory() / 1024), host = M.rss_kb(host_pid) },
  }
  for _, s in ipairs(M.STAGES) do
    r.stages[s[1]] = stats.summary(samples[s[1]])
    r.stages[s[1]].what = s[2]
    table.insert(r.stage_order, s[1])
  end
  -- Keys per second the pipeline could follow one after another, each
  -- waiting for its ghost text (the replay itself is paced by `rate_ms`).
  if r.e2e.n > 0 and r.e2e.mean_us > 0 then
    r.capacity_keys_per_s = math.floor(1e6 / r.e2e.mean_us)
  end
  r.ratio_e2e_to_ping = M.ratio(r.e2e, r.ping)
  -- The like-for-like floor: an echo takes a keystroke's whole path except
  -- Neovim's key handling, the engine and the rendering.
  r.ratio_e2e_to_echo = M.ratio(r.e2e, r.echo)
  -- What the user sees: the ghost text on screen (often before the host's
  -- answer, from its answers to the next keys), against the same floors.
  r.ratio_ghost_ready_to_ping = M.ratio(r.ghost_ready, r.ping)
  r.ratio_ghost_ready_to_echo = M.ratio(r.ghost_ready, r.echo)
  return r
end

--- `a` / `floor` (two summaries) at p50 and p99, to 0.01; nil without samples.
function M.ratio(a, floor)
  if a.n == 0 or floor.n == 0 then
    return nil
  end
  local function at(q)
    return math.floor(a[q] / floor[q] * 100 + 0.5) / 100
  end
  return { p50 = at('p50_us'), p99 = at('p99_us') }
end

--- Key → its ghost text on screen, for a key whose answer shows ghost
--- text: when the same text was already there before the answer (typing
--- through the previous one trims it at InsertCharPre, no round trip), the
--- time it appeared; else the time the answer drew it. `events`: the ghost's
--- changes on screen during the key that no answer made ({ ns, text }).
function M.ghost_ready(events, t, key_us, samples, screen)
  local shown_us = t.shown_ns / 1000
  local before = {}
  for _, ev in ipairs(events or {}) do
    if ev.ns < t.shown_ns then
      before[#before + 1] = ev
    end
  end
  local last = before[#before]
  if not t.text then
    if last and last.text then
      screen.withdrawn = screen.withdrawn + 1
    end
    return
  end
  screen.ghost_keys = screen.ghost_keys + 1
  table.insert(samples.e2e_ghost, shown_us - key_us)
  if last and last.text == t.text then
    local i = #before
    while i > 1 and before[i - 1].text == t.text do
      i = i - 1
    end
    screen.ready_at_once = screen.ready_at_once + 1
    table.insert(samples.ghost_ready, before[i].ns / 1000 - key_us)
    table.insert(samples.ghost_at_once, before[i].ns / 1000 - key_us)
  else
    if last and last.text then
      screen.replaced = screen.replaced + 1
    end
    table.insert(samples.ghost_ready, shown_us - key_us)
  end
end

--- The echoes' round trips (sent → back in Lua) and their stages (µs).
function M.echo_samples(run, origin_us)
  local out = { rtt = {}, send_to_host = {}, host_queue = {}, host_to_lua = {}, sent = run.echoes_sent or 0 }
  for _, e in pairs(run.echoes) do
    if e.received_ns then
      local sent_us, back_us = e.t0_ns / 1000, e.received_ns / 1000
      table.insert(out.rtt, back_us - sent_us)
      if e.host_recv_us and e.host_start_us and e.host_done_us then
        table.insert(out.host_queue, e.host_start_us - e.host_recv_us)
        if origin_us then
          table.insert(out.send_to_host, origin_us + e.host_recv_us - sent_us)
          table.insert(out.host_to_lua, back_us - (origin_us + e.host_done_us))
        end
      end
    end
  end
  return out
end

return M
