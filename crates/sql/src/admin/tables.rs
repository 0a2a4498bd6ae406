//! What SHOW and `information_schema` print about a table: its indexes, column keys, CREATE
//! TABLE text and sizes.

use std::sync::atomic::Ordering;

use crate::admin::s;
use crate::types::value::Value;

/// An index as SHOW INDEX and `information_schema.STATISTICS` list it.
pub(crate) struct IndexInfo<'a> {
    pub name: &'a str,
    pub unique: bool,
    pub columns: &'a [usize],
}

/// The primary key (if the table declares one) and the secondary indexes, in MariaDB's order.
pub(crate) fn index_list(t: &crate::catalog::Table) -> Vec<IndexInfo<'_>> {
    let mut v = Vec::with_capacity(t.def.indexes.len() + 1);
    if !t.def.pk.is_empty() {
        v.push(IndexInfo {
            name: "PRIMARY",
            unique: true,
            columns: &t.def.pk,
        });
    }
    for x in &t.def.indexes {
        v.push(IndexInfo {
            name: &x.name,
            unique: x.unique,
            columns: &x.columns,
        });
    }
    // MariaDB keeps a table's keys in this order, whatever order they were declared in, and
    // shows them so (SHOW INDEX, SHOW CREATE TABLE, STATISTICS): the primary key, unique
    // keys of NOT NULL columns, other unique keys, the rest; declaration order within each.
    let nullable = |ix: &IndexInfo| ix.columns.iter().any(|&c| t.def.columns[c].nullable);
    let primary = |ix: &IndexInfo| std::ptr::eq(ix.columns, t.def.pk.as_slice());
    v.sort_by_key(|ix| match (primary(ix), ix.unique, nullable(ix)) {
        (true, _, _) => 0,
        (false, true, false) => 1,
        (false, true, true) => 2,
        (false, false, _) => 3,
    });
    v
}

/// The `Key` of SHOW COLUMNS (and COLUMN_KEY): PRI for primary key columns, UNI for the column
/// of a one-column unique index, MUL for the first column of any other index.
pub(crate) fn column_key(t: &crate::catalog::Table, ci: usize) -> &'static str {
    if t.def.pk.contains(&ci) {
        "PRI"
    } else if t.def.indexes.iter().any(|x| x.unique && x.columns == [ci]) {
        "UNI"
    } else if t.def.indexes.iter().any(|x| x.columns.first() == Some(&ci)) {
        "MUL"
    } else {
        ""
    }
}

pub(crate) fn default_text(c: &crate::catalog::ColumnDef) -> Value {
    if c.default_now {
        return s("current_timestamp()");
    }
    match &c.default {
        None | Some(Value::Null) => Value::Null,
        Some(v) => s(v.to_string_lossy().unwrap_or_default()),
    }
}

fn quote(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        v => format!(
            "'{}'",
            v.to_string_lossy().unwrap_or_default().replace('\'', "''")
        ),
    }
}

pub fn create_table_text(t: &crate::catalog::Table) -> String {
    let mut lines = Vec::new();
    for c in &t.def.columns {
        let mut l = format!("  `{}` {}", c.name, c.type_text());
        if !c.nullable {
            l.push_str(" NOT NULL");
        }
        if c.auto_increment {
            l.push_str(" AUTO_INCREMENT");
        } else if c.default_now {
            l.push_str(" DEFAULT current_timestamp()");
        } else if let Some(d) = &c.default {
            l.push_str(&format!(" DEFAULT {}", quote(d)));
        } else if c.nullable {
            l.push_str(" DEFAULT NULL");
        }
        lines.push(l);
    }
    let names = |cols: &[usize]| {
        cols.iter()
            .map(|&c| format!("`{}`", t.def.columns[c].name))
            .collect::<Vec<_>>()
            .join(",")
    };
    for x in index_list(t) {
        lines.push(if std::ptr::eq(x.columns, t.def.pk.as_slice()) {
            format!("  PRIMARY KEY ({})", names(x.columns))
        } else {
            format!(
                "  {}KEY `{}` ({})",
                if x.unique { "UNIQUE " } else { "" },
                x.name,
                names(x.columns)
            )
        });
    }
    let mut opts = String::from(" ENGINE=zipdb");
    if let Some(ai) = t.auto_inc {
        let _ = ai;
        let n = t.next_id.load(Ordering::Relaxed);
        if n > 1 {
            opts.push_str(&format!(" AUTO_INCREMENT={n}"));
        }
    }
    opts.push_str(" DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci");
    if let Some(r) = &t.def.options.row_format {
        opts.push_str(&format!(" ROW_FORMAT={r}"));
    }
    if let Some(k) = t.def.options.key_block_size {
        opts.push_str(&format!(" KEY_BLOCK_SIZE={k}"));
    }
    opts.push_str(&format!(
        " COMPRESSION='{}'",
        crate::catalog::format_name(t.def.format)
    ));
    format!(
        "CREATE TABLE `{}` (\n{}\n){}",
        t.def.name,
        lines.join(",\n"),
        opts
    )
}

/// A table's sizes: physical (page images in the store) and logical (before compression),
/// for its rows and for its secondary indexes.
pub(crate) struct TableSizes {
    pub data_physical: u64,
    pub data_logical: u64,
    pub index_physical: u64,
    pub index_logical: u64,
}

impl TableSizes {
    pub fn of(t: &crate::catalog::Table, stats: &zipdb_engine::Stats) -> TableSizes {
        let tree = |name: &str| stats.trees.iter().find(|x| x.name == name);
        let (data_physical, data_logical) =
            tree(&t.def.primary_tree).map_or((0, 0), |s| (s.physical_bytes, s.logical_bytes));
        let (mut index_physical, mut index_logical) = (0, 0);
        for x in &t.def.indexes {
            if let Some(s) = tree(&x.tree) {
                index_physical += s.physical_bytes;
                index_logical += s.logical_bytes;
            }
        }
        TableSizes {
            data_physical,
            data_logical,
            index_physical,
            index_logical,
        }
    }

    /// Logical bytes per physical byte (1 for an empty table).
    pub fn ratio(&self) -> f64 {
        let p = self.data_physical + self.index_physical;
        if p == 0 {
            1.0
        } else {
            (self.data_logical + self.index_logical) as f64 / p as f64
        }
    }

    pub fn row_format(&self, t: &crate::catalog::Table) -> &'static str {
        match t.def.format {
            zipdb_engine::TableFormat::Codec(zipdb_engine::Codec::None) => "Dynamic",
            _ => "Compressed",
        }
    }

    pub fn create_options(&self, t: &crate::catalog::Table) -> String {
        format!(
            "compression='{}'",
            crate::catalog::format_name(t.def.format)
        )
    }

    pub fn auto_increment(&self, t: &crate::catalog::Table) -> Value {
        t.auto_inc.map_or(Value::Null, |_| {
            Value::UInt(t.next_id.load(Ordering::Relaxed))
        })
    }
}
