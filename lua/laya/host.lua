--- laya.host: the `laya serve` job. Starts it (lazily, from the first
--- InsertEnter), sends it notifications, restarts it with backoff if it dies,
--- and receives its answers (`on_answer`, called by the host through
--- nvim_exec_lua as an RPC notification: one message each way per keystroke).
---
--- Nothing here blocks typing: `predict` is an rpcnotify; commands (:Laya
--- status, :checkhealth) wait for the host's reply at most
--- `request_timeout_ms`, never on the keystroke path.

local bench = require('laya._bench')

local M = {}
local H = {}

M.chan = nil
M.pid = nil
--- The model the running host was started with: a path, or false (the
--- host's default).
M.model = nil
--- The host's exit code when its input went out of sync (src/rpc/mod.rs).
M.EXIT_OUT_OF_SYNC = 3
--- Counters shown by :Laya status and used by tests.
M.stats = {
  sent = 0,
  answers = 0,
  dropped = 0,
  shown = 0,
  starts = 0,
  exits = 0,
  switches = 0,
  next_keys = 0,
  next_keys_kept = 0,
}
--- hrtime (ns) of each send, by seq; only the latest few are kept.
H.sent_at = {}
H.failures = 0
H.gave_up = false
H.stopping = false
H.stderr_tail = ''
H.started_at = 0

local function log(level, msg)
  require('laya.log').log(level, msg)
end

function M.running()
  return M.chan ~= nil
end

--- Starts the host unless it runs or gave up; returns true when running.
--- `model`: a path, or false (the host's default); by default the model
--- for the current buffer's filetype (config.model_for).
function M.start(model)
  if M.chan then
    return true
  end
  if H.gave_up or H.restart_pending or H.switching then
    return false
  end
  local config = require('laya.config')
  local o = config.options
  if model == nil then
    model = config.model_for(vim.bo.filetype)
  end
  if vim.fn.executable(o.host.path) ~= 1 then
    H.give_up(
      string.format(
        'Laya: host binary not found at %s (run `cargo build --release` in the plugin folder; :checkhealth laya)',
        o.host.path
      )
    )
    return false
  end
  local cmd = { o.host.path, 'serve', '--backend', o.host.backend, '--log-level', o.log_level }
  vim.list_extend(cmd, { '--threshold', tostring(o.ghost.threshold) })
  vim.list_extend(cmd, { '--code-threshold', tostring(o.ghost.code_threshold) })
  if model then
    vim.list_extend(cmd, { '--model', model })
  end
  vim.list_extend(cmd, o.host.args)
  if o.learn then
    vim.list_extend(cmd, { '--store', o.learn.dir, '--store-max-mb', tostring(o.learn.max_mb) })
    if o.learn.rejections then
      cmd[#cmd + 1] = '--learn-rejections'
    end
  end
  H.stopping = false
  local ok, chan = pcall(vim.fn.jobstart, cmd, {
    rpc = true,
    on_stderr = H.on_stderr,
    on_exit = H.on_exit,
  })
  if not ok or chan <= 0 then
    M.chan = 0
    H.on_exit(0, -1)
    return false
  end
  M.chan = chan
  M.model = model
  -- A new host knows nothing: every buffer's next state must be sent.
  require('laya.context').last_sent = {}
  M.pid = vim.fn.jobpid(chan)
  H.started_at = vim.uv.now()
  M.stats.starts = M.stats.starts + 1
  log('info', string.format('host started: pid %d, %s', M.pid, table.concat(cmd, ' ')))
  return true
end

--- Stops the host (VimLeavePre, :Laya disable); no restart follows.
function M.stop()
  H.stopping = true
  H.switching = nil
  if M.chan then
    pcall(vim.fn.jobstop, M.chan)
  end
  M.chan = nil
  M.pid = nil
end

--- Most ms a model switch waits for the old host to exit before starting
--- the new one anyway.
M.SWITCH_WAIT_MS = 500

--- Restarts the host with `model`: the buffer typed in wants another model
--- than the running host's (host.filetype_models, or setup() changed it).
--- The new host starts once the old one has exited, so that what the old
--- one learnt is in the store the new one loads (it saves as it exits).
--- Typing never waits: keys typed meanwhile are not sent, and the new host
--- is sent the state the cursor is in when it starts.
function H.switch(model)
  local old = M.chan
  M.chan = nil
  M.pid = nil
  M.stats.switches = M.stats.switches + 1
  log('info', 'switching the host to model ' .. tostring(model))
  H.switching = { job = old, model = model }
  pcall(vim.fn.jobstop, old)
  vim.defer_fn(function()
    H.finish_switch(old)
  end, M.SWITCH_WAIT_MS)
end

--- Starts the host of a switch once the old host `job` has exited (or
--- waiting for it took too long); then predicts for where the cursor is.
function H.finish_switch(job)
  local switch = H.switching
  if not switch or switch.job ~= job then
    return
  end
  H.switching = nil
  if H.stopping or not require('laya.config').options.enabled or not M.start(switch.model) then
    return
  end
  if vim.fn.mode():find('^i') and require('laya').active(vim.api.nvim_get_current_buf()) then
    local context = require('laya.context')
    context.send(context.state())
  end
end

--- Forgets a previous give-up (after :Laya enable).
function M.reset()
  H.gave_up = false
  H.failures = 0
end

function H.give_up(msg)
  H.gave_up = true
  log('error', msg)
  -- One message, not one per keystroke.
  vim.schedule(function()
    vim.notify(msg, vim.log.levels.ERROR)
  end)
end

function H.on_stderr(_, data)
  -- Chunks split lines anywhere: the last element is a partial line.
  data[1] = H.stderr_tail .. data[1]
  H.stderr_tail = table.remove(data)
  -- A line not ended yet keeps only its head (the log cuts it there anyway),
  -- so one huge line never builds a huge string here.
  local keep = require('laya.log').LINE_MAX + 1
  if #H.stderr_tail > keep then
    H.stderr_tail = H.stderr_tail:sub(1, keep)
  end
  for _, line in ipairs(data) do
    require('laya.log').host_line(line)
  end
end

function H.on_exit(job, code)
  if job ~= M.chan then
    -- A host stopped earlier, exiting only now; a switch waits for it.
    if H.switching and H.switching.job == job then
      vim.schedule(function()
        H.finish_switch(job)
      end)
    end
    return
  end
  M.chan = nil
  M.pid = nil
  M.stats.exits = M.stats.exits + 1
  if H.stopping then
    return
  end
  -- A host that ran a while before dying starts a fresh failure count.
  if vim.uv.now() - H.started_at > 30000 then
    H.failures = 0
  end
  H.failures = H.failures + 1
  local max = require('laya.config').options.host.max_restarts
  log(
    'warn',
    string.format(
      'host exited with code %s (%d in a row; %s)',
      tostring(code),
      H.failures,
      H.failures > max and 'no restarts left' or string.format('restart %d of at most %d', H.failures, max)
    )
  )
  if H.failures > max then
    H.give_up(
      string.format(
        'Laya: the host exited %d times in a row (exit code %s), predictions off; see :Laya log, retry with :Laya enable',
        H.failures,
        tostring(code)
      )
    )
    return
  end
  local delay = math.min(100 * 2 ^ (H.failures - 1), 5000)
  if code == M.EXIT_OUT_OF_SYNC then
    -- Garbage reached the host's input and it ended on purpose: a fresh
    -- host at once, so the next key's request goes to it. One message per
    -- session says so.
    delay = 0
    if not H.told_out_of_sync then
      H.told_out_of_sync = true
      vim.schedule(function()
        vim.notify('Laya: the host received garbage on its input and was restarted (:Laya log)', vim.log.levels.WARN)
      end)
    end
  end
  H.restart_pending = true
  vim.defer_fn(function()
    H.restart_pending = false
    if not H.stopping and require('laya.config').options.enabled and M.start() then
      -- Predict for where the cursor is now, without waiting for a key.
      if vim.fn.mode():find('^i') and require('laya').active(vim.api.nvim_get_current_buf()) then
        local context = require('laya.context')
        context.send(context.state())
      end
    end
  end, delay)
end

--- A message from the host for the user (such as a notification it
--- skipped for its size): shown once per kind in a session.
function M.on_notice(kind, text)
  H.told = H.told or {}
  if H.told[kind] then
    return
  end
  H.told[kind] = true
  log('warn', 'host notice (' .. tostring(kind) .. '): ' .. tostring(text))
  vim.schedule(function()
    vim.notify('Laya: ' .. tostring(text), vim.log.levels.WARN)
  end)
end

--- Sends a notification; returns false (silently) when the host is down.
function M.notify(method, ...)
  if not M.chan and not M.start() then
    return false
  end
  local ok, err = pcall(vim.rpcnotify, M.chan, method, ...)
  if not ok then
    log('warn', 'rpcnotify ' .. method .. ' failed: ' .. tostring(err))
  end
  return ok
end

--- Sends the context of one keystroke (see laya.context).
function M.predict(ctx)
  local model = require('laya.config').model_for(ctx.filetype)
  if M.chan and model ~= M.model then
    H.switch(model)
  end
  M.stats.sent = M.stats.sent + 1
  H.sent_at[ctx.seq] = vim.uv.hrtime()
  H.sent_at[ctx.seq - 64] = nil
  bench.last_ctx = ctx
  return M.notify(
    'predict',
    ctx.buf,
    ctx.tick,
    ctx.seq,
    { ctx.row, ctx.col },
    ctx.before,
    ctx.after,
    ctx.filetype,
    ctx.seen == true,
    ctx.syntax,
    ctx.learn == true
  )
end

--- How long a command waits for the host's reply before giving up.
M.request_timeout_ms = 1000
H.call_id = 0
--- Replies by call id, for the calls still waited for.
H.replies = {}

--- A request for commands (:Laya status, :checkhealth): sent as a `call`
--- notification and waited for at most `timeout_ms` (default
--- M.request_timeout_ms), so that a stopped or busy host never freezes
--- Neovim (vim.rpcrequest would wait for it forever). Returns result, or
--- nil and an error.
function M.request(method, timeout_ms)
  if not M.chan then
    return nil, 'the host is not running'
  end
  timeout_ms = timeout_ms or M.request_timeout_ms
  H.call_id = H.call_id + 1
  local id = H.call_id
  H.replies[id] = false
  local ok, err = pcall(vim.rpcnotify, M.chan, 'call', id, method)
  if not ok then
    H.replies[id] = nil
    return nil, tostring(err)
  end
  vim.wait(timeout_ms, function()
    return H.replies[id] ~= false
  end, 10)
  local reply = H.replies[id]
  H.replies[id] = nil
  if not reply then
    return nil,
      string.format(
        'the host (pid %s) did not answer `%s` within %d ms: it is stopped or busy (:Laya log)',
        tostring(M.pid),
        method,
        timeout_ms
      )
  end
  if reply.err ~= nil and reply.err ~= vim.NIL then
    return nil, tostring(reply.err)
  end
  return reply.result
end

--- Called by the host with the reply to a `call`; a reply that comes after
--- its call gave up is dropped.
function M.on_reply(id, result, err)
  if H.replies[id] == false then
    H.replies[id] = { result = result, err = err }
  end
end

--- Called by the host after an answer, between keystrokes: its answers to
--- the likeliest next keys (`{ buf, seq, row, col, keys = { [char] = { prefix,
--- ghost, items } } }`, see src/rpc/decide.rs), which laya.ghost shows the
--- moment such a key is typed.
function M.on_next_keys(msg)
  M.stats.next_keys = M.stats.next_keys + 1
  if require('laya.ghost').on_next_keys(msg) then
    M.stats.next_keys_kept = M.stats.next_keys_kept + 1
  end
end

--- Called by the host with one answer (a table, see src/rpc/decide.rs).
function M.on_answer(answer)
  local received = vim.uv.hrtime()
  if answer.echo then
    bench.notify(bench.echo_observers, answer, received)
    return
  end
  M.stats.answers = M.stats.answers + 1
  if not require('laya.ghost').on_answer(answer) then
    M.stats.dropped = M.stats.dropped + 1
    log('debug', 'answer seq ' .. tostring(answer.seq) .. ' dropped as stale')
    return
  end
  M.stats.shown = M.stats.shown + 1
  if #bench.answer_observers > 0 then
    local timing = {
      seq = answer.seq,
      sent_ns = H.sent_at[answer.seq],
      received_ns = received,
      shown_ns = vim.uv.hrtime(),
      host_recv_us = answer.t_recv,
      host_start_us = answer.t_start,
      host_done_us = answer.t_done,
    }
    bench.notify(bench.answer_observers, timing, answer)
  end
end

return M
