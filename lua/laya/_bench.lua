--- Private to Laya's benchmarks (:LayaBench, benches/soak): hooks into the
--- keystroke's path. Not part of the public API; it may change at any time.
local M = {}

--- Called with the timing record of every answer shown:
--- { seq, sent_ns, received_ns, shown_ns } (vim.uv.hrtime) and
--- { host_recv_us, host_start_us, host_done_us } (the host's clock).
M.answer_observers = {}
--- Called with (answer, received_ns) for every echo answer.
M.echo_observers = {}
--- Called with (text on screen or nil, answer seq or nil) whenever the ghost
--- text changes: the seq when an answer from the host drew it, nil when it
--- changed at once (typed through, hidden).
M.screen_observers = {}
--- The last context laya.host sent, which `echo` sends again.
M.last_ctx = nil
local echo_seq = 0

--- Calls every function of `list` with the other arguments; an error in one
--- never reaches the keystroke's path.
function M.notify(list, ...)
  for _, f in ipairs(list) do
    pcall(f, ...)
  end
end

--- Sends the last keystroke's context again as an `echo`, which the host
--- answers the way it answers `predict` (same queue, thread and `on_answer`
--- call back) but without the engine: the like-for-like floor of :LayaBench.
--- Returns the echo's seq, or nil when nothing was sent yet or the host is
--- down.
function M.echo()
  local ctx = M.last_ctx
  local chan = require('laya.host').chan
  if not ctx or not chan then
    return nil
  end
  echo_seq = echo_seq + 1
  local ok = pcall(
    vim.rpcnotify,
    chan,
    'echo',
    ctx.buf,
    ctx.tick,
    echo_seq,
    { ctx.row, ctx.col },
    ctx.before,
    ctx.after,
    ctx.filetype
  )
  return ok and echo_seq or nil
end

return M
