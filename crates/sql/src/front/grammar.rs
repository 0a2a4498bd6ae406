//! What the grammars of the MySQL statements sqlparser lacks (SHOW, accounts, ...) share: the
//! statement's tokens, sqlparser's `Parser` over them, and MySQL's 1064 quoted from where
//! reading stopped.

use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::SqlError;

/// The text's tokens, trailing `;`s dropped (one in the middle is an error quoted from
/// there). A `/*` comment left open runs to the end of the text, as MariaDB reads it (the
/// tokenizer refuses it).
pub(crate) fn tokens(sql: &str) -> Result<Vec<TokenWithSpan>, SqlError> {
    let run = |text: &str| {
        Tokenizer::new(&MySqlDialect {}, text)
            .with_unescape(true)
            .tokenize_with_location()
    };
    let mut tokens = match run(sql) {
        Ok(t) => t,
        Err(e) if e.message.contains("multi-line comment") => {
            run(&format!("{sql}*/")).map_err(|e| tokenizer_error(sql, e))?
        }
        Err(e) => return Err(tokenizer_error(sql, e)),
    };
    while matches!(
        tokens.last().map(|t| &t.token),
        Some(Token::SemiColon | Token::Whitespace(_))
    ) {
        tokens.pop();
    }
    Ok(tokens)
}

/// sqlparser's `Parser` on `tokens`, in the MySQL dialect.
pub(crate) fn parser(tokens: Vec<TokenWithSpan>) -> Parser<'static> {
    Parser::new(&MySqlDialect {})
        .with_recursion_limit(crate::front::depth::PARSE_DEPTH_MAX)
        .with_tokens_with_locations(tokens)
}

fn tokenizer_error(sql: &str, e: sqlparser::tokenizer::TokenizerError) -> SqlError {
    crate::front::parse::syntax_error(sql, &ParserError::TokenizerError(e.to_string()))
}

/// MySQL's 1064 for a parser error: quoted from its place, or `''` at the end of the text.
pub(crate) fn syntax(sql: &str, e: &ParserError) -> SqlError {
    match e {
        ParserError::RecursionLimitExceeded => crate::front::depth::too_deep(),
        // The end of the text has no place: MySQL quotes nothing, on the last line.
        e if e.to_string().ends_with("found: EOF") => {
            SqlError::syntax("", sql.trim_end().lines().count().max(1) as u64)
        }
        e => crate::front::parse::syntax_error(sql, e),
    }
}

/// A statement's reader: the parser and the text it reads, for quoting errors.
pub(crate) struct Grammar<'p, 's> {
    pub p: &'p mut Parser<'s>,
    pub sql: &'s str,
    /// Appended to a 1064 as `(construct: expected ...)` when set: the account statements
    /// have always named what they were reading.
    pub construct: Option<&'static str>,
}

impl<'p, 's> Grammar<'p, 's> {
    pub fn new(p: &'p mut Parser<'s>, sql: &'s str) -> Self {
        Grammar {
            p,
            sql,
            construct: None,
        }
    }

    /// 1064 at the next token.
    pub fn fail<T>(&mut self, expected: &str) -> Result<T, SqlError> {
        let found = self.p.peek_token();
        // The parser's own wording, so that `syntax` finds the place in it.
        let e = ParserError::ParserError(format!(
            "Expected: {expected}, found: {found}{}",
            found.span.start
        ));
        let e = syntax(self.sql, &e);
        match self.construct {
            None => Err(e),
            Some(c) => Err(SqlError::of(
                crate::error::ErrorKind::ParseError,
                format!("{} ({c}: expected {expected})", e.message()),
            )),
        }
    }

    /// The next token's word, upper-cased, when it is an unquoted word. Keywords sqlparser
    /// lacks (WARNINGS, ENGINES, ...) are read this way too.
    pub fn peek_word(&self) -> Option<String> {
        match &self.p.peek_token_ref().token {
            Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
            _ => None,
        }
    }

    /// Consumes the next token when it is the unquoted word `word`.
    pub fn word(&mut self, word: &str) -> bool {
        let hit = self.peek_word().is_some_and(|w| w == word);
        if hit {
            self.p.next_token();
        }
        hit
    }

    pub fn expect_word(&mut self, word: &str) -> Result<(), SqlError> {
        if self.word(word) {
            Ok(())
        } else {
            self.fail(word)
        }
    }

    /// A name: a word, plain or in backticks (a string literal is not one, as in MySQL).
    pub fn name(&mut self) -> Result<String, SqlError> {
        match &self.p.peek_token_ref().token {
            Token::Word(w) => {
                let v = w.value.clone();
                self.p.next_token();
                Ok(v)
            }
            _ => self.fail("a name"),
        }
    }

    pub fn string(&mut self) -> Result<String, SqlError> {
        match &self.p.peek_token_ref().token {
            Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => {
                let v = s.clone();
                self.p.next_token();
                Ok(v)
            }
            _ => self.fail("a string"),
        }
    }

    /// Nothing may follow the statement.
    pub fn end(&mut self) -> Result<(), SqlError> {
        if self.p.peek_token_ref().token == Token::EOF {
            Ok(())
        } else {
            self.fail("end of statement")
        }
    }
}
