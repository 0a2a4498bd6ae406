//! The scalar functions by the names queries call them by, synonyms included.

use crate::expr::func::control::{Coalesce, Extreme, If, IsNull, NullIf};
use crate::expr::func::encode::{
    Crc32, Digest, FromBase64, Hash, InetAton, InetNtoa, Sha2, ToBase64,
};
use crate::expr::func::math::{
    Abs, Base, CeilFloor, Exp, Log, Pi, Pow, Rand, Round, Sign, Sqrt, Trig, Truncate, Unary,
};
use crate::expr::func::parts::{
    DateField, DatePart, DayField, DayOf, MonthOf, TimeField, TimePart, Week,
};
use crate::expr::func::string::{
    Ascii, Case, CharLength, Concat, ConcatWs, Edge, Elt, Field, Format, Hex, Length, Locate, Pad,
    Repeat, Replace, Reverse, Side, Space, Strcmp, Substring, SubstringIndex, Trim,
};
use crate::expr::func::system::{Session, SessionValue, Sleep, Uuid};
use crate::expr::func::temporal::{
    CurDate, CurTime, Date, DateDiff, DateFormat, FromUnixtime, LastDay, MakeDate, Now, StrToDate,
    UnixTimestamp,
};
use crate::expr::node::Func;

/// Every built-in scalar function by name (upper case), synonyms included. The functions
/// whose calls are not plain argument lists (DATE_ADD with an INTERVAL, TIMESTAMPDIFF with a
/// unit) and the names compiled to something else (MOD, INSTR) are the binder's.
pub(crate) const FUNCTIONS: &[(&str, fn() -> Func)] = &[
    ("CONCAT", || Func::new(Concat)),
    ("CONCAT_WS", || Func::new(ConcatWs)),
    ("LENGTH", || Func::new(Length)),
    ("OCTET_LENGTH", || Func::new(Length)),
    ("CHAR_LENGTH", || Func::new(CharLength)),
    ("CHARACTER_LENGTH", || Func::new(CharLength)),
    ("UPPER", || Func::new(Case { upper: true })),
    ("UCASE", || Func::new(Case { upper: true })),
    ("LOWER", || Func::new(Case { upper: false })),
    ("LCASE", || Func::new(Case { upper: false })),
    ("SUBSTRING", || Func::new(Substring)),
    ("SUBSTR", || Func::new(Substring)),
    ("MID", || Func::new(Substring)),
    ("TRIM", || Func::new(Trim(Side::Both))),
    ("LTRIM", || Func::new(Trim(Side::Leading))),
    ("RTRIM", || Func::new(Trim(Side::Trailing))),
    ("REPLACE", || Func::new(Replace)),
    ("LEFT", || Func::new(Edge { left: true })),
    ("RIGHT", || Func::new(Edge { left: false })),
    ("REPEAT", || Func::new(Repeat)),
    ("REVERSE", || Func::new(Reverse)),
    ("LPAD", || Func::new(Pad { left: true })),
    ("RPAD", || Func::new(Pad { left: false })),
    ("LOCATE", || Func::new(Locate)),
    ("SUBSTRING_INDEX", || Func::new(SubstringIndex)),
    ("SPACE", || Func::new(Space)),
    ("ASCII", || Func::new(Ascii)),
    ("FORMAT", || Func::new(Format)),
    ("STRCMP", || Func::new(Strcmp)),
    ("HEX", || Func::new(Hex)),
    ("FIELD", || Func::new(Field)),
    ("ELT", || Func::new(Elt)),
    ("ABS", || Func::new(Abs)),
    ("CEIL", || Func::new(CeilFloor { up: true })),
    ("CEILING", || Func::new(CeilFloor { up: true })),
    ("FLOOR", || Func::new(CeilFloor { up: false })),
    ("ROUND", || Func::new(Round)),
    ("TRUNCATE", || Func::new(Truncate)),
    ("SIGN", || Func::new(Sign)),
    ("SQRT", || Func::new(Sqrt)),
    ("POW", || Func::new(Pow)),
    ("POWER", || Func::new(Pow)),
    ("EXP", || Func::new(Exp)),
    ("LN", || Func::new(Log(Base::E))),
    ("LOG", || Func::new(Log(Base::Any))),
    ("LOG2", || Func::new(Log(Base::Two))),
    ("LOG10", || Func::new(Log(Base::Ten))),
    ("PI", || Func::new(Pi)),
    ("DEGREES", || Func::new(Trig(Unary::Degrees))),
    ("RADIANS", || Func::new(Trig(Unary::Radians))),
    ("SIN", || Func::new(Trig(Unary::Sin))),
    ("COS", || Func::new(Trig(Unary::Cos))),
    ("TAN", || Func::new(Trig(Unary::Tan))),
    ("RAND", || Func::new(Rand)),
    ("COALESCE", || Func::new(Coalesce { ifnull: false })),
    ("IFNULL", || Func::new(Coalesce { ifnull: true })),
    ("NULLIF", || Func::new(NullIf)),
    ("IF", || Func::new(If)),
    ("GREATEST", || Func::new(Extreme { greatest: true })),
    ("LEAST", || Func::new(Extreme { greatest: false })),
    ("ISNULL", || Func::new(IsNull)),
    ("NOW", || Func::new(Now)),
    ("CURRENT_TIMESTAMP", || Func::new(Now)),
    ("SYSDATE", || Func::new(Now)),
    ("LOCALTIME", || Func::new(Now)),
    ("LOCALTIMESTAMP", || Func::new(Now)),
    ("UTC_TIMESTAMP", || Func::new(Now)),
    ("CURDATE", || Func::new(CurDate)),
    ("CURRENT_DATE", || Func::new(CurDate)),
    ("UTC_DATE", || Func::new(CurDate)),
    ("CURTIME", || Func::new(CurTime)),
    ("CURRENT_TIME", || Func::new(CurTime)),
    ("UTC_TIME", || Func::new(CurTime)),
    ("DATE", || Func::new(Date)),
    ("YEAR", || Func::new(DatePart(DateField::Year))),
    ("MONTH", || Func::new(DatePart(DateField::Month))),
    ("DAY", || Func::new(DatePart(DateField::Day))),
    ("DAYOFMONTH", || Func::new(DatePart(DateField::Day))),
    ("HOUR", || Func::new(TimePart(TimeField::Hour))),
    ("MINUTE", || Func::new(TimePart(TimeField::Minute))),
    ("SECOND", || Func::new(TimePart(TimeField::Second))),
    ("DAYOFWEEK", || Func::new(DayOf(DayField::OfWeek))),
    ("WEEKDAY", || Func::new(DayOf(DayField::Weekday))),
    ("DAYOFYEAR", || Func::new(DayOf(DayField::DayOfYear))),
    ("DAYNAME", || Func::new(DayOf(DayField::DayName))),
    ("MONTHNAME", || Func::new(MonthOf { name: true })),
    ("QUARTER", || Func::new(MonthOf { name: false })),
    ("WEEK", || Func::new(Week)),
    ("DATEDIFF", || Func::new(DateDiff)),
    ("UNIX_TIMESTAMP", || Func::new(UnixTimestamp)),
    ("FROM_UNIXTIME", || Func::new(FromUnixtime)),
    ("LAST_DAY", || Func::new(LastDay)),
    ("MAKEDATE", || Func::new(MakeDate)),
    ("DATE_FORMAT", || Func::new(DateFormat)),
    ("STR_TO_DATE", || Func::new(StrToDate)),
    ("MD5", || Func::new(Hash(Digest::Md5))),
    ("SHA1", || Func::new(Hash(Digest::Sha1))),
    ("SHA", || Func::new(Hash(Digest::Sha1))),
    ("SHA2", || Func::new(Sha2)),
    ("CRC32", || Func::new(Crc32)),
    ("TO_BASE64", || Func::new(ToBase64)),
    ("FROM_BASE64", || Func::new(FromBase64)),
    ("INET_ATON", || Func::new(InetAton)),
    ("INET_NTOA", || Func::new(InetNtoa)),
    ("DATABASE", || Func::new(Session(SessionValue::Database))),
    ("SCHEMA", || Func::new(Session(SessionValue::Database))),
    ("USER", || Func::new(Session(SessionValue::User))),
    ("CURRENT_USER", || Func::new(Session(SessionValue::User))),
    ("SESSION_USER", || Func::new(Session(SessionValue::User))),
    ("SYSTEM_USER", || Func::new(Session(SessionValue::User))),
    ("VERSION", || Func::new(Session(SessionValue::Version))),
    ("CONNECTION_ID", || {
        Func::new(Session(SessionValue::ConnectionId))
    }),
    ("LAST_INSERT_ID", || {
        Func::new(Session(SessionValue::LastInsertId))
    }),
    ("SLEEP", || Func::new(Sleep)),
    ("UUID", || Func::new(Uuid)),
];

/// The function a query calls by `name` (upper case), if zipdb has one.
pub(crate) fn lookup(name: &str) -> Option<Func> {
    FUNCTIONS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, make)| make())
}
