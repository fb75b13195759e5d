--- laya.bench.sample: the built-in text :LayaBench types (written for Laya:
--- plain prose, then a little code, so both kinds of context are exercised).

return [[
The river town wakes slowly in winter. Before the bakery opens, the only
light on the main street comes from the station, where the first train of
the day waits with its doors open and its engine humming. A few people walk
past with their hands in their pockets, and the baker sets out the chairs
one by one, as she has done every morning for twenty years.

Most of what happens here is small. A letter arrives a day late. A bicycle
gets a new chain. The school changes the time of the spring concert, and
everyone hears about it before the notice is printed. Nobody would call it
an exciting place, but people who leave tend to come back, and when they do
they say the same thing: it is good to be somewhere that keeps its promises.

In the afternoon the light turns yellow and the shadows of the bridge reach
across the water. Children race home along the path by the river, and the
old men at the corner table argue about the weather, the price of bread,
and whether the new road will ever be finished. It will be, someday. The
plans have been ready for years; only the money is missing.

When writing software it helps to keep the same habits. Make small changes,
test each one, and write down what you learned so that the next person does
not have to learn it again. A function should do one thing and say what it
does in its name. Errors should be clear enough that a tired reader at the
end of a long day can understand what went wrong and how to fix it.

local function count_words(text)
  local counts = {}
  for word in text:gmatch('[%a_][%w_]*') do
    counts[word] = (counts[word] or 0) + 1
  end
  return counts
end

local function top_words(counts, limit)
  local words = vim.tbl_keys(counts)
  table.sort(words, function(a, b)
    return counts[a] > counts[b]
  end)
  return vim.list_slice(words, 1, limit)
end

fn main() {
    let text = std::fs::read_to_string("notes.txt").unwrap_or_default();
    let words: Vec<&str> = text.split_whitespace().collect();
    println!("{} words in the notes", words.len());
}

By evening the train returns, the bakery closes, and the town settles into
its quiet routine again. The lamps along the river come on one after another,
and somewhere a radio plays an old song that everyone knows the words to.
]]
