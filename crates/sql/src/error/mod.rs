//! Errors of the SQL layer, each with the MySQL error code and SQLSTATE a client expects.

mod codes;

pub use codes::ErrorKind;

/// An error to send to the client.
///
/// One pointer wide: every expression returns `Result<Value, SqlError>` per row, and with the
/// error's 48 bytes inline each return moved a 64-byte result through the stack (the largest
/// share of `Expr::eval`'s own time in a GROUP BY profile). Errors are rare; their box is not.
#[derive(Clone, PartialEq, Eq)]
pub struct SqlError(Box<Inner>);

#[derive(Clone, PartialEq, Eq)]
struct Inner {
    /// What went wrong; code and SQLSTATE are the kind's.
    kind: ErrorKind,
    code: u16,
    sqlstate: &'static str,
    message: String,
}

impl std::fmt::Display for SqlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ERROR {} ({}): {}",
            self.0.code, self.0.sqlstate, self.0.message
        )
    }
}

impl std::error::Error for SqlError {}

/// As the fields would print inline (tests pin results that include errors this way).
impl std::fmt::Debug for SqlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlError")
            .field("kind", &self.0.kind)
            .field("code", &self.0.code)
            .field("sqlstate", &self.0.sqlstate)
            .field("message", &self.0.message)
            .finish()
    }
}

impl SqlError {
    /// What went wrong, as MySQL classifies it.
    pub fn kind(&self) -> ErrorKind {
        self.0.kind
    }

    /// The MySQL error code sent to the client.
    pub fn code(&self) -> u16 {
        self.0.code
    }

    /// The SQLSTATE sent with the code.
    pub fn sqlstate(&self) -> &'static str {
        self.0.sqlstate
    }

    /// The message text sent to the client.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// The message text, for callers that keep it (a warning made of an error).
    pub fn into_message(self) -> String {
        self.0.message
    }
}

impl SqlError {
    /// ER_PARSE_ERROR (1064), worded as MySQL words it: the text from where parsing failed.
    pub fn syntax(near: &str, line: u64) -> SqlError {
        let mut shown: String = near.chars().take(80).collect();
        if shown.len() < near.len() {
            shown.push_str("...");
        }
        SqlError::of(
            ErrorKind::ParseError,
            format!(
                "You have an error in your SQL syntax; check the manual that corresponds to your \
                 zipdb server version for the right syntax to use near '{shown}' at line {line}"
            ),
        )
    }

    /// ER_NOT_SUPPORTED_YET (1235), naming the construct.
    pub fn unsupported(construct: &str) -> SqlError {
        SqlError::of(
            ErrorKind::NotSupportedYet,
            format!("This version of zipdb doesn't yet support '{construct}'"),
        )
    }

    /// ER_OPERAND_COLUMNS (1241).
    pub fn operand_columns(n: usize) -> SqlError {
        SqlError::of(
            ErrorKind::OperandColumns,
            format!("Operand should contain {n} column(s)"),
        )
    }

    /// ER_QUERY_INTERRUPTED (1317).
    pub fn interrupted() -> SqlError {
        SqlError::of(
            ErrorKind::QueryInterrupted,
            "Query execution was interrupted",
        )
    }

    /// ER_EMPTY_QUERY (1065).
    pub fn empty() -> SqlError {
        SqlError::of(ErrorKind::EmptyQuery, "Query was empty")
    }
}

/// The longest message an error carries, in bytes: MySQL's `MYSQL_ERRMSG_SIZE` (512) less its
/// terminating NUL. A message built from what a client sent (a list of 100,000 account names
/// in `DROP USER`, a long identifier) is cut there, as MySQL cuts it, so that no statement can
/// make the server build and send a megabyte-long error or keep one in SHOW WARNINGS.
pub const MESSAGE_LEN_MAX: usize = 511;

impl SqlError {
    /// An error of `kind`, with its code and SQLSTATE; the message cut to
    /// [`MESSAGE_LEN_MAX`] bytes (on a character boundary).
    pub fn of(kind: ErrorKind, message: impl Into<String>) -> SqlError {
        let mut message = message.into();
        if message.len() > MESSAGE_LEN_MAX {
            let mut end = MESSAGE_LEN_MAX;
            while !message.is_char_boundary(end) {
                end -= 1;
            }
            message.truncate(end);
            message.shrink_to_fit();
        }
        SqlError(Box::new(Inner {
            kind,
            code: kind.code(),
            sqlstate: kind.sqlstate(),
            message,
        }))
    }

