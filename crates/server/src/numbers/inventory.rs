//! Loading number ranges: the built-in default inventory (fictional and reserved ranges, so
//! the store works on first start) and operators' CSV files.

use dialtone_domain::E164;
use dialtone_domain::number::{INVENTORY_HEADER, InventoryRange};
use dialtone_store::numbers::inventory::{self, ImportCount};
use dialtone_store::{DbError, Store};

/// The ranges every embedded server starts with.
pub(crate) const DEFAULT_INVENTORY: &str = include_str!("default_inventory.csv");

/// A line of an inventory file that was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Blank lines, comments and the header (on the first line) hold no range.
fn skipped_line(index: usize, line: &str) -> bool {
    line.is_empty()
        || line.starts_with('#')
        || (index == 0 && line.eq_ignore_ascii_case(INVENTORY_HEADER))
}

/// Parses an inventory CSV (header optional); every number must be valid in its numbering
/// plan and belong to the line's country. All lines are checked before anything is stored.
pub fn parse(csv: &str) -> Result<Vec<InventoryRange>, Vec<LineError>> {
    let mut ranges = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in csv.lines().enumerate() {
        let line = line.trim();
        if skipped_line(i, line) {
            continue;
        }
        let checked = InventoryRange::parse_csv(line).and_then(|r| {
            for end in [&r.first, &r.last] {
                let valid = E164::parse(end.as_str()).map_err(|e| format!("{end} {e}"))?;
                if valid.country().as_deref() != Some(r.country.as_str()) {
                    return Err(format!("{end} is not a number of {}", r.country));
                }
            }
            Ok(r)
        });
        match checked {
            Ok(r) => ranges.push(r),
            Err(message) => errors.push(LineError {
                line: i + 1,
                message,
            }),
        }
    }
    if errors.is_empty() {
        Ok(ranges)
    } else {
        Err(errors)
    }
}

/// Stores parsed ranges in one transaction.
pub async fn import(store: &Store, ranges: Vec<InventoryRange>) -> Result<ImportCount, DbError> {
    store
        .write(move |c| {
            let mut total = ImportCount::default();
            for r in &ranges {
                let n = inventory::import(c, r)?;
                total.added += n.added;
                total.skipped += n.skipped;
            }
            Ok(total)
        })
        .await
}

/// Loads the default inventory when the inventory is empty (first start).
pub(crate) async fn load_default_if_empty(store: &Store) -> anyhow::Result<()> {
    if !store.read(inventory::is_empty).await? {
        return Ok(());
    }
    // The built-in file is checked against the numbering plan by a unit test
    // (`the_default_inventory_is_valid`): at start only its lines are read, which keeps the
    // plan's load (about 150 ms) off the first start.
    let ranges = DEFAULT_INVENTORY
        .lines()
        .enumerate()
        .map(|(i, l)| (i, l.trim()))
        .filter(|(i, l)| !skipped_line(*i, l))
        .map(|(i, l)| {
            InventoryRange::parse_csv(l)
                .map_err(|e| anyhow::anyhow!("default inventory line {}: {e}", i + 1))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let count = import(store, ranges).await?;
    tracing::info!(added = count.added, "default number inventory loaded");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_inventory_is_valid() {
        let ranges = parse(DEFAULT_INVENTORY).unwrap();
        assert!(ranges.len() >= 10);
    }

    #[test]
    fn numbers_must_be_valid_and_in_their_country() {
        let errors = parse("GB,mobile,classic,+33,,+33612345678,+33612345679,1,1\nXX\nGB,geographic,classic,+4420,London,+442079460000,+442079460001,1,1").unwrap_err();
        assert_eq!(errors.iter().map(|e| e.line).collect::<Vec<_>>(), [1, 2]);
    }
}
