//! The one table of SQL error kinds: each kind's MySQL error code, SQLSTATE and message
//! template. Kinds carry MySQL's names (`ER_DUP_ENTRY` is [`ErrorKind::DupEntry`]), so that a
//! code found in MySQL's or MariaDB's error list leads here and back.
//!
//! The templates document the message zipdb sends (`{…}` marks what is filled in); they are
//! zipdb's wording, which differs from MySQL's where zipdb names itself or says more.

/// Generates [`ErrorKind`] with `code()`, `sqlstate()`, `template()` and `from_code()`.
/// `from_code` is a `match` on the codes, so a code listed twice does not compile
/// (`unreachable_patterns` is denied in CI).
macro_rules! errors {
    ($($kind:ident = $code:literal, $state:literal, $template:literal;)*) => {
        /// What went wrong, as MySQL classifies it: one kind per MySQL error code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorKind {
            $(
                #[doc = concat!("`", stringify!($code), " (", $state, ")`: ", $template)]
                $kind,
            )*
        }

        impl ErrorKind {
            /// Every kind, in table order.
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$kind),*];

            /// The MySQL error code.
            pub const fn code(self) -> u16 {
                match self {
                    $(ErrorKind::$kind => $code,)*
                }
            }

            /// The SQLSTATE MySQL sends with the code.
            pub const fn sqlstate(self) -> &'static str {
                match self {
                    $(ErrorKind::$kind => $state,)*
                }
            }

            /// The message, `{…}` marking what is filled in.
            pub const fn template(self) -> &'static str {
                match self {
                    $(ErrorKind::$kind => $template,)*
                }
            }

            /// The kind of a MySQL error code, if the table has it.
            pub const fn from_code(code: u16) -> Option<ErrorKind> {
                #[deny(unreachable_patterns)]
                match code {
                    $($code => Some(ErrorKind::$kind),)*
                    _ => None,
                }
            }
        }
    };
}