    /// An engine error, with the MySQL code an application's retry logic expects.
    pub fn engine(e: zipdb_engine::Error) -> SqlError {
        use zipdb_engine::{Error as E, RequestError as R, StorageError as S, TxnError as T};
        match e {
            E::Txn(T::Deadlock) => SqlError::of(
                ErrorKind::LockDeadlock,
                "Deadlock found when trying to get lock; try restarting transaction",
            ),
            E::Txn(T::LockWaitTimeout { .. }) => SqlError::of(
                ErrorKind::LockWaitTimeout,
                "Lock wait timeout exceeded; try restarting transaction",
            ),
            // MariaDB's innodb_snapshot_isolation=ON reports the same condition as 1020.
            E::Txn(T::WriteConflict { tree }) => SqlError::of(
                ErrorKind::Checkread,
                format!(
                    "Record has changed since last read in table '{tree}'; try restarting \
                     transaction"
                ),
            ),
            E::Request(R::ChangeTooLarge { bytes, max }) => SqlError::of(
                ErrorKind::TransCacheFull,
                format!(
                    "Transaction needs {bytes} bytes of redo, more than the WAL holds ({max}); \
                     commit it in smaller transactions"
                ),
            ),
            E::Request(R::KeyTooLarge { max, .. }) => SqlError::of(
                ErrorKind::TooLongKey,
                format!("Specified key was too long; max key length is {max} bytes"),
            ),
            E::Storage(S::ReadOnlyAfterIoError(m)) => SqlError::of(
                ErrorKind::GetErrno,
                format!(
                    "Got error from storage engine: the database refuses changes after an I/O \
                     error ({m}); restart zipdb to recover"
                ),
            ),
            // Stored bytes that do not decode: MariaDB's "corrupt" code, with the engine's
            // message (it names the page, and the file and offset where the store knows them).
            other if other.is_corruption() => SqlError::corrupt(other.to_string()),
            other => SqlError::of(
                ErrorKind::GetErrno,
                format!("Got error from storage engine: {other}"),
            ),
        }
    }

    /// Stored data that does not decode (the message names the table and what was wrong).
    pub fn corrupt(detail: String) -> SqlError {
        SqlError::of(ErrorKind::TableCorrupt, format!("Corrupt data: {detail}"))
    }

    /// Errors after which the transaction has been rolled back (deadlock, lock wait timeout,
    /// write conflict): applications retry the whole transaction without sending ROLLBACK.
    pub fn rolls_back_transaction(&self) -> bool {
        matches!(
            self.0.kind,
            ErrorKind::LockDeadlock | ErrorKind::LockWaitTimeout | ErrorKind::Checkread
        )
    }

    pub fn no_db() -> SqlError {
        SqlError::of(ErrorKind::NoDbError, "No database selected")
    }
    pub fn unknown_db(db: &str) -> SqlError {
        SqlError::of(ErrorKind::BadDbError, format!("Unknown database '{db}'"))
    }
    pub fn no_table(db: &str, t: &str) -> SqlError {
        SqlError::of(
            ErrorKind::NoSuchTable,
            format!("Table '{db}.{t}' doesn't exist"),
        )
    }
    pub fn unknown_column(c: &str, clause: &str) -> SqlError {
        SqlError::of(
            ErrorKind::BadFieldError,
            format!("Unknown column '{c}' in '{clause}'"),
        )
    }
    pub fn duplicate(entry: &str, key: &str) -> SqlError {
        SqlError::of(
            ErrorKind::DupEntry,
            format!("Duplicate entry '{entry}' for key '{key}'"),
        )
    }
    pub fn not_null(c: &str) -> SqlError {
        SqlError::of(
            ErrorKind::BadNullError,
            format!("Column '{c}' cannot be null"),
        )
    }
    pub fn out_of_range(c: &str, row: u64) -> SqlError {
        SqlError::of(
            ErrorKind::WarnDataOutOfRange,
            format!("Out of range value for column '{c}' at row {row}"),
        )
    }
    pub fn too_long(c: &str, row: u64) -> SqlError {
        SqlError::of(
            ErrorKind::DataTooLong,
            format!("Data too long for column '{c}' at row {row}"),
        )
    }
    pub fn bad_value(kind: &str, v: &str, c: &str, row: u64) -> SqlError {
        SqlError::of(
            ErrorKind::TruncatedWrongValueForField,
            format!("Incorrect {kind} value: '{v}' for column '{c}' at row {row}"),
        )
    }
    pub fn bad_datetime(v: &str, c: &str, row: u64) -> SqlError {
        SqlError::of(
            ErrorKind::TruncatedWrongValue,
            format!("Incorrect datetime value: '{v}' for column '{c}' at row {row}"),
        )
    }
    pub fn wrong_args(f: &str) -> SqlError {
        SqlError::of(
            ErrorKind::WrongParamcountToNativeFct,
            format!("Incorrect parameter count in the call to native function '{f}'"),
        )
    }
    pub fn unknown_function(f: &str) -> SqlError {
        SqlError::of(
            ErrorKind::SpDoesNotExist,
            format!("FUNCTION {f} does not exist"),
        )
    }
    pub fn internal(m: impl Into<String>) -> SqlError {
        SqlError::of(ErrorKind::UnknownError, m)
    }

