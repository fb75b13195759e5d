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

--- A histogram of `samples` (µs) over 1-2-5 steps (100, 200, 500 µs, 1 ms, …):
--- latencies span orders of magnitude (a fast p50, a slow tail), and equal
--- bins would put nearly everything in the first one.
--- Returns a list of { lo_us, hi_us, count }, from the bin of the fastest
--- sample to the bin of the slowest.
function M.histogram(samples)
  local s = M.summary(samples)
  if s.n == 0 then
    return {}
  end
  local edges = { 0 }
  local e = 1
  while e <= s.max_us do
    for _, m in ipairs({ 1, 2, 5 }) do
      edges[#edges + 1] = m * e
    end
    e = e * 10
  end
  edges[#edges + 1] = e
  local bins = {}
  for i = 1, #edges - 1 do
    bins[i] = { lo_us = edges[i], hi_us = edges[i + 1], count = 0 }
  end
  for _, x in ipairs(samples) do
    for _, b in ipairs(bins) do
      if x < b.hi_us then
        b.count = b.count + 1
        break
      end
    end
  end
  -- Drop the empty bins below the fastest and above the slowest sample.
  while bins[1] and bins[1].count == 0 do
    table.remove(bins, 1)
  end
  while bins[#bins] and bins[#bins].count == 0 do
    table.remove(bins)
  end
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
