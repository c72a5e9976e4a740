//! A map from workspace paths to values, kept as one sorted vector: a third of the memory
//! of a tree map, lookups by binary search, and positions that let a caller mark entries
//! as seen in a plain `Vec<bool>` instead of a set of cloned paths.

use crate::workspace::RelPath;

/// Paths (unique, sorted by bytes) with a value each.
#[derive(Debug, Clone)]
pub(super) struct SortedPaths<V> {
    items: Vec<(RelPath, V)>,
}

impl<V> Default for SortedPaths<V> {
    fn default() -> Self {
        SortedPaths { items: Vec::new() }
    }
}

impl<V> SortedPaths<V> {
    /// The map of `items` in any order; of two equal paths the first is kept. Sorted and
    /// deduplicated in place: no second copy of the items is made.
    pub(super) fn from_unsorted(mut items: Vec<(RelPath, V)>) -> SortedPaths<V> {
        items.sort_by(|a, b| a.0.cmp(&b.0));
        items.dedup_by(|later, earlier| later.0 == earlier.0);
        items.shrink_to_fit();
        SortedPaths { items }
    }

    /// Where `path` is, if it is there.
    pub(super) fn position(&self, path: &RelPath) -> Option<usize> {
        self.items.binary_search_by(|(p, _)| p.cmp(path)).ok()
    }

    /// [`SortedPaths::position`] for lookups made in about sorted order (a walk's):
    /// `cursor` is just past the last one found, and the entry there is tried before a
    /// binary search, so an in-order lookup costs one comparison.
    pub(super) fn position_from(&self, path: &RelPath, cursor: &mut usize) -> Option<usize> {
        let found = match self.items.get(*cursor) {
            Some((at_cursor, _)) if at_cursor == path => Some(*cursor),
            _ => self.position(path),
        };
        if let Some(at) = found {
            *cursor = at + 1;
        }
        found
    }

    pub(super) fn get(&self, path: &RelPath) -> Option<&V> {
        self.position(path).map(|at| &self.items[at].1)
    }

    /// The entry at a position [`SortedPaths::position`] gave.
    pub(super) fn at(&self, position: usize) -> Option<&(RelPath, V)> {
        self.items.get(position)
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &(RelPath, V)> {
        self.items.iter()
    }

    pub(super) fn len(&self) -> usize {
        self.items.len()
    }
}

impl<V> std::ops::Index<&RelPath> for SortedPaths<V> {
    type Output = V;
    /// Panics when `path` is not there, like a map's index (used by tests).
    fn index(&self, path: &RelPath) -> &V {
        match self.get(path) {
            Some(value) => value,
            None => panic!("{path} is not in the map"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_keeps_the_first_duplicate_and_finds_by_bytes() {
        let map = SortedPaths::from_unsorted(vec![
            (RelPath::from("b/c"), 1),
            (RelPath::from("a.txt"), 2),
            (RelPath::from("a/b"), 3),
            (RelPath::from("b/c"), 4),
        ]);
        let keys: Vec<String> = map.iter().map(|(p, _)| p.to_string()).collect();
        assert_eq!(keys, ["a.txt", "a/b", "b/c"]);
        assert_eq!(map.get(&RelPath::from("b/c")), Some(&1));
        assert_eq!(map.position(&RelPath::from("a/b")), Some(1));
        assert!(map.get(&RelPath::from("zzz")).is_none());
    }

    #[test]
    fn lookups_from_a_cursor_find_what_a_binary_search_finds() {
        let map = SortedPaths::from_unsorted(vec![
            (RelPath::from("a.txt"), 0),
            (RelPath::from("a/b"), 1),
            (RelPath::from("b"), 2),
        ]);
        let mut cursor = 0;
        // Walk order ("a/b" before "a.txt") is not byte order: both are still found.
        for (path, expected) in [
            ("a/b", Some(1)),
            ("a.txt", Some(0)),
            ("zz", None),
            ("b", Some(2)),
        ] {
            assert_eq!(
                map.position_from(&RelPath::from(path), &mut cursor),
                expected,
                "{path}"
            );
        }
        assert_eq!(cursor, 3);
    }
}
