--- The soak's driver, run inside a real headless Neovim with Laya and the
--- real host (benches/soak.py and benches/many_editors.py start it):
---
---   nvim --headless --clean -u scripts/minimal_init.lua -c 'luafile benches/soak/driver.lua'
---
--- It types text as Insert-mode keys the way :LayaBench does (a timer feeds
--- one key per `rate` ms with feedkeys 'nt' while `feedkeys(cmd, 'nx!')`
--- holds Insert mode, so InsertCharPre / TextChangedI run as for a user),
--- in segments: at the end of a buffer or after a jump to a random place,
--- in several buffers (prose, code, non-ASCII prose, a 50 MB buffer), with
--- undo/redo, large pastes in Insert mode and buffer switches in between.
--- A mirror of every buffer's lines says what the buffer must hold; after
--- each segment and at the end the buffers are compared with it.
---
--- Settings come from the environment (SOAK_*, see `cfg` below); the
--- results are written as JSON to SOAK_OUT.

local hrtime = vim.uv.hrtime
local env = vim.env

local cfg = {
  out = env.SOAK_OUT or 'soak.json',
  -- 'soak': the full plan; 'type': only typing at the end of one buffer
  -- (the many-editors run).
  plan = env.SOAK_PLAN or 'soak',
  keys = tonumber(env.SOAK_KEYS or '100000'),
  rate_ms = tonumber(env.SOAK_RATE_MS or '12'),
  big_mb = tonumber(env.SOAK_BIG_MB or '50'),
  -- Keys between two large pastes (0: none) and the paste's size.
  paste_every = tonumber(env.SOAK_PASTE_EVERY or '4000'),
  paste_kb = tonumber(env.SOAK_PASTE_KB or '256'),
  seed = tonumber(env.SOAK_SEED or '1'),
  data = env.SOAK_DATA or 'tests/data',
  intl = env.SOAK_INTL or 'benches/soak/intl.txt',
  -- Keys per memory sample.
  sample_every = tonumber(env.SOAK_SAMPLE_EVERY or '1000'),
  -- A file written with the host's pid once it is ready, and a file to
  -- wait for before typing (several instances start typing together).
  ready_file = env.SOAK_READY_FILE,
  go_file = env.SOAK_GO_FILE,
  -- Key number N is counted but not typed: shows that a lost keystroke is
  -- caught (the soak must then report it).
  lose_key = tonumber(env.SOAK_LOSE_KEY or '0'),
  -- A line per segment is appended here (what it does, keys so far).
  progress = env.SOAK_PROGRESS,
}

local R = {
  config = cfg,
  segments = 0,
  jumps = 0,
  switches = 0,
  undos = 0,
  redos = 0,
  pastes = 0,
  -- Ticks a paste waited for the keys before it to leave the typeahead.
  paste_waits = 0,
  pasted_bytes = 0,
  mismatches = {},
  lat_us = {},
  samples = {},
  host_pids = {},
}

local function read_file(path)
  local f = assert(io.open(path, 'rb'), 'cannot read ' .. path)
  local s = f:read('*a')
  f:close()
  return s
end

local function rss_kb(pid, field)
  local f = pid and io.open('/proc/' .. pid .. '/status', 'r')
  if not f then
    return nil
  end
  local s = f:read('*a')
  f:close()
  return tonumber(s:match((field or 'VmRSS') .. ':%s*(%d+)'))
end

