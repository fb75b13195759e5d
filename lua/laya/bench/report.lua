--- laya.bench.report: shows :LayaBench results — a floating window with the
--- stage table and an end-to-end histogram, a short summary for headless
--- runs — and writes them as JSON.

local M = {}
local H = {}
local stats = require('laya.bench.stats')

local function fmt_us(x)
  if x == nil then
    return '-'
  end
  if x >= 10000 then
    return string.format('%.1f ms', x / 1000)
  end
  return string.format('%.0f µs', x)
end

--- `s` right-aligned in `w` display cells (µ is one cell but two bytes).
local function lpad(s, w)
  return string.rep(' ', w - vim.fn.strdisplaywidth(s)) .. s
end

local function rpad(s, w)
  return s .. string.rep(' ', w - vim.fn.strdisplaywidth(s))
end

--- 100 µs, 2 ms, 50 ms: bin edges.
local function short_us(x)
  if x >= 1000 then
    return string.format('%g ms', x / 1000)
  end
  return string.format('%g µs', x)
end

local function row(name, s)
  if not s or s.n == 0 then
    return string.format('  %-20s %6s', name, 'n/a')
  end
  return string.format(
    '  %-20s %6d %s %s %s %s',
    name,
    s.n,
    lpad(fmt_us(s.p50_us), 9),
    lpad(fmt_us(s.p90_us), 9),
    lpad(fmt_us(s.p99_us), 9),
    lpad(fmt_us(s.max_us), 9)
  )
end

local function ratio(x)
  return x and string.format('%.2f×', x.p50) or '-'
end

