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

    /// ER_EMPTY_QUERY (1065).
    pub fn empty() -> SqlError {
        SqlError {
            code: 1065,
            sqlstate: "42000",
            message: "Query was empty".to_string(),
        }
    }
}
