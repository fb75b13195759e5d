--- laya.bench.stats: percentiles and histograms over latency samples (µs),
--- the numbers :LayaBench writes to JSON and draws in its report.

local M = {}

local function round1(x)
  return math.floor(x * 10 + 0.5) / 10
end

--- Summary of `samples` (µs): n, min, mean, p50/p90/p99 (nearest rank on the
--- sorted samples, like the host's own `status` latency) and max.
function M.summary(samples)
  local v = {}
  for i, x in ipairs(samples) do
    v[i] = x
  end
  table.sort(v)
  local n = #v
  if n == 0 then
    return { n = 0 }
  end
  local function at(q)
    return round1(v[math.floor((n - 1) * q + 0.5) + 1])
  end
  local sum = 0
  for _, x in ipairs(v) do
    sum = sum + x
  end
  return {
    n = n,
    min_us = round1(v[1]),
    mean_us = round1(sum / n),
    p50_us = at(0.5),
    p90_us = at(0.9),
    p99_us = at(0.99),
    max_us = round1(v[n]),
  }
end

--- A histogram of `samples` in `buckets` equal bins from 0 up to a little
--- past the p99, with one last open bin for the tail.
--- Returns a list of { lo_us, hi_us (nil = open), count }.
function M.histogram(samples, buckets)
  buckets = buckets or 12
  local s = M.summary(samples)
  if s.n == 0 then
    return {}
  end
  local top = math.max(s.p99_us * 1.25, 1)
  -- A round bin width (1, 2, 5 × 10^k µs) keeps the labels readable.
  local raw = top / buckets
  local mag = 10 ^ math.floor(math.log10(raw))
  local width = mag
  for _, m in ipairs({ 1, 2, 5, 10 }) do
    if m * mag >= raw then
      width = m * mag
      break
    end
  end
  local bins = {}
  for i = 1, buckets do
    bins[i] = { lo_us = (i - 1) * width, hi_us = i * width, count = 0 }
  end
  local tail = { lo_us = buckets * width, count = 0 }
  for _, x in ipairs(samples) do
    local i = math.floor(x / width) + 1
    if i <= buckets then
      bins[i].count = bins[i].count + 1
    else
      tail.count = tail.count + 1
    end
  end
  bins[#bins + 1] = tail
  return bins
end

local EIGHTHS = { '', '▏', '▎', '▍', '▌', '▋', '▊', '▉' }

--- A horizontal bar of `value / max` of `width` cells, in eighth blocks.
function M.bar(value, max, width)
  if max <= 0 or value <= 0 then
    return ''
  end
  local eighths = math.floor(value / max * width * 8 + 0.5)
  if eighths == 0 then
    eighths = 1 -- a non-empty bin always shows
  end
  return string.rep('█', math.floor(eighths / 8)) .. EIGHTHS[eighths % 8 + 1]
end

return M
