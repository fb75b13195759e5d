--- laya.syntax: what kind of text the cursor is in, sent with each request
--- so the engine can prefer words in prose and identifiers in code:
--- 'prose' (a filetype in `prose_filetypes`), or in a code buffer
--- 'comment', 'string' or 'code'. Read from treesitter where the buffer is
--- highlighted by it, else from the syntax groups ('syntax' on), else 'code'.

local M = {}

--- Is `ft` written as prose (option `prose_filetypes`)?
function M.is_prose_filetype(ft)
  return vim.tbl_contains(require('laya.config').options.prose_filetypes, ft or '')
end

--- The kind of a highlight or node name: 'comment', 'string' or nil.
local function kind_of(name)
  name = name:lower()
  if name:find('comment', 1, true) then
    return 'comment'
  end
  if name:find('string', 1, true) or name:find('char', 1, true) then
    return 'string'
  end
  return nil
end

--- Treesitter: the captures at (row0, col) of an active highlighter.
local function from_treesitter(buf, row0, col)
  if not (vim.treesitter.highlighter and vim.treesitter.highlighter.active[buf]) then
    return nil
  end
  local ok, captures = pcall(vim.treesitter.get_captures_at_pos, buf, row0, col)
  if not ok then
    return nil
  end
  -- The innermost capture is last.
  for i = #captures, 1, -1 do
    local k = kind_of(captures[i].capture)
    if k then
      return k
    end
  end
  return 'code'
end

--- Syntax groups ('syntax' highlighting): the group at (row0, col).
local function from_syntax(buf, row0, col)
  if vim.b[buf].current_syntax == nil or buf ~= vim.api.nvim_get_current_buf() then
    return nil
  end
  local id = vim.fn.synID(row0 + 1, col + 1, 1)
  if id == 0 then
    return 'code'
  end
  return kind_of(vim.fn.synIDattr(vim.fn.synIDtrans(id), 'name')) or kind_of(vim.fn.synIDattr(id, 'name')) or 'code'
end

--- The kind of text at the cursor of buffer `buf` (`row` 1-based, `col` the
--- cursor's byte column; the character before it is what counts).
function M.at(buf, row, col, filetype)
  if M.is_prose_filetype(filetype) then
    return 'prose'
  end
  local c = math.max(col - 1, 0)
  return from_treesitter(buf, row - 1, c) or from_syntax(buf, row - 1, c) or 'code'
end

return M
