--- laya.highlight: the `LayaGhost` highlight of the ghost text.
---
--- Laya's own is grey and italic with both GUI and terminal (cterm)
--- attributes, so it differs from typed text with and without
--- 'termguicolors': a link to `Comment` alone is not enough, as colour
--- schemes (Neovim's default among them) may give `Comment` only a GUI
--- colour. A `LayaGhost` set by the user or the colour scheme is kept;
--- Laya's own is set again on every ColorScheme (to follow `Comment`).

local M = {}

M.group = 'LayaGhost'
--- Terminal grey (xterm 256 palette) when `Comment` has no terminal colour.
M.CTERM_GREY = 244
M.GUI_GREY = '#808080'

--- What Laya set last (as nvim_get_hl reads it back), to tell its own
--- definition from one somebody else made.
local ours = nil

local function get(name, link)
  local ok, hl = pcall(vim.api.nvim_get_hl, 0, { name = name, link = link })
  return ok and hl or {}
end

--- Laya's own definition for the current colour scheme.
function M.own()
  local comment = get('Comment', false)
  return {
    fg = comment.fg or M.GUI_GREY,
    ctermfg = comment.ctermfg or M.CTERM_GREY,
    italic = true,
    cterm = { italic = true },
  }
end

--- Defines `LayaGhost` unless somebody else has (ghost.highlight: a group
--- to link to, or false for Laya's own).
function M.define()
  local current = get(M.group, true)
  if not vim.tbl_isempty(current) and not vim.deep_equal(current, ours) then
    return
  end
  local link = require('laya.config').options.ghost.highlight
  vim.api.nvim_set_hl(0, M.group, link and { link = link } or M.own())
  ours = get(M.group, true)
end

--- Does `hl` (resolved, no links) look different from Normal text in the
--- current mode ('termguicolors' or not)? Returns a boolean and a reason.
function M.differs(hl, normal)
  local gui = vim.o.termguicolors
  local attrs = gui and hl or (hl.cterm or {})
  for _, a in ipairs({ 'italic', 'bold', 'underline', 'undercurl', 'strikethrough', 'reverse', 'standout' }) do
    if attrs[a] then
      return true, a
    end
  end
  local fg, normal_fg = hl.fg, normal.fg
  local bg, normal_bg = hl.bg, normal.bg
  if not gui then
    fg, normal_fg, bg, normal_bg = hl.ctermfg, normal.ctermfg, hl.ctermbg, normal.ctermbg
  end
  if fg ~= nil and fg ~= normal_fg then
    return true, 'colour'
  end
  if bg ~= nil and bg ~= normal_bg then
    return true, 'background'
  end
  return false,
    gui and 'no GUI colour or attribute that Normal text lacks'
      or "no terminal colour (ctermfg) or cterm attribute, and 'notermguicolors' is set"
end

--- For :checkhealth: is the ghost text distinguishable from typed text?
function M.distinguishable()
  return M.differs(get(M.group, false), get('Normal', false))
end

return M