--- A few lines: what ran, the ghost text and the answers against the ping
--- and echo floors.
function M.summary_lines(r)
  local lines = {
    string.format(
      'LayaBench: backend %s (%s), model %s (%s)',
      tostring(r.backend),
      tostring(r.device),
      r.model ~= vim.NIL and vim.fn.fnamemodify(r.model, ':t') or 'none',
      tostring(r.quantization)
    ),
    string.format(
      'keystroke → ghost text on screen: p50 %s, p99 %s (%d keys with ghost text, %s at once)',
      fmt_us(r.ghost_ready.p50_us),
      fmt_us(r.ghost_ready.p99_us),
      r.ghost_screen.ghost_keys,
      r.ghost_screen.ghost_keys > 0
          and string.format('%.0f%%', 100 * r.ghost_screen.ready_at_once / r.ghost_screen.ghost_keys)
        or '-'
    ),
    string.format(
      "keystroke → host's answer shown: p50 %s, p99 %s (n=%d of %d keys)",
      fmt_us(r.e2e.p50_us),
      fmt_us(r.e2e.p99_us),
      r.e2e.n or 0,
      r.keys_measured
    ),
    string.format(
      'ping floor: p50 %s, p99 %s; at p50, ghost text / ping %s, answer / ping %s',
      fmt_us(r.ping.p50_us),
      fmt_us(r.ping.p99_us),
      ratio(r.ratio_ghost_ready_to_ping),
      ratio(r.ratio_e2e_to_ping)
    ),
    string.format(
      'echo floor (no engine): p50 %s, p99 %s; at p50, ghost text / echo %s, answer / echo %s',
      fmt_us(r.echo.p50_us),
      fmt_us(r.echo.p99_us),
      ratio(r.ratio_ghost_ready_to_echo),
      ratio(r.ratio_e2e_to_echo)
    ),
  }
  if r.aborted then
    lines[#lines + 1] = 'aborted: ' .. r.aborted
  end
  if r.model_error ~= vim.NIL then
    lines[#lines + 1] = 'model error: ' .. r.model_error
  end
  return lines
end

--- Appends a titled histogram in unicode bars to `lines`.
function H.histogram(lines, title, bins)
  table.insert(lines, '')
  table.insert(lines, title)
  local max = 0
  for _, b in ipairs(bins) do
    max = math.max(max, b.count)
  end
  for _, b in ipairs(bins) do
    local label = lpad(short_us(b.lo_us), 6) .. ' – ' .. rpad(short_us(b.hi_us), 6)
    table.insert(lines, string.format('  %s %5d %s', label, b.count, stats.bar(b.count, max, 40)))
  end
end

--- The full report, as lines for the floating window.
function M.lines(r)
  local lines = M.summary_lines(r)
  table.insert(lines, '')
  table.insert(lines, string.format('machine: %s, %d cores; clock %s', r.machine.cpu, r.machine.nproc, r.clock_sync))
  table.insert(
    lines,
    string.format(
      'replay: %d keys at %d ms/key (%.0f keys/s), text %s; capacity %s keys/s at the mean e2e',
      r.keys_typed,
      r.rate_ms,
      r.keystrokes_per_s or 0,
      r.text,
      tostring(r.capacity_keys_per_s or '?')
    )
  )
  table.insert(
    lines,
    string.format(
      'ghost text at once: from the answer worked out in advance (%d keys) or trimmed; then replaced by the answer %d, withdrawn %d',
      r.ghost_screen.ready_at_once,
      r.ghost_screen.replaced,
      r.ghost_screen.withdrawn
    )
  )
  table.insert(
    lines,
    string.format(
      'RSS: Neovim %s MB, host %s MB; answers shown %d, missed %d, with ghost text %d',
      string.format('%.1f', r.rss_kb.nvim / 1024),
      r.rss_kb.host and string.format('%.1f', r.rss_kb.host / 1024) or '?',
      r.answered,
      r.missed,
      r.with_ghost_text
    )
  )
  table.insert(lines, '')
  table.insert(lines, string.format('  %-20s %6s %9s %9s %9s %9s', 'stage', 'n', 'p50', 'p90', 'p99', 'max'))
  for _, name in ipairs(r.stage_order) do
    table.insert(lines, row(name, r.stages[name]))
  end
  table.insert(lines, row('= e2e (answer)', r.e2e))
  table.insert(lines, row('ghost text on screen', r.ghost_ready))
  table.insert(lines, row('  at once', r.ghost_at_once))
  table.insert(lines, row('  answer, same keys', r.e2e_ghost))
  table.insert(lines, row('ping floor', r.ping))
  table.insert(lines, row('echo floor', r.echo))
  table.insert(lines, row('host total', r.host_total))
  table.insert(lines, row('decision: in a word', r.decision_by_key.word_char))
  table.insert(lines, row('decision: word end', r.decision_by_key.boundary))
  H.histogram(lines, 'keystroke → ghost text on screen:', r.histogram_ghost_ready)
  H.histogram(lines, "keystroke → host's answer shown:", r.histogram)
  table.insert(lines, '')
  table.insert(lines, 'q / <Esc> closes')
  return lines
end

--- Opens the report in a centered floating window.
function M.open(r)
  local lines = M.lines(r)
  local width = 20
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l))
  end
  width = math.min(width + 2, vim.o.columns - 4)
  -- The editor area between the tab line and the status line / command
  -- line; the float and its border (2 rows) stay inside it.
  local top = (vim.o.showtabline == 2 or (vim.o.showtabline == 1 and #vim.api.nvim_list_tabpages() > 1)) and 1 or 0
  local bottom = vim.o.cmdheight + (vim.o.laststatus > 0 and 1 or 0)
  local room = vim.o.lines - top - bottom
  local height = math.max(1, math.min(#lines, room - 2))
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = 'wipe'
  local win = vim.api.nvim_open_win(buf, true, {
    relative = 'editor',
    width = width,
    height = height,
    row = top + math.floor((room - height - 2) / 2),
    col = math.floor((vim.o.columns - width) / 2),
    style = 'minimal',
    border = 'rounded',
    title = ' LayaBench ',
    title_pos = 'center',
  })
  for _, key in ipairs({ 'q', '<Esc>' }) do
    vim.keymap.set('n', key, function()
      pcall(vim.api.nvim_win_close, win, true)
    end, { buffer = buf, nowait = true })
  end
  return win, buf
end

--- Writes the results as JSON to `path`; true or false, error.
function M.write_json(r, path)
  local ok, json = pcall(vim.json.encode, r)
  if not ok then
    return false, json
  end
  local f, err = io.open(vim.fn.expand(path), 'w')
  if not f then
    return false, err
  end
  f:write(json, '\n')
  f:close()
  return true
end

return M
