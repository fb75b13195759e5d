--- laya.syntax: what kind of text the cursor is in, sent with each request
--- so the engine can prefer words in prose and identifiers in code:
--- 'prose' (a filetype in `prose_filetypes`), or in a code buffer
--- 'comment', 'string' or 'code'. Read from treesitter where the buffer is
--- highlighted by it, else from the syntax groups ('syntax' on), else 'code'.
--- Code set in prose (a fenced block or inline code in Markdown) is code.

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

--- Treesitter's capture names at (row0, col), innermost last; nil where no
--- highlighter is active (or it cannot tell).
local function captures(buf, row0, col)
  if not (vim.treesitter.highlighter and vim.treesitter.highlighter.active[buf]) then
    return nil
  end
  local ok, found = pcall(vim.treesitter.get_captures_at_pos, buf, row0, col)
  if not ok then
    return nil
  end
  return vim.tbl_map(function(c)
    return c.capture
  end, found)
end

--- The kind of the innermost name (last) that has one: 'comment', 'string' or nil.
local function innermost_kind(names)
  for i = #names, 1, -1 do
    local k = kind_of(names[i])
    if k then
      return k
    end
  end
  return nil
end

--- Treesitter: the captures at (row0, col) of an active highlighter.
local function from_treesitter(buf, row0, col)
  local names = captures(buf, row0, col)
  return names and (innermost_kind(names) or 'code')
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

--- Is a highlight or node name one of code set in prose (treesitter's
--- `markup.raw`, `markup.raw.block`; syntax groups such as `markdownCode`,
--- `markdownCodeBlock`)?
local function is_raw(name)
  name = name:lower()
  return name:find('raw', 1, true) ~= nil or name:find('code', 1, true) ~= nil
end

--- The names highlighting gives (row0, col) of a prose buffer, innermost
--- last: treesitter's captures where it highlights, else the syntax stack.
local function names_in_prose(buf, row0, col)
  local names = captures(buf, row0, col)
  if names then
    return names
  end
  if vim.b[buf].current_syntax == nil or buf ~= vim.api.nvim_get_current_buf() then
    return {}
  end
  return vim.tbl_map(function(id)
    return vim.fn.synIDattr(id, 'name')
  end, vim.fn.synstack(row0 + 1, col + 1))
end

--- In a prose buffer: 'prose', or inside code set in it 'code' (its
--- comments and strings 'comment' and 'string').
local function in_prose(buf, row0, col)
  local names = names_in_prose(buf, row0, col)
  if not vim.iter(names):any(is_raw) then
    return 'prose'
  end
  return innermost_kind(names) or 'code'
end

--- The kind of text at the cursor of buffer `buf` (`row` 1-based, `col` the
--- cursor's byte column; the character before it is what counts).
function M.at(buf, row, col, filetype)
  buf = buf == 0 and vim.api.nvim_get_current_buf() or buf
  local c = math.max(col - 1, 0)
  if M.is_prose_filetype(filetype) then
    return in_prose(buf, row - 1, c)
  end
  return from_treesitter(buf, row - 1, c) or from_syntax(buf, row - 1, c) or 'code'
end

return M