--- The keys of `text`: one per UTF-8 character; newline is <CR>, and other
--- control characters (form feeds in the held-out text) become spaces.
local function chars_of(text)
  local out = {}
  for ch in text:gsub('\r\n', '\n'):gmatch('[%z\1-\127\194-\244][\128-\191]*') do
    if ch == '\n' then
      out[#out + 1] = '\r'
    elseif ch ~= '\t' and #ch == 1 and (ch:byte() < 32 or ch:byte() == 127) then
      out[#out + 1] = ' '
    else
      out[#out + 1] = ch
    end
  end
  return out
end

--- What typing `keys` inserts, as text.
local function text_of(keys)
  return (table.concat(keys):gsub('\r', '\n'))
end

-- The mirror: per buffer, the lines it must hold.
local mirror = {}

--- Inserts `text` into the mirror of `buf` at (row 1-based, byte col).
local function mirror_insert(buf, row, col, text)
  local lines = mirror[buf]
  local line = lines[row] or ''
  local pre, post = line:sub(1, col), line:sub(col + 1)
  local parts = vim.split(text, '\n', { plain = true })
  parts[1] = pre .. parts[1]
  parts[#parts] = parts[#parts] .. post
  lines[row] = parts[1]
  if #parts > 1 then
    -- Shift once instead of one table.insert per line (the 50 MB buffer).
    local n, extra = #lines, #parts - 1
    table.move(lines, row + 1, n, row + 1 + extra)
    for i = 2, #parts do
      lines[row + i - 1] = parts[i]
    end
  end
  return row + #parts - 1
end

local function mirror_copy_rows(buf, first, last)
  local t = {}
  for i = first, last do
    t[#t + 1] = mirror[buf][i]
  end
  return t
end

--- Compares rows first..last of `buf` with the mirror; records a mismatch,
--- then takes the buffer's text as the mirror (so one mismatch is counted
--- once, not again in every later check of that buffer).
local function check_rows(buf, first, last, what)
  local got = vim.api.nvim_buf_get_lines(buf, first - 1, last, false)
  local want = mirror_copy_rows(buf, first, last)
  for i = 1, math.max(#got, #want) do
    if got[i] ~= want[i] then
      R.mismatches[#R.mismatches + 1] = {
        what = what,
        row = first + i - 1,
        got = (got[i] or '<none>'):sub(1, 200),
        want = (want[i] or '<none>'):sub(1, 200),
        got_bytes = #(got[i] or ''),
        want_bytes = #(want[i] or ''),
      }
      mirror[buf] = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
      return false
    end
  end
  return true
end

--- The buffers' text: each a stream of keys typed in turn, from where the
--- last segment stopped.
local streams = {}

local function new_buffer(name, filetype, lines)
  local buf = vim.api.nvim_create_buf(true, false)
  vim.api.nvim_set_current_buf(buf)
  local bo = vim.bo[buf]
  bo.buftype = 'nofile'
  bo.swapfile = false
  bo.undolevels = -1
  vim.api.nvim_buf_set_name(buf, 'soak://' .. name)
  bo.filetype = filetype
  -- After the filetype plugin: nothing may rewrite what is typed.
  bo.textwidth = 0
  bo.autoindent = false
  bo.smartindent = false
  bo.cindent = false
  bo.indentexpr = ''
  bo.indentkeys = ''
  bo.cinkeys = ''
  bo.formatoptions = ''
  bo.expandtab = false
  bo.softtabstop = 0
  bo.lisp = false
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines or { '' })
  -- Undo from here on (the initial text is not undoable).
  bo.undolevels = 1000
  mirror[buf] = lines and vim.list_extend({}, lines) or { '' }
  return buf
end

local function switch_to(buf)
  if vim.api.nvim_get_current_buf() ~= buf then
    vim.cmd('buffer ' .. buf)
    R.switches = R.switches + 1
  end
end

--- The run's typing state: keys fed, their times, the answers shown.
local run = { typed = 0, key_ns = {} }

local host = require('laya.host')

--- Per-key records, filled up front so the driver's own memory does not
--- grow while the keys are typed (Neovim's RSS is measured).
local function preallocate(n)
  for k = 1, n do
    run.key_ns[k] = 0
    R.lat_us[k] = -1
  end
end

local function on_shown(t)
  if not t.sent_ns then
    return
  end
  local k = run.typed
  while k > 0 and run.key_ns[k] and run.key_ns[k] > t.sent_ns do
    k = k - 1
  end
  if k > 0 and run.key_ns[k] and R.lat_us[k] < 0 then
    R.lat_us[k] = math.floor((t.shown_ns - run.key_ns[k]) / 1000)
  end
end

local function status()
  local st = host.request('status')
  if type(st) ~= 'table' then
    return nil
  end
  return st
end

local function note_host()
  local pid = host.pid
  if pid and R.host_pids[#R.host_pids] ~= pid then
    R.host_pids[#R.host_pids + 1] = pid
  end
  return pid
end

local function sample()
  local pid = note_host()
  local st = status()
  R.samples[#R.samples + 1] = {
    keys = run.typed,
    t_s = (hrtime() - run.t0) / 1e9,
    host_pid = pid,
    host_rss_kb = rss_kb(pid),
    nvim_rss_kb = rss_kb(vim.fn.getpid()),
    counters = st and st.counters or nil,
    memory = st and st.memory or nil,
  }
end

--- Enters Insert mode with `cmd` ('A', 'i', 'o') and types `keys`, one per
--- rate_ms; at key index `paste_at` (if any) pastes `paste` instead, the way
--- a terminal's bracketed paste arrives (nvim_paste).
local function type_keys(cmd, keys, paste_at, paste)
  local timer = assert(vim.uv.new_timer())
  local finished = false
  local i = 0
  local slot_ns = cfg.rate_ms * 1e6
  local start_ns = hrtime()
  local ticks = 0
  local waited = 0
  local function finish()
    if not finished then
      finished = true
      vim.api.nvim_feedkeys('\27', 'n', false)
    end
  end
  local schedule
  local function step()
    if finished then
      return
    end
    if not vim.fn.mode():find('^i') then
      R.aborted = 'Insert mode was left at key ' .. run.typed
      return finish()
    end
    if paste_at and i == paste_at and waited < 100 and vim.fn.getchar(1) ~= 0 then
      -- nvim_paste goes in at once, ahead of keys still in the typeahead
      -- (a terminal's paste comes after them): wait until they are in.
      waited = waited + 1
      R.paste_waits = R.paste_waits + 1
    elseif paste_at and i == paste_at then
      paste_at = nil
      vim.api.nvim_paste(paste, false, -1)
    elseif i >= #keys then
      return finish()
    else
      i = i + 1
      run.typed = run.typed + 1
      run.key_ns[run.typed] = hrtime()
      if run.typed == cfg.lose_key then
        ticks = ticks + 1
        return schedule()
      end
      -- escape_ks: UTF-8 bytes 0x80 (in — ’ À …) are not key codes.
      vim.api.nvim_feedkeys(keys[i], 'nt', true)
    end
    ticks = ticks + 1
    schedule()
  end
  -- Fixed deadlines: a slow callback does not slow the rate down.
  schedule = function()
    local due = start_ns + ticks * slot_ns
    local delay = math.max(0, math.floor((due - hrtime()) / 1e6 + 0.5))
    timer:start(delay, 0, function()
      vim.schedule(step)
    end)
  end
  schedule()
  local ok, err = pcall(vim.api.nvim_feedkeys, cmd, 'nx!', false)
  finished = true
  timer:stop()
  timer:close()
  if not ok then
    error(err, 0)
  end
end

--- Takes `n` keys from the stream of `buf`.
local function take(buf, n)
  local s = streams[buf]
  local keys = {}
  for j = 1, n do
    keys[j] = s.chars[s.pos]
    s.pos = s.pos % #s.chars + 1
  end
  return keys
end

--- A byte column at a character start on `line`, before its end.
local function char_col(line)
  if #line == 0 then
    return 0
  end
  local col = math.random(0, #line - 1)
  while col > 0 do
    local b = line:byte(col + 1)
    if b < 0x80 or b >= 0xC0 then
      break
    end
    col = col - 1
  end
  return col
end

--- One segment: `n` keys into `buf`, at its end or after a jump; with a
--- paste and an undo/redo when asked. Returns false when typing stopped.
local function segment(buf, n, opts)
  switch_to(buf)
  -- Each segment its own undo block, as when a user types commands
  -- (setting 'undolevels' closes the block: :help undo-break).
  vim.bo[buf].undolevels = vim.bo[buf].undolevels
  local lines = mirror[buf]
  local row, col, cmd
  if opts.jump then
    R.jumps = R.jumps + 1
    row = math.random(1, #lines)
    if math.random() < 0.5 or #lines[row] == 0 then
      -- A new line below a random one.
      table.insert(lines, row + 1, '')
      row, col, cmd = row + 1, 0, 'o'
      vim.api.nvim_win_set_cursor(0, { row - 1, 0 })
    else
      col = char_col(lines[row])
      cmd = 'i'
      vim.api.nvim_win_set_cursor(0, { row, col })
    end
  else
    row = #lines
    col = #lines[row]
    cmd = 'A'
    vim.api.nvim_win_set_cursor(0, { row, 0 })
  end
  local keys = take(buf, n)
  local paste_at, paste
  if opts.paste then
    paste_at = math.random(0, n)
    paste = opts.paste
  end
  -- The whole segment's text, in the order it goes in.
  local text
  if paste_at then
    local a = text_of(vim.list_slice(keys, 1, paste_at))
    local b = text_of(vim.list_slice(keys, paste_at + 1, n))
    text = a .. paste .. b
  else
    text = text_of(keys)
  end
  if cfg.progress then
    local f = io.open(cfg.progress, 'a')
    if f then
      f:write(
        string.format(
          '%d keys, segment %d: %s in %s at %d:%d, %d keys%s%s\n',
          run.typed,
          R.segments + 1,
          cmd,
          vim.api.nvim_buf_get_name(buf),
          row,
          col,
          n,
          paste_at and ', paste' or '',
          opts.undo and ', undo' or ''
        )
      )
      f:close()
    end
  end
  local before_rows = opts.undo and mirror_copy_rows(buf, row, row) or nil
  local before_len = #lines
  type_keys(cmd, keys, paste_at, paste)
  R.segments = R.segments + 1
  if paste_at then
    R.pastes = R.pastes + 1
    R.pasted_bytes = R.pasted_bytes + #paste
  end
  local last = mirror_insert(buf, row, col, text)
  if vim.fn.mode() ~= 'n' then
    R.aborted = R.aborted or ('not back in Normal mode after segment ' .. R.segments)
    return false
  end
  check_rows(buf, math.max(1, row - 1), math.min(#lines, last + 1), 'segment ' .. R.segments)
  lines = mirror[buf]
  if opts.undo then
    -- `u` takes back the whole Insert (one undo block), CTRL-R puts it back.
    vim.cmd('silent undo')
    R.undos = R.undos + 1
    local after = vim.api.nvim_buf_line_count(buf)
    local want_len = before_len - (cmd == 'o' and 1 or 0)
    local ok = after == want_len
    if ok and cmd ~= 'o' then
      ok = vim.api.nvim_buf_get_lines(buf, row - 1, row, false)[1] == before_rows[1]
    end
    if not ok then
      R.mismatches[#R.mismatches + 1] =
        { what = 'undo of segment ' .. R.segments, got_bytes = after, want_bytes = want_len }
    end
    vim.cmd('silent redo')
    R.redos = R.redos + 1
    check_rows(buf, math.max(1, row - 1), math.min(#mirror[buf], last + 1), 'redo of segment ' .. R.segments)
  end
  return R.aborted == nil
end

--- The 50 MB buffer: held-out prose lines repeated.
local function big_lines(mb, prose)
  local src = vim.split(prose, '\n', { plain = true })
  local lines, bytes, i = {}, 0, 0
  local limit = mb * 1024 * 1024
  while bytes < limit do
    i = i % #src + 1
    lines[#lines + 1] = src[i]
    bytes = bytes + #src[i] + 1
  end
  return lines
end

--- Compares every buffer with its mirror; returns the buffers that differ.
local function final_check(bufs)
  local differ = {}
  for name, buf in pairs(bufs) do
    local got = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    local want = mirror[buf]
    local same = #got == #want
    if same then
      for i = 1, #got do
        if got[i] ~= want[i] then
          same = false
          break
        end
      end
    end
    if not same then
      differ[#differ + 1] = name
      local gb, wb = 0, 0
      for _, l in ipairs(got) do
        gb = gb + #l + 1
      end
      for _, l in ipairs(want) do
        wb = wb + #l + 1
      end
      R.mismatches[#R.mismatches + 1] = { what = 'final ' .. name, got_bytes = gb, want_bytes = wb }
    end
  end
  return differ
end

local function write_results()
  R.messages = vim.api.nvim_exec2('messages', { output = true }).output
  R.errmsg = vim.v.errmsg
  R.lua_stats = vim.deepcopy(host.stats)
  R.machine = require('laya.bench.results').machine()
  R.typed = run.typed
  R.answered = 0
  -- Per key: µs from the key to its answer on screen, -1 for none.
  local lat = {}
  for k = 1, run.typed do
    lat[k] = R.lat_us[k] or -1
    if lat[k] >= 0 then
      R.answered = R.answered + 1
    end
  end
  R.lat_us = lat
  local f = assert(io.open(cfg.out, 'w'))
  f:write(vim.json.encode(R))
  f:close()
end

local function main()
  math.randomseed(cfg.seed)
  -- Neovim's default 'smarttab' turns a Tab at line start into 'shiftwidth'
  -- columns: what is typed must go in unchanged.
  vim.o.smarttab = false
  local laya = require('laya')
  laya.ensure_setup()
  require('laya.config').options.menu.auto = false
  local prose = read_file(cfg.data .. '/heldout-prose.txt')
  local bufs = {}
  bufs.prose = new_buffer('prose', 'text')
  streams[bufs.prose] = { chars = chars_of(prose), pos = 1 }
  if cfg.plan == 'soak' then
    bufs.code = new_buffer('code', 'rust')
    streams[bufs.code] = { chars = chars_of(read_file(cfg.data .. '/heldout-code.txt')), pos = 1 }
    bufs.intl = new_buffer('intl', 'markdown')
    streams[bufs.intl] = { chars = chars_of(read_file(cfg.intl)), pos = 1 }
    if cfg.big_mb > 0 then
      local t = hrtime()
      bufs.big = new_buffer('big', 'text', big_lines(cfg.big_mb, prose))
      R.big_load_s = (hrtime() - t) / 1e9
      R.big_lines = #mirror[bufs.big]
      -- Its stream starts elsewhere in the prose than the prose buffer's.
      local chars = streams[bufs.prose].chars
      streams[bufs.big] = { chars = chars, pos = math.floor(#chars / 3) + 1 }
    end
  else
    -- Each instance types its own part of the text.
    streams[bufs.prose].pos = (cfg.seed * 7919) % #streams[bufs.prose].chars + 1
  end
  switch_to(bufs.prose)
  if not laya.active(bufs.prose) then
    R.aborted = 'Laya is off in the soak buffers'
    return write_results()
  end
  -- Start the host and wait until its engine is ready.
  host.start()
  local ready = vim.wait(120000, function()
    local st = status()
    return st ~= nil and st.engine ~= nil and st.engine.ready == true
  end, 50)
  if not ready then
    R.aborted = 'the engine did not become ready within 120 s'
    return write_results()
  end
  note_host()
  if cfg.ready_file then
    local f = assert(io.open(cfg.ready_file, 'w'))
    f:write(tostring(host.pid) .. ' ' .. vim.fn.getpid() .. '\n')
    f:close()
  end
  if cfg.go_file then
    vim.wait(600000, function()
      return vim.uv.fs_stat(cfg.go_file) ~= nil
    end, 20)
  end
  preallocate(cfg.keys)
  table.insert(require('laya._bench').answer_observers, on_shown)
  local paste_text = prose
  while #paste_text < cfg.paste_kb * 1024 do
    paste_text = paste_text .. prose
  end
  -- Whole characters only, no control characters but newline and tab.
  paste_text = paste_text:sub(1, cfg.paste_kb * 1024):gsub('[\128-\255]+$', ''):gsub('[%z\1-\8\11-\31\127]', ' ')
  run.t0 = hrtime()
  sample()
  local next_sample = cfg.sample_every
  local next_paste = cfg.paste_every > 0 and cfg.paste_every or math.huge
  local names = { 'prose', 'code', 'intl', 'big' }
  local weights = { 0.35, 0.3, 0.25, 0.1 }
  local t_typing = hrtime()
  while run.typed < cfg.keys and not R.aborted do
    local n = math.min(math.random(40, 400), cfg.keys - run.typed)
    local ok
    if cfg.plan ~= 'soak' then
      ok = segment(bufs.prose, n, {})
    elseif run.typed >= next_paste then
      -- A large paste in a fresh buffer, typed around, undone and
      -- redone, then the buffer wiped (its memory goes back).
      next_paste = next_paste + cfg.paste_every
      local prev = vim.api.nvim_get_current_buf()
      local pb = new_buffer('paste-' .. R.pastes, 'markdown', { 'Notes:' })
      R.switches = R.switches + 1
      streams[pb] = streams[bufs.prose]
      ok = segment(pb, n, { paste = paste_text, undo = true })
      switch_to(prev)
      vim.cmd('bwipeout! ' .. pb)
      mirror[pb], streams[pb] = nil, nil
    else
      local r, name = math.random(), 'prose'
      for j, w in ipairs(weights) do
        if r < w then
          name = names[j]
          break
        end
        r = r - w
      end
      local buf = bufs[name] or bufs.prose
      ok = segment(buf, n, { jump = buf == bufs.big or math.random() < 0.3, undo = math.random() < 0.1 })
    end
    if not ok then
      break
    end
    if run.typed >= next_sample then
      sample()
      next_sample = (math.floor(run.typed / cfg.sample_every) + 1) * cfg.sample_every
    end
  end
  R.typing_s = (hrtime() - t_typing) / 1e9
  -- Let the last answers arrive, then the last sample.
  vim.wait(2000, function()
    return false
  end, 50)
  sample()
  R.differ = final_check(bufs)
  -- The last checks may have sent a keystroke's request that the host has
  -- not taken yet (a loaded machine): the end's counters are read once
  -- every request received is answered or superseded, or after 10 s.
  local st
  for _ = 1, 100 do
    st = status()
    local c = st and st.counters
    if c == nil or c.predict_answered + c.predict_superseded >= c.predict_received then
      break
    end
    vim.wait(100)
  end
  R.status_end = st
  write_results()
end

local ok, err = xpcall(main, debug.traceback)
if not ok then
  R.aborted = 'driver error: ' .. tostring(err)
  pcall(write_results)
end
vim.cmd('qa!')
