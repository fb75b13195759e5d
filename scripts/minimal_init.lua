-- Neovim with only Laya (used by scripts/try.sh and the tests):
--   nvim --clean -u scripts/minimal_init.lua
-- LAYA_HOST / LAYA_MODEL override the host binary / model paths.
local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')
vim.opt.runtimepath:prepend(root)
vim.cmd('runtime plugin/laya.lua')
local host = {}
if vim.env.LAYA_HOST and vim.env.LAYA_HOST ~= '' then
  host.path = vim.env.LAYA_HOST
end
if vim.env.LAYA_MODEL and vim.env.LAYA_MODEL ~= '' then
  host.model = vim.env.LAYA_MODEL
end
require('laya').setup({ host = host, log_level = vim.env.LAYA_LOG_LEVEL or 'info' })