    /// ER_UNKNOWN_STMT_HANDLER (1243): MySQL names the command, not the statement's text.
    pub fn unknown_stmt(id: u32) -> SqlError {
        SqlError::of(
            ErrorKind::UnknownStmtHandler,
            format!("Unknown prepared statement handler ({id}) given to mysqld_stmt_execute"),
        )
    }
    /// ER_WRONG_ARGUMENTS (1210): `what` is the clause or command, with any detail after it.
    pub fn wrong_arguments(what: &str) -> SqlError {
        SqlError::of(
            ErrorKind::WrongArguments,
            format!("Incorrect arguments to {what}"),
        )
    }
    pub fn dup_key_name(key: &str) -> SqlError {
        SqlError::of(ErrorKind::DupKeyname, format!("Duplicate key name '{key}'"))
    }
    pub fn key_column_missing(c: &str) -> SqlError {
        SqlError::of(
            ErrorKind::KeyColumnDoesNotExist,
            format!("Key column '{c}' doesn't exist in table"),
        )
    }
    pub fn invalid_default(c: &str) -> SqlError {
        SqlError::of(
            ErrorKind::InvalidDefault,
            format!("Invalid default value for '{c}'"),
        )
    }
    pub fn wrong_value_for_var(name: &str, value: &str) -> SqlError {
        SqlError::of(
            ErrorKind::WrongValueForVar,
            format!("Variable '{name}' can't be set to the value of '{value}'"),
        )
    }
    /// ER_DATA_OUT_OF_RANGE (1690) for a computed value (`ty`: BIGINT, DECIMAL, …), not a
    /// stored one (that is 1264, [`SqlError::out_of_range`]).
    pub fn value_out_of_range(ty: &str) -> SqlError {
        SqlError::of(
            ErrorKind::DataOutOfRange,
            format!("{ty} value is out of range"),
        )
    }
    /// ER_INCORRECT_GLOBAL_LOCAL_VAR (1238); `how` says where the variable is set instead.
    pub fn read_only_var(name: &str, how: &str) -> SqlError {
        SqlError::of(
            ErrorKind::IncorrectGlobalLocalVar,
            format!("Variable '{name}' is a read only variable ({how})"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{ErrorKind, SqlError, MESSAGE_LEN_MAX};

    /// The per-row result of an expression stays the size of a value plus a word at most.
    #[test]
    fn an_error_is_one_pointer() {
        use crate::types::value::Value;
        use std::mem::size_of;
        assert_eq!(size_of::<SqlError>(), size_of::<usize>());
        assert!(size_of::<Result<Value, SqlError>>() <= size_of::<Value>() + size_of::<usize>());
        let e = SqlError::of(ErrorKind::ParseError, "near 'x'");
        assert_eq!(e.to_string(), "ERROR 1064 (42000): near 'x'");
    }

    #[test]
    fn long_messages_are_cut_on_a_character_boundary() {
        let short = SqlError::of(ErrorKind::ParseError, "x".repeat(MESSAGE_LEN_MAX));
        assert_eq!(short.message().len(), MESSAGE_LEN_MAX);
        let long = SqlError::of(ErrorKind::ParseError, "y".repeat(1 << 20));
        assert_eq!(long.message(), "y".repeat(MESSAGE_LEN_MAX));
        // 'é' is 2 bytes: 511 is not a boundary after a 1-byte prefix.
        let wide = SqlError::of(ErrorKind::ParseError, format!("a{}", "é".repeat(400)));
        assert_eq!(wide.message().len(), MESSAGE_LEN_MAX);
        let wide = SqlError::of(ErrorKind::ParseError, "é".repeat(400));
        assert_eq!(wide.message().len(), MESSAGE_LEN_MAX - 1);
        assert!(wide.message().chars().all(|c| c == 'é'));
    }

    #[test]
    fn retried_errors_are_the_three_that_roll_back() {
        let conflict = SqlError::engine(zipdb_engine::Error::Txn(
            zipdb_engine::TxnError::WriteConflict {
                tree: "t".to_string(),
            },
        ));
        assert_eq!(
            (conflict.kind(), conflict.code()),
            (ErrorKind::Checkread, 1020)
        );
        assert!(conflict.rolls_back_transaction());
        assert!(
            SqlError::engine(zipdb_engine::Error::Txn(zipdb_engine::TxnError::Deadlock))
                .rolls_back_transaction()
        );
        // The engine's retryable family is exactly what rolls a transaction back here.
        for e in [
            zipdb_engine::Error::Txn(zipdb_engine::TxnError::Deadlock),
            zipdb_engine::Error::Txn(zipdb_engine::TxnError::LockWaitTimeout {
                waited: std::time::Duration::from_millis(5),
            }),
            zipdb_engine::Error::Txn(zipdb_engine::TxnError::WriteConflict { tree: "t".into() }),
            zipdb_engine::Error::Request(zipdb_engine::RequestError::KeyTooLarge {
                len: 9,
                max: 8,
            }),
            zipdb_engine::Error::Storage(zipdb_engine::StorageError::CorruptCatalog("x".into())),
        ] {
            let retry = e.class() == zipdb_engine::ErrorClass::RetryableTxn;
            assert_eq!(SqlError::engine(e).rolls_back_transaction(), retry);
        }
        let corrupt = SqlError::engine(zipdb_engine::Error::Storage(
            zipdb_engine::StorageError::CorruptCatalog("bad entry".into()),
        ));
        assert_eq!(corrupt.code(), 1877);
        assert!(
            corrupt.message().contains("bad entry"),
            "{}",
            corrupt.message()
        );
        assert!(!SqlError::duplicate("1", "PRIMARY").rolls_back_transaction());
        let ddl_timeout = SqlError::of(ErrorKind::LockWaitTimeout, "Lock wait timeout exceeded");
        assert!(ddl_timeout.rolls_back_transaction());
    }

    /// The constructors that replaced literal sites (C2b/C2c) send what those sites sent:
    /// code, SQLSTATE and text, written out as the sites wrote them.
    #[test]
    fn constructors_send_what_the_literal_sites_sent() {
        let cases = [
            (
                SqlError::unknown_stmt(7),
                1243,
                "HY000",
                "Unknown prepared statement handler (7) given to mysqld_stmt_execute",
            ),
            (
                SqlError::wrong_arguments("LIMIT"),
                1210,
                "HY000",
                "Incorrect arguments to LIMIT",
            ),
            (
                SqlError::dup_key_name("k"),
                1061,
                "42000",
                "Duplicate key name 'k'",
            ),
            (
                SqlError::key_column_missing("c"),
                1072,
                "42000",
                "Key column 'c' doesn't exist in table",
            ),
            (
                SqlError::invalid_default("c"),
                1067,
                "42000",
                "Invalid default value for 'c'",
            ),
            (
                SqlError::wrong_value_for_var("autocommit", "x"),
                1231,
                "42000",
                "Variable 'autocommit' can't be set to the value of 'x'",
            ),
            (
                SqlError::read_only_var("v", "set it with the server's --flush-policy"),
                1238,
                "HY000",
                "Variable 'v' is a read only variable (set it with the server's --flush-policy)",
            ),
            (
                SqlError::value_out_of_range("BIGINT UNSIGNED"),
                1690,
                "22003",
                "BIGINT UNSIGNED value is out of range",
            ),
            (
                SqlError::interrupted(),
                1317,
                "70100",
                "Query execution was interrupted",
            ),
            (
                SqlError::engine(zipdb_engine::Error::Txn(
                    zipdb_engine::TxnError::WriteConflict {
                        tree: "t".to_string(),
                    },
                )),
                1020,
                "HY000",
                "Record has changed since last read in table 't'; try restarting transaction",
            ),
        ];
        for (e, code, state, message) in cases {
            assert_eq!(
                (e.code(), e.sqlstate(), e.message()),
                (code, state, message)
            );
            assert_eq!(ErrorKind::from_code(code), Some(e.kind()));
        }
    }
}
