-- Keystroke-to-ghost-text benchmark driver, run inside Neovim by benches/e2e.rs.
--
-- Types `keys` one at a time (nvim_input from a timer, so each key takes the
-- real insert-mode path), waits for that keystroke's answer to be applied
-- (ghost text set or cleared), pings the host once (the no-work floor), and
-- goes on. All times are vim.uv.hrtime() on the Lua side plus the host's
-- own clock from the answer. The result lands in _G.laya_bench_result.

local M = {}

local function us(ns)
  return ns / 1000
end

function M.run(keys, gap_ms)
  local host = require('laya.host')
  local s = {
    e2e = {},
    send_to_shown = {},
    host = {},
    wake = {},
    decide = {},
    transport = {},
    to_host = {},
    from_host = {},
    ping = {},
  }
  local i, pending, watchdog = 0, nil, nil
  local skipped = 0

  local function finish()
    for k, obs in ipairs(host.observers) do
      if obs == M.observer then
        table.remove(host.observers, k)
      end
    end
    _G.laya_bench_result = { samples = s, keys = #keys, skipped = skipped }
  end

  local next_key
  local function after_answer()
    -- One ping per keystroke, in the same conditions, as the floor.
    local t0 = vim.uv.hrtime()
    local ok, r = pcall(vim.rpcrequest, host.chan, 'ping')
    if ok then
      local t1 = vim.uv.hrtime()
      table.insert(s.ping, us(t1 - t0))
      -- The ping's host clock reading, taken mid round trip, maps host time
      -- onto Lua's clock (error: half the round trip at most).
      local offset = r.now_us - us((t0 + t1) / 2)
      local lt = M.last_timing
      table.insert(s.to_host, lt.host_recv_us - offset - us(lt.sent_ns))
      table.insert(s.from_host, us(lt.received_ns) - (lt.host_done_us - offset))
    end
    vim.defer_fn(next_key, gap_ms)
  end

  M.observer = function(t)
    if not pending or not t.sent_ns or t.sent_ns < pending.t_key then
      return -- an answer for an earlier key
    end
    M.last_timing = t
    table.insert(s.e2e, us(t.shown_ns - pending.t_key))
    table.insert(s.send_to_shown, us(t.shown_ns - t.sent_ns))
    local host_us = t.host_done_us - t.host_recv_us
    table.insert(s.host, host_us)
    table.insert(s.wake, t.host_start_us - t.host_recv_us)
    table.insert(s.decide, t.host_done_us - t.host_start_us)
    table.insert(s.transport, us(t.received_ns - t.sent_ns) - host_us)
    pending = nil
    if watchdog then
      watchdog:stop()
    end
    after_answer()
  end
  table.insert(host.observers, M.observer)

  next_key = function()
    i = i + 1
    if i > #keys then
      return finish()
    end
    pending = { t_key = vim.uv.hrtime() }
    vim.api.nvim_input(keys[i])
    -- A key that sends nothing (or whose answer is dropped) must not stall the run.
    watchdog = vim.defer_fn(function()
      if pending then
        pending = nil
        skipped = skipped + 1
        next_key()
      end
    end, 500)
  end
  next_key()
end

return M
