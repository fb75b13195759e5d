//! Small numeric helpers shared by the text layer, the engine and the CLI
//! (the model's kernels, which need the CPU's vector units, are in
//! `model::kernels`).

/// The number of leading `n` in 0..len for which `pred` holds (it holds
/// for a prefix of 0..len and not after).
pub fn partition(len: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Keeps the `n` best (id, score) pairs, best first.
pub fn push_top(top: &mut Vec<(u32, f32)>, item: (u32, f32), n: usize) {
    if top.len() == n && top.last().is_some_and(|l| l.1 >= item.1) {
        return;
    }
    let at = top.partition_point(|x| x.1 >= item.1);
    top.insert(at, item);
    top.truncate(n);
}

/// The index and value of the largest element (the first of equal ones);
/// (0, -inf) for an empty slice.
pub fn argmax(v: &[f32]) -> (u32, f32) {
    let mut best = (0u32, f32::NEG_INFINITY);
    for (i, &x) in v.iter().enumerate() {
        if x > best.1 {
            best = (i as u32, x);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_counts_the_leading_run() {
        let v = [1, 3, 5, 7, 9];
        assert_eq!(partition(v.len(), |i| v[i] < 6), 3);
        assert_eq!(partition(v.len(), |i| v[i] < 0), 0);
        assert_eq!(partition(v.len(), |i| v[i] < 10), 5);
    }

    #[test]
    fn push_top_keeps_the_best_n_in_order() {
        let mut top = Vec::new();
        for (id, s) in [(0, 0.1), (1, 0.5), (2, 0.3), (3, 0.05), (4, 0.4)] {
            push_top(&mut top, (id, s), 3);
        }
        assert_eq!(top, vec![(1, 0.5), (4, 0.4), (2, 0.3)]);
    }

    #[test]
    fn argmax_takes_the_first_of_equals() {
        assert_eq!(argmax(&[0.1, 0.7, 0.7, 0.2]), (1, 0.7));
        assert_eq!(argmax(&[]).0, 0);
    }
}