errors! {
    DbCreateExists = 1007, "HY000", "Can't create database '{db}'; database exists";
    DbDropExists = 1008, "HY000", "Can't drop database '{db}'; database doesn't exist";
    // MariaDB's innodb_snapshot_isolation=ON reports a write conflict with this code.
    Checkread = 1020, "HY000",
        "Record has changed since last read in table '{table}'; try restarting transaction";
    // Temporary files of a spilling statement (runtime/spill.rs).
    ErrorOnRead = 1024, "HY000", "Error reading file '{file}' ({detail})";
    ErrorOnWrite = 1026, "HY000", "Error writing file '{file}' ({detail})";
    GetErrno = 1030, "HY000", "Got error from storage engine: {detail}";
    DbAccessDenied = 1044, "42000", "Access denied to database '{db}'";
    NoDbError = 1046, "3D000", "No database selected";
    BadNullError = 1048, "23000", "Column '{column}' cannot be null";
    BadDbError = 1049, "42000", "Unknown database '{db}'";
    TableExistsError = 1050, "42S01", "Table '{table}' already exists";
    BadTableError = 1051, "42S02", "Unknown table '{table}'";
    NonUniqError = 1052, "23000", "Column '{column}' in {clause} is ambiguous";
    BadFieldError = 1054, "42S22", "Unknown column '{column}' in '{clause}'";
    DupFieldname = 1060, "42S21", "Duplicate column name '{column}'";
    DupKeyname = 1061, "42000", "Duplicate key name '{key}'";
    DupEntry = 1062, "23000", "Duplicate entry '{entry}' for key '{key}'";
    WrongFieldSpec = 1063, "42000", "Incorrect column specifier for column '{column}'";
    ParseError = 1064, "42000",
        "You have an error in your SQL syntax; check the manual that corresponds to your \
         zipdb server version for the right syntax to use near '{text}' at line {line}";
    EmptyQuery = 1065, "42000", "Query was empty";
    NonuniqTable = 1066, "42000", "Not unique table/alias: '{table}'";
    InvalidDefault = 1067, "42000", "Invalid default value for '{column}'";
    MultiplePriKey = 1068, "42000", "Multiple primary key defined";
    TooLongKey = 1071, "42000", "Specified key was too long; max key length is {max} bytes";
    // MySQL's name is ER_KEY_COLUMN_DOES_NOT_EXITS (sic).
    KeyColumnDoesNotExist = 1072, "42000", "Key column '{column}' doesn't exist in table";
    WrongAutoKey = 1075, "42000",
        "Incorrect table definition; there can be only one auto column and it must be \
         defined as a key";
    CantDropFieldOrKey = 1091, "42000", "Can't DROP '{name}'; check that column/key exists";
    NoSuchThread = 1094, "HY000", "Unknown thread id: {id}";
    NoTablesUsed = 1096, "HY000", "No tables used";
    WrongTableName = 1103, "42000", "Incorrect {what} name '{name}'";
    UnknownError = 1105, "HY000", "{message}";
    InvalidGroupFuncUse = 1111, "HY000", "Invalid use of group function {name}";
    TableMustHaveColumns = 1113, "42000", "A table must have at least 1 column";
    UnknownCharacterSet = 1115, "42000", "Unknown character set: '{name}'";
    TooManyTables = 1116, "HY000", "Too many tables; zipdb can only use {n} tables in a join";
    TooManyFields = 1117, "HY000", "Too many columns";
    PasswordNoMatch = 1133, "28000", "Can't find any matching row in the user table";
    WrongValueCountOnRow = 1136, "21S01", "Column count doesn't match value count at row {row}";
    NoSuchTable = 1146, "42S02", "Table '{db}.{table}' doesn't exist";
    NotAllowedCommand = 1148, "42000", "The used command is not allowed with this zipdb version";
    // A result's client went away or stopped reading while its rows were being sent.
    NetErrorOnWrite = 1160, "08S01", "Got an error writing communication packets";
    UnknownSystemVariable = 1193, "HY000", "Unknown system variable '{name}'";
    // One commit's redo is larger than the whole WAL (MariaDB's name is about its binlog
    // cache; the condition, a transaction too large to log, is the same).
    TransCacheFull = 1197, "HY000",
        "Transaction needs {bytes} bytes of redo, more than the WAL holds ({max}); commit it in \
         smaller transactions";
    LockWaitTimeout = 1205, "HY000", "Lock wait timeout exceeded; try restarting transaction";
    WrongArguments = 1210, "HY000", "Incorrect arguments to {what}";
    LockDeadlock = 1213, "40001",
        "Deadlock found when trying to get lock; try restarting transaction";
    WrongNumberOfColumnsInSelect = 1222, "21000",
        "The used SELECT statements have a different number of columns";
    GlobalVariable = 1229, "HY000",
        "Variable '{name}' is a GLOBAL variable and should be set with SET GLOBAL";
    WrongValueForVar = 1231, "42000", "Variable '{name}' can't be set to the value of '{value}'";
    WrongTypeForVar = 1232, "42000", "Incorrect argument type to variable '{name}'";
    NotSupportedYet = 1235, "42000", "This version of zipdb doesn't yet support '{construct}'";
    IncorrectGlobalLocalVar = 1238, "HY000", "Variable '{name}' is a read only variable ({how to set it})";
    OperandColumns = 1241, "21000", "Operand should contain {n} column(s)";
    SubqueryNo1Row = 1242, "21000", "Subquery returns more than 1 row";
    UnknownStmtHandler = 1243, "HY000",
        "Unknown prepared statement handler ({id}) given to {command}";
    TablenameNotAllowedHere = 1250, "42000",
        "Table '{table}' from one of the SELECTs cannot be used in {clause}";
    WarnTooFewRecords = 1261, "01000", "Row {row} doesn't contain data for all columns";
    WarnTooManyRecords = 1262, "01000",
        "Row {row} was truncated; it contained more data than there were input columns";
    WarnNullToNotnull = 1263, "22004",
        "Column set to default value; NULL supplied to NOT NULL column '{column}' at row {row}";
    WarnDataOutOfRange = 1264, "22003", "Out of range value for column '{column}' at row {row}";
    WarnDataTruncated = 1265, "01000", "Data truncated for column '{column}' at row {row}";
    // A warning only: CREATE TABLE with another ENGINE.
    WarnUsingOtherHandler = 1266, "HY000",
        "Using storage engine zipdb for table '{table}' (ENGINE={engine} requested)";
    OptionPreventsStatement = 1290, "HY000",
        "The zipdb server is running with the {option} option so it cannot execute this \
         statement";
    TruncatedWrongValue = 1292, "22007",
        "Incorrect {type} value: '{value}' for column '{column}' at row {row}";
    SpDoesNotExist = 1305, "42000", "{what} {name} does not exist";
    QueryInterrupted = 1317, "70100", "Query execution was interrupted";
    NoDefaultForField = 1364, "HY000", "Field '{column}' doesn't have a default value";
    DivisionByZero = 1365, "22012", "Division by 0";
    TruncatedWrongValueForField = 1366, "22007",
        "Incorrect {type} value: '{value}' for column '{column}' at row {row}";
    PsManyParam = 1390, "HY000", "Prepared statement contains too many placeholders";
    CannotUser = 1396, "HY000", "Operation {op} failed for {users}";
    DataTooLong = 1406, "22001", "Data too long for column '{column}' at row {row}";
    CantCreateUserWithGrant = 1410, "42000", "You are not allowed to create a user with GRANT";
    TooBigScale = 1425, "42000", "Too big scale specified for '{column}'. Maximum is {max}";
    TooBigPrecision = 1426, "42000",
        "Too-big precision {p} specified. Maximum is 65.";
    MBiggerThanD = 1427, "42000",
        "For float(M,D), double(M,D) or decimal(M,D), M must be >= D (column '{column}')";
    StackOverrunNeedMore = 1436, "HY000", "Thread stack overrun: {detail}";
    TooBigDisplaywidth = 1439, "42000", "Display width out of range for '{column}' (max = 255)";
    DatetimeFunctionOverflow = 1441, "22008", "Datetime function: {function} field overflow";
    MaxPreparedStmtCountReached = 1461, "42000",
        "Can't create more than max_prepared_stmt_count statements (current value: {max})";
    WrongStringLength = 1470, "HY000",
        "String '{value}' is too long for {what} (should be no longer than {max})";
    TooHighLevelOfNestingForSelect = 1473, "HY000",
        "Too high level of nesting for select (more than {max})";
    PluginIsNotLoaded = 1524, "HY000", "Plugin '{name}' is not loaded";
    WrongValue = 1525, "HY000", "Incorrect {type} value: '{value}'";
    WrongParamcountToNativeFct = 1582, "42000",
        "Incorrect parameter count in the call to native function '{function}'";
    NeedReprepare = 1615, "HY000", "Prepared statement needs to be re-prepared: {detail}";
    DataOutOfRange = 1690, "22003", "{type} value is out of range";
    UnknownExplainFormat = 1791, "HY000", "Unknown EXPLAIN/ANALYZE format name: '{name}'";
    NotValidPassword = 1819, "HY000",
        "Your password does not satisfy the current policy requirements: {why}";
    TableCorrupt = 1877, "HY000", "Corrupt data: {detail}";
    DataOverflow = 1916, "22003", "Got overflow when converting '{value}' to {type}. Value truncated";
    ConnectionKilled = 1927, "70100", "Connection was killed";
    StatementTimeout = 1969, "70100",
        "Query execution was interrupted (max_statement_time exceeded)";
    QueryTimeout = 3024, "HY000",
        "Query execution was interrupted, maximum statement execution time exceeded";
    // Notes only, of CREATE USER IF NOT EXISTS / DROP USER IF EXISTS and the like.
    UserDoesNotExist = 3162, "HY000", "Authorization ID {user} does not exist.";
    UserAlreadyExists = 3163, "HY000", "Authorization ID {user} already exists.";
    WithColWrongList = 4002, "HY000",
        "WITH column list and SELECT field list have different column counts";
    // LOAD DATA LOCAL while the server's `local_infile` is OFF or the client did not offer
    // CLIENT_LOCAL_FILES (MariaDB's ER_LOAD_INFILE_CAPABILITY_DISABLED).
    LoadInfileCapabilityDisabled = 4166, "HY000",
        "The used command is not allowed because the zipdb server or client has disabled the \
         local infile capability";
    // MariaDB 11.5's errors for max_tmp_session_space_usage / max_tmp_total_space_usage.
    LocalTmpSpaceFull = 4198, "HY000", "Local temporary space limit reached: {detail}";
    GlobalTmpSpaceFull = 4199, "HY000", "Global temporary space limit reached: {detail}";
}

