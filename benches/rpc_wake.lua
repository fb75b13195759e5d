-- What one message costs to reach a host that has been idle: sends `predict`
-- notifications to the real host and reads the host's receive stamp (on
-- Neovim's clock via status.clock_origin_us), back to back and then with an
-- idle gap like typing's, so the two can be compared in the same run.
--
--   nvim --headless --clean -u scripts/minimal_init.lua -l benches/rpc_wake.lua [N] [GAP_MS]
local n = tonumber(_G.arg[1]) or 300
local gap_ms = tonumber(_G.arg[2]) or 10
local host = require('laya.host')
require('laya').ensure_setup()
assert(host.start(), 'the host did not start')
local st
vim.wait(60000, function()
  st = host.request('status')
  return st and st.engine and st.engine.ready
end, 20)
assert(st.clock_origin_us ~= vim.NIL, 'needs the host clock origin (Linux)')
local got = {}
local on_answer = host.on_answer
host.on_answer = function(a)
  got[a.seq] = a
end
local stats = require('laya.bench.stats')
local function series(seq0, gap)
  local to_host, back = {}, {}
  for i = 1, n do
    local seq = seq0 + i
    if gap > 0 then
      vim.wait(gap, function()
        return false
      end, gap)
    end
    local t0 = vim.uv.hrtime()
    host.notify('predict', 1, 1, seq, { 1, 9 }, 'hello wor', '', 'text')
    vim.wait(1000, function()
      return got[seq] ~= nil
    end, 0)
    local t1 = vim.uv.hrtime()
    local a = got[seq]
    if a then
      to_host[#to_host + 1] = st.clock_origin_us + a.t_recv - t0 / 1000
      back[#back + 1] = (t1 - t0) / 1000 - (a.t_done - a.t_recv)
    end
  end
  return stats.summary(to_host), stats.summary(back)
end
local function line(name, s)
  return string.format(
    '%-44s n=%d p50 %.0f p90 %.0f p99 %.0f max %.0f µs',
    name,
    s.n,
    s.p50_us,
    s.p90_us,
    s.p99_us,
    s.max_us
  )
end
local a1, a2 = series(1000000, 0)
local b1, b2 = series(2000000, gap_ms)
host.on_answer = on_answer
io.stdout:write(
  table.concat({
    line('back to back: sent -> host received', a1),
    line('back to back: round trip minus host work', a2),
    line(string.format('after %d ms idle: sent -> host received', gap_ms), b1),
    line(string.format('after %d ms idle: round trip minus host work', gap_ms), b2),
  }, '\n'),
  '\n'
)
vim.cmd('qa!')
