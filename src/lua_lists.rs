//! For tests that check the plugin's Lua defaults against the host's lists:
//! reads a literal list of single-quoted strings from a Lua file.

/// The strings of the list `name = { 'a', 'b', … }` in `file` (a path under
/// the repository root), in order; entries that are not one single-quoted
/// string are skipped. Fails the test when the list is not there.
pub fn read(file: &str, name: &str) -> Vec<String> {
    let root = env!("CARGO_MANIFEST_DIR");
    let source = std::fs::read_to_string(format!("{root}/{file}")).unwrap();
    let block = source
        .split(&format!("{name} = {{"))
        .nth(1)
        .and_then(|b| b.split('}').next())
        .unwrap_or_else(|| panic!("{name} in {file}"));
    block
        .split(',')
        .filter_map(|s| s.trim().strip_prefix('\'')?.strip_suffix('\''))
        .map(str::to_string)
        .collect()
}
