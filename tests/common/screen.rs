//! A small screen model for the tests: the text of Neovim's grid 1, kept
//! from the `redraw` events of a UI attached with ext_linegrid.

use rmpv::Value;

#[derive(Default, Debug, Clone)]
pub struct Grid {
    pub width: usize,
    pub height: usize,
    cells: Vec<Vec<String>>,
}

impl Grid {
    fn resize(&mut self, width: usize, height: usize) {
        self.width = width;
        self.height = height;
        self.cells = vec![vec![" ".to_string(); width]; height];
    }

    fn clear(&mut self) {
        let (w, h) = (self.width, self.height);
        self.resize(w, h);
    }

    /// The text of screen row `row` (trailing spaces removed).
    pub fn line(&self, row: usize) -> String {
        self.cells
            .get(row)
            .map(|r| r.concat().trim_end().to_string())
            .unwrap_or_default()
    }

    pub fn text(&self) -> String {
        (0..self.height)
            .map(|r| self.line(r))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn put_line(&mut self, row: usize, col: usize, cells: &[Value]) {
        let Some(line) = self.cells.get_mut(row) else {
            return;
        };
        let mut col = col;
        for cell in cells {
            let Some(c) = cell.as_array() else { continue };
            let text = c.first().and_then(Value::as_str).unwrap_or("").to_string();
            let repeat = c.get(2).and_then(Value::as_u64).unwrap_or(1) as usize;
            for _ in 0..repeat {
                if col < line.len() {
                    line[col] = text.clone();
                }
                col += 1;
            }
        }
    }

    fn scroll(&mut self, top: usize, bot: usize, left: usize, right: usize, rows: i64) {
        let copy = |g: &mut Grid, to: usize, from: usize| {
            for c in left..right.min(g.width) {
                let v = g.cells[from][c].clone();
                g.cells[to][c] = v;
            }
        };
        if rows > 0 {
            let rows = rows as usize;
            for r in top..bot.saturating_sub(rows) {
                copy(self, r, r + rows);
            }
        } else {
            let rows = (-rows) as usize;
            for r in (top + rows..bot).rev() {
                copy(self, r, r - rows);
            }
        }
    }

    /// Applies one `redraw` notification (a batch of events).
    pub fn apply(&mut self, events: &[Value]) {
        for event in events {
            let Some(ev) = event.as_array() else { continue };
            let Some(name) = ev.first().and_then(Value::as_str) else {
                continue;
            };
            for args in &ev[1..] {
                let Some(a) = args.as_array() else { continue };
                let n = |i: usize| a.get(i).and_then(Value::as_i64).unwrap_or(0);
                match name {
                    "grid_resize" if n(0) == 1 => self.resize(n(1) as usize, n(2) as usize),
                    "grid_clear" if n(0) == 1 => self.clear(),
                    "grid_line" if n(0) == 1 => {
                        if let Some(cells) = a.get(3).and_then(Value::as_array) {
                            self.put_line(n(1) as usize, n(2) as usize, cells);
                        }
                    }
                    "grid_scroll" if n(0) == 1 => self.scroll(
                        n(1) as usize,
                        n(2) as usize,
                        n(3) as usize,
                        n(4) as usize,
                        n(5),
                    ),
                    _ => {}
                }
            }
        }
    }
}
