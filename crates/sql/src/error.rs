//! Errors of the SQL layer, each with the MySQL error code and SQLSTATE a client expects.

/// An error to send to the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ERROR {code} ({sqlstate}): {message}")]
pub struct SqlError {
    pub code: u16,
    pub sqlstate: &'static str,
    pub message: String,
}

impl SqlError {
    /// ER_PARSE_ERROR (1064), worded as MySQL words it: the text from where parsing failed.
    pub fn syntax(near: &str, line: u64) -> SqlError {
        let mut shown: String = near.chars().take(80).collect();
        if shown.len() < near.len() {
            shown.push_str("...");
        }
        SqlError {
            code: 1064,
            sqlstate: "42000",
            message: format!(
                "You have an error in your SQL syntax; check the manual that corresponds to your \
                 zipdb server version for the right syntax to use near '{shown}' at line {line}"
            ),
        }
    }

    /// ER_NOT_SUPPORTED_YET (1235), naming the construct.
    pub fn unsupported(construct: &str) -> SqlError {
        SqlError {
            code: 1235,
            sqlstate: "42000",
            message: format!("This version of zipdb doesn't yet support '{construct}'"),
        }
    }

    /// ER_OPERAND_COLUMNS (1241).
    pub fn operand_columns(n: usize) -> SqlError {
        SqlError {
            code: 1241,
            sqlstate: "21000",
            message: format!("Operand should contain {n} column(s)"),
        }
    }

    /// ER_QUERY_INTERRUPTED (1317).
    pub(crate) fn interrupted() -> SqlError {
        SqlError::new(1317, "70100", "Query execution was interrupted")
    }

    /// ER_EMPTY_QUERY (1065).
    pub fn empty() -> SqlError {
        SqlError {
            code: 1065,
            sqlstate: "42000",
            message: "Query was empty".to_string(),
        }
    }
}

impl SqlError {
    pub fn new(code: u16, sqlstate: &'static str, message: impl Into<String>) -> SqlError {
        SqlError {
            code,
            sqlstate,
            message: message.into(),
        }
    }

    /// An engine error, with the MySQL code an application's retry logic expects.
    pub fn engine(e: zipdb_engine::Error) -> SqlError {
        use zipdb_engine::Error as E;
        match e {
            E::Deadlock => SqlError::new(
                1213,
                "40001",
                "Deadlock found when trying to get lock; try restarting transaction",
            ),
            E::LockWaitTimeout { .. } => SqlError::new(
                1205,
                "HY000",
                "Lock wait timeout exceeded; try restarting transaction",
            ),
            // MariaDB's innodb_snapshot_isolation=ON reports the same condition as 1020.
            E::WriteConflict { tree } => SqlError::new(
                1020,
                "HY000",
                format!(
                    "Record has changed since last read in table '{tree}'; try restarting transaction"
                ),
            ),
            E::KeyTooLarge { max, .. } => SqlError::new(
                1071,
                "42000",
                format!("Specified key was too long; max key length is {max} bytes"),
            ),
            E::ReadOnlyAfterIoError(m) => SqlError::new(
                1030,
                "HY000",
                format!("Got error from storage engine: the database refuses changes after an I/O error ({m}); restart zipdb to recover"),
            ),
            other => SqlError::new(1030, "HY000", format!("Got error from storage engine: {other}")),
        }
    }

    /// Stored data that does not decode (the message names the table and what was wrong).
    pub fn corrupt(detail: String) -> SqlError {
        SqlError::new(1877, "HY000", format!("Corrupt data: {detail}"))
    }

    /// Errors after which the transaction has been rolled back (deadlock, lock wait timeout,
    /// write conflict): applications retry the whole transaction without sending ROLLBACK.
    pub fn rolls_back_transaction(&self) -> bool {
        matches!(self.code, 1213 | 1205 | 1020)
    }

    pub fn no_db() -> SqlError {
        SqlError::new(1046, "3D000", "No database selected")
    }
    pub fn unknown_db(db: &str) -> SqlError {
        SqlError::new(1049, "42000", format!("Unknown database '{db}'"))
    }
    pub fn no_table(db: &str, t: &str) -> SqlError {
        SqlError::new(1146, "42S02", format!("Table '{db}.{t}' doesn't exist"))
    }
    pub fn unknown_column(c: &str, clause: &str) -> SqlError {
        SqlError::new(1054, "42S22", format!("Unknown column '{c}' in '{clause}'"))
    }
    pub fn duplicate(entry: &str, key: &str) -> SqlError {
        SqlError::new(
            1062,
            "23000",
            format!("Duplicate entry '{entry}' for key '{key}'"),
        )
    }
    pub fn not_null(c: &str) -> SqlError {
        SqlError::new(1048, "23000", format!("Column '{c}' cannot be null"))
    }
    pub fn out_of_range(c: &str, row: u64) -> SqlError {
        SqlError::new(
            1264,
            "22003",
            format!("Out of range value for column '{c}' at row {row}"),
        )
    }
    pub fn too_long(c: &str, row: u64) -> SqlError {
        SqlError::new(
            1406,
            "22001",
            format!("Data too long for column '{c}' at row {row}"),
        )
    }
    pub fn bad_value(kind: &str, v: &str, c: &str, row: u64) -> SqlError {
        SqlError::new(
            1366,
            "22007",
            format!("Incorrect {kind} value: '{v}' for column '{c}' at row {row}"),
        )
    }
    pub fn bad_datetime(v: &str, c: &str, row: u64) -> SqlError {
        SqlError::new(
            1292,
            "22007",
            format!("Incorrect datetime value: '{v}' for column '{c}' at row {row}"),
        )
    }
    pub fn wrong_args(f: &str) -> SqlError {
        SqlError::new(
            1582,
            "42000",
            format!("Incorrect parameter count in the call to native function '{f}'"),
        )
    }
    pub fn unknown_function(f: &str) -> SqlError {
        SqlError::new(1305, "42000", format!("FUNCTION {f} does not exist"))
    }
    pub fn internal(m: impl Into<String>) -> SqlError {
        SqlError::new(1105, "HY000", m)
    }
}
