--- laya.health: `:checkhealth laya` — Neovim version, the host binary and
--- its version, the model file, and (when running) backend and latency.

local M = {}

function M.check()
  local h = vim.health
  local laya = require('laya')
  local o = require('laya.config').options
  h.start('laya')
  if vim.fn.has('nvim-0.10') == 1 then
    h.ok('Neovim ' .. tostring(vim.version()) .. ' (inline ghost text needs 0.10+)')
  else
    h.error('Neovim 0.10 or newer is needed (inline virtual text)')
  end

  if vim.fn.executable(o.host.path) ~= 1 then
    h.error('host binary not found: ' .. o.host.path, {
      'Build it: cargo build --release (in ' .. require('laya.config').root .. ')',
      'or set host.path in setup()',
    })
  else
    local res = vim.system({ o.host.path, 'serve', '--version' }, { text = true }):wait(5000)
    local version = (res.stdout or ''):match('laya%s+(%S+)')
    if res.code ~= 0 or not version then
      h.error(
        string.format('%s serve --version failed (exit %s): %s', o.host.path, tostring(res.code), res.stderr or '')
      )
    elseif version ~= laya.version then
      h.warn(
        string.format('host %s is version %s, the plugin is %s', o.host.path, version, laya.version),
        { 'Rebuild the host: cargo build --release' }
      )
    else
      h.ok(string.format('host %s, version %s (matches the plugin)', o.host.path, version))
    end
  end

  local models, seen = { o.host.model }, {}
  for _, model in pairs(o.host.filetype_models) do
    models[#models + 1] = model
  end
  for _, model in ipairs(models) do
    if model and not seen[model] then
      seen[model] = true
      if vim.fn.filereadable(model) == 1 then
        h.ok('model ' .. model)
      else
        h.warn('model file not found: ' .. model, { 'Only the word sources (buffer words, word list) will predict' })
      end
    end
  end
  local by_model = require('laya.commands').filetypes_by_model()
  if by_model ~= '' then
    h.info('models by filetype: ' .. by_model)
  end

  local differs, why = require('laya.highlight').distinguishable()
  if differs then
    h.ok('ghost text highlight LayaGhost differs from normal text (' .. why .. ')')
  else
    h.warn('ghost text would look like typed text: LayaGhost has ' .. why, {
      'Give LayaGhost a terminal colour, e.g. :hi LayaGhost ctermfg=244 cterm=italic',
      "or set 'termguicolors' if your terminal has true colour",
      "or set ghost.highlight = false in setup() for Laya's own grey italic",
    })
  end

  local learn = require('laya.learn')
  if not learn.enabled() then
    h.info('learning is off (learn = false)')
  else
    local dir = o.learn.dir
    local store = dir .. '/personal.bin'
    local st = vim.uv.fs_stat(store)
    local dst = vim.uv.fs_stat(dir)
    local function mode(s)
      return s and string.format('%o', bit.band(s.mode, 511)) or '-'
    end
    if st then
      local msg = string.format(
        'personal store %s: %.1f KB, permissions dir %s file %s',
        store,
        st.size / 1024,
        mode(dst),
        mode(st)
      )
      if mode(dst) ~= '700' or mode(st) ~= '600' then
        h.warn(msg, { 'chmod 700 ' .. dir .. ' and chmod 600 ' .. store })
      else
        h.ok(msg)
      end
    else
      h.info('personal store ' .. store .. ' (not written yet)')
    end
  end

  local host = require('laya.host')
  if not host.running() then
    h.info(
      laya.is_enabled() and 'host not running (it starts on the next InsertEnter)'
        or 'host not running: Laya is disabled (:Laya enable)'
    )
    return
  end
  local st, err = host.request('status')
  if not st then
    h.error('host pid ' .. tostring(host.pid) .. ' does not answer: ' .. tostring(err))
    return
  end
  local e, l = st.engine or {}, st.latency or {}
  h.ok(string.format('host running: pid %d, up %.1f s', st.pid, st.uptime_ms / 1000))
  if e.ready then
    h.ok(string.format('backend %s (%s), model %s', e.backend, e.device, tostring(e.model)))
    -- The host's typed load error: what failed, and what to do about it.
    local function advice(kind)
      local a = e[kind .. '_advice']
      return (a and a ~= vim.NIL) and { a } or nil
    end
    if e.model_error and e.model_error ~= vim.NIL then
      h.warn('model not loaded: ' .. tostring(e.model_error), advice('model_error'))
    end
    if e.backend_error and e.backend_error ~= vim.NIL then
      h.warn('backend not used: ' .. tostring(e.backend_error), advice('backend_error'))
    end
    if e.words_error and e.words_error ~= vim.NIL then
      h.warn('word list not loaded: ' .. tostring(e.words_error), advice('words_error'))
    elseif e.words and e.words ~= vim.NIL then
      h.ok(string.format('word list %s (%d words beyond the vocabulary)', e.words, e.words_count or 0))
    end
    if e.kinds_error and e.kinds_error ~= vim.NIL then
      h.warn('kinds file not loaded: ' .. tostring(e.kinds_error), advice('kinds_error'))
    elseif e.kinds and e.kinds ~= vim.NIL then
      h.ok(string.format('kinds file %s (where %d words are written)', e.kinds, e.kinds_count or 0))
    end
  else
    h.info('engine still loading')
  end
  for _, line in ipairs(learn.status_lines(st)) do
    if line:find('problem') then
      h.warn(line)
    else
      h.info(line)
    end
  end
  if (l.n or 0) > 0 then
    h.ok(string.format('recent latency in the host (n=%d): p50 %d µs, p99 %d µs', l.n, l.p50_us, l.p99_us))
  else
    h.info('no predictions yet')
  end
end

return M