#[cfg(test)]
mod tests {
    use super::ErrorKind as K;
    use std::collections::BTreeSet;

    /// The (code, SQLSTATE) each kind replaced, written out again: the literals the call
    /// sites used before kinds, so that an edit to the table shows up here as a failure.
    const REPLACED: &[(K, u16, &str)] = &[
        (K::DbCreateExists, 1007, "HY000"),
        (K::DbDropExists, 1008, "HY000"),
        (K::Checkread, 1020, "HY000"),
        (K::ErrorOnRead, 1024, "HY000"),
        (K::ErrorOnWrite, 1026, "HY000"),
        (K::GetErrno, 1030, "HY000"),
        (K::DbAccessDenied, 1044, "42000"),
        (K::NoDbError, 1046, "3D000"),
        (K::BadNullError, 1048, "23000"),
        (K::BadDbError, 1049, "42000"),
        (K::TableExistsError, 1050, "42S01"),
        (K::BadTableError, 1051, "42S02"),
        (K::NonUniqError, 1052, "23000"),
        (K::BadFieldError, 1054, "42S22"),
        (K::DupFieldname, 1060, "42S21"),
        (K::DupKeyname, 1061, "42000"),
        (K::DupEntry, 1062, "23000"),
        (K::WrongFieldSpec, 1063, "42000"),
        (K::ParseError, 1064, "42000"),
        (K::EmptyQuery, 1065, "42000"),
        (K::NonuniqTable, 1066, "42000"),
        (K::InvalidDefault, 1067, "42000"),
        (K::MultiplePriKey, 1068, "42000"),
        (K::TooLongKey, 1071, "42000"),
        (K::KeyColumnDoesNotExist, 1072, "42000"),
        (K::WrongAutoKey, 1075, "42000"),
        (K::CantDropFieldOrKey, 1091, "42000"),
        (K::NoSuchThread, 1094, "HY000"),
        (K::NoTablesUsed, 1096, "HY000"),
        (K::WrongTableName, 1103, "42000"),
        (K::UnknownError, 1105, "HY000"),
        (K::InvalidGroupFuncUse, 1111, "HY000"),
        (K::TableMustHaveColumns, 1113, "42000"),
        (K::UnknownCharacterSet, 1115, "42000"),
        (K::TooManyTables, 1116, "HY000"),
        (K::TooManyFields, 1117, "HY000"),
        (K::PasswordNoMatch, 1133, "28000"),
        (K::WrongValueCountOnRow, 1136, "21S01"),
        (K::NoSuchTable, 1146, "42S02"),
        (K::NotAllowedCommand, 1148, "42000"),
        (K::NetErrorOnWrite, 1160, "08S01"),
        (K::UnknownSystemVariable, 1193, "HY000"),
        (K::TransCacheFull, 1197, "HY000"),
        (K::LockWaitTimeout, 1205, "HY000"),
        (K::WrongArguments, 1210, "HY000"),
        (K::LockDeadlock, 1213, "40001"),
        (K::WrongNumberOfColumnsInSelect, 1222, "21000"),
        (K::GlobalVariable, 1229, "HY000"),
        (K::WrongValueForVar, 1231, "42000"),
        (K::WrongTypeForVar, 1232, "42000"),
        (K::NotSupportedYet, 1235, "42000"),
        (K::IncorrectGlobalLocalVar, 1238, "HY000"),
        (K::OperandColumns, 1241, "21000"),
        (K::SubqueryNo1Row, 1242, "21000"),
        (K::UnknownStmtHandler, 1243, "HY000"),
        (K::TablenameNotAllowedHere, 1250, "42000"),
        (K::WarnTooFewRecords, 1261, "01000"),
        (K::WarnTooManyRecords, 1262, "01000"),
        (K::WarnNullToNotnull, 1263, "22004"),
        (K::WarnDataOutOfRange, 1264, "22003"),
        (K::WarnDataTruncated, 1265, "01000"),
        (K::WarnUsingOtherHandler, 1266, "HY000"),
        (K::OptionPreventsStatement, 1290, "HY000"),
        (K::TruncatedWrongValue, 1292, "22007"),
        (K::SpDoesNotExist, 1305, "42000"),
        (K::QueryInterrupted, 1317, "70100"),
        (K::NoDefaultForField, 1364, "HY000"),
        (K::DivisionByZero, 1365, "22012"),
        (K::TruncatedWrongValueForField, 1366, "22007"),
        (K::PsManyParam, 1390, "HY000"),
        (K::CannotUser, 1396, "HY000"),
        (K::DataTooLong, 1406, "22001"),
        (K::CantCreateUserWithGrant, 1410, "42000"),
        (K::TooBigScale, 1425, "42000"),
        (K::TooBigPrecision, 1426, "42000"),
        (K::MBiggerThanD, 1427, "42000"),
        (K::StackOverrunNeedMore, 1436, "HY000"),
        (K::TooBigDisplaywidth, 1439, "42000"),
        (K::DatetimeFunctionOverflow, 1441, "22008"),
        (K::MaxPreparedStmtCountReached, 1461, "42000"),
        (K::WrongStringLength, 1470, "HY000"),
        (K::TooHighLevelOfNestingForSelect, 1473, "HY000"),
        (K::PluginIsNotLoaded, 1524, "HY000"),
        (K::WrongValue, 1525, "HY000"),
        (K::WrongParamcountToNativeFct, 1582, "42000"),
        (K::NeedReprepare, 1615, "HY000"),
        (K::DataOutOfRange, 1690, "22003"),
        (K::UnknownExplainFormat, 1791, "HY000"),
        (K::NotValidPassword, 1819, "HY000"),
        (K::TableCorrupt, 1877, "HY000"),
        (K::DataOverflow, 1916, "22003"),
        (K::ConnectionKilled, 1927, "70100"),
        (K::StatementTimeout, 1969, "70100"),
        (K::QueryTimeout, 3024, "HY000"),
        (K::UserDoesNotExist, 3162, "HY000"),
        (K::UserAlreadyExists, 3163, "HY000"),
        (K::WithColWrongList, 4002, "HY000"),
        (K::LoadInfileCapabilityDisabled, 4166, "HY000"),
        (K::LocalTmpSpaceFull, 4198, "HY000"),
        (K::GlobalTmpSpaceFull, 4199, "HY000"),
    ];

    #[test]
    fn each_kind_keeps_the_code_and_sqlstate_it_replaced() {
        assert_eq!(
            REPLACED.len(),
            K::ALL.len(),
            "a kind is missing from REPLACED"
        );
        for &(k, code, state) in REPLACED {
            assert_eq!((k.code(), k.sqlstate()), (code, state), "{k:?}");
            assert_eq!(K::from_code(code), Some(k), "{k:?}");
        }
    }

    #[test]
    fn codes_are_unique_per_kind() {
        let codes: BTreeSet<u16> = K::ALL.iter().map(|k| k.code()).collect();
        assert_eq!(codes.len(), K::ALL.len());
        assert_eq!(K::from_code(9999), None);
    }

    #[test]
    fn sqlstates_are_five_characters_of_the_sqlstate_alphabet() {
        for k in K::ALL {
            let s = k.sqlstate();
            assert!(
                s.len() == 5
                    && s.bytes()
                        .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase()),
                "{k:?}: {s}"
            );
        }
    }
}
