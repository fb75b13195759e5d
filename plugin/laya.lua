-- Laya's entry point: the :Laya command and a one-shot InsertEnter hook.
-- Nothing is required here at startup; the host starts on first InsertEnter.
-- It also generates the help tags of a clone that has none.

if vim.g.loaded_laya then
  return
end
vim.g.loaded_laya = 1

-- :help laya from a plain clone: generate doc/tags when it is missing or
-- older than the help file (two stat calls; nothing when the folder is
-- read-only, where the plugin manager's own helptags are what counts).
do
  local doc = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h') .. '/doc'
  if vim.fn.getftime(doc .. '/tags') < vim.fn.getftime(doc .. '/laya.txt') then
    pcall(vim.cmd.helptags, { args = { doc }, mods = { silent = true, emsg_silent = true } })
  end
end

vim.api.nvim_create_user_command('Laya', function(cmd)
  require('laya.commands').run(cmd.fargs)
end, {
  nargs = '*',
  desc = 'Laya: status | enable | disable | toggle | log | learn [path] | forget [word]',
  complete = function(arglead)
    return require('laya.commands').complete(arglead)
  end,
})

vim.api.nvim_create_user_command('LayaBench', function(cmd)
  require('laya.bench').command(cmd.fargs)
end, {
  nargs = '*',
  complete = 'file',
  desc = 'Laya: replay typing and measure keystroke → ghost text latency ([path.json] [rate=MS] [keys=N] [text=buffer])',
})

vim.api.nvim_create_autocmd('InsertEnter', {
  group = vim.api.nvim_create_augroup('laya_lazy', { clear = true }),
  once = true,
  callback = function()
    require('laya').ensure_setup()
  end,
})
