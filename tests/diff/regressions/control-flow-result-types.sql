-- IF/IFNULL/COALESCE/CASE/LEAST/GREATEST and UNION columns have one type for all their
-- operands, and every value prints as that type: an INT operand beside a DECIMAL one prints
-- with the DECIMAL's scale (found by the random run: `CASE ... THEN 4807 ...` printed 4807
-- where MariaDB prints 4807.0, SUM(LEAST(453, 0.1)) added integers). '@types' compares the
-- wire types and DECIMAL scales as well as the values.
CREATE TABLE t (id INT PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, i INT, iu INT UNSIGNED, bi BIGINT, bu BIGINT UNSIGNED, d1 DECIMAL(5,1), d2 DECIMAL(10,2), d0 DECIMAL(20,0), d10 DECIMAL(30,10), db DOUBLE, vc VARCHAR(10), ch CHAR(5), dt DATE, dtm DATETIME);
INSERT INTO t VALUES (1, -2, 200, 300, -5, 7, 9000000000, 18000000000000000000, 1.5, 12.25, 123456789012345678, 1.1234567891, 1.25, 'abc', 'xy', '2020-01-02', '2020-01-02 03:04:05');
INSERT INTO t VALUES (2, -128, 0, NULL, 0, NULL, NULL, 0, NULL, -999.99, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO t VALUES (3, 127, 255, -32768, -2147483648, 4294967295, -9223372036854775808, 1, -9999.9, 99999999.99, -1, -0.5, 1e300, '10', '7', '1999-12-31', '1999-12-31 23:59:59');
-- An INT operand beside a DECIMAL: the DECIMAL's scale, the largest of all.
-- @types
SELECT id, IF(i, 6543.6, 4807), IF(i, ti, d1), IF(i, 0, d2), IFNULL(ti, 999999.99), COALESCE(NULL, ti, d1, d2) FROM t ORDER BY id;
-- @types
SELECT id, CASE WHEN i THEN 6543.6 WHEN ti THEN 4807 ELSE 37.0 END, CASE id WHEN 1 THEN ti WHEN 2 THEN d2 ELSE 4.5 END, CASE WHEN i THEN ti END FROM t ORDER BY id;
-- @types
SELECT id, IF(i > 0, IF(ti, 999999.99, 999999.99), i), LEAST(CASE WHEN i THEN 841006.5 WHEN ti THEN -999999.99 ELSE 0 END, CEIL(i)) FROM t ORDER BY id;
-- Integers: the widest; signed with UNSIGNED is a DECIMAL(n,0); literals up to 9 characters are INT.
-- @types
SELECT id, IF(i, ti, si), IF(i, ti, i), IF(i, tu, iu), IF(i, ti, tu), IF(i, bi, bu), IF(i, ti, 5), IF(i, bi, i), IF(i, bu, 18446744073709551615), COALESCE(ti, si, i) FROM t ORDER BY id;
-- DOUBLE with any number is a DOUBLE (the DECIMAL prints as a double); a string makes a string.
-- @types
SELECT id, IF(i, d1, db), IF(i, ti, db), IF(id = 1, 1.50, 1e0), IF(i, i, vc), IF(i, d2, vc), IF(i, db, vc), IFNULL(vc, 1.50) FROM t ORDER BY id;
-- Temporals: DATE with DATETIME is a DATETIME; a temporal with a number is a string.
-- @types
SELECT id, IF(i, dt, dtm), IF(i, dt, i), IF(i, dt, NULL), CASE WHEN i THEN dt WHEN 1 THEN dtm END, COALESCE(dt, dtm) FROM t ORDER BY id;
-- NULL literals take no part (IF of two NULLs is an empty string, CASE of NULLs the NULL type).
-- @types
SELECT id, IF(i, 1.5, NULL), IF(i, NULL, ti), IF(i, NULL, NULL), CASE WHEN i THEN NULL END, COALESCE(NULL, NULL), NULLIF(NULL, 1), NULL FROM t ORDER BY id;
-- NULLIF has its first operand's type.
-- @types
SELECT id, NULLIF(ti, d1), NULLIF(d1, ti), NULLIF(ti, 1.5), NULLIF(vc, 1), NULLIF(dt, dtm) FROM t ORDER BY id;
-- LEAST/GREATEST compare in the type they return: a number with a string is a DOUBLE, a DATE
-- with a number or string a DATE (invalid ones are the zero date).
-- @types
SELECT id, LEAST(ti, 9921.3), LEAST(ti, tu), LEAST(ti, si), LEAST(d1, d2, i), GREATEST(iu, bu), LEAST(iu, 5), GREATEST(ti, db) FROM t ORDER BY id;
-- @types
SELECT id, LEAST(ti, vc), GREATEST(i, '5'), LEAST(1.5, '5'), LEAST(vc, ch), LEAST(dt, dtm), LEAST(dt, 20200101), GREATEST(dtm, '2020-01-01'), LEAST(db, d1) FROM t ORDER BY id;
-- @types
SELECT id, LEAST(ti, NULL), LEAST(vc, NULL), LEAST(dt, NULL), LEAST(NULL, NULL) FROM t ORDER BY id;
SELECT LEAST(DATE '2020-01-01', '2019-01-01 10:00:00'), GREATEST(DATE '2020-01-01', '2019-01-01'), LEAST(DATE '2020-01-01', 'abc');
-- Aggregates over them add and compare the common type.
-- @types
SELECT MIN(IFNULL(ti, 999999.99)), SUM(LEAST(453, 0.1)), MAX(IF(i, ti, d1)), AVG(COALESCE(ti, 1.5)), SUM(IF(i, 1, 0.5)), MIN(LEAST(ti, 9921.3)), MAX(CASE WHEN i THEN 4807 ELSE 37.0 END) FROM t;
-- @types
SELECT id, SUM(IF(i, ti, d2)), MAX(COALESCE(d1, i)) FROM t GROUP BY id ORDER BY id;
-- UNION columns follow the same rules.
-- @types
SELECT ti FROM t UNION ALL SELECT tu FROM t ORDER BY 1;
-- @types
SELECT ti FROM t UNION ALL SELECT d1 FROM t UNION ALL SELECT d2 FROM t ORDER BY 1;
-- @types
SELECT i FROM t UNION ALL SELECT iu FROM t ORDER BY 1;
-- @types
SELECT d1 FROM t UNION ALL SELECT db FROM t ORDER BY 1;
-- @types
SELECT dt FROM t UNION ALL SELECT dtm FROM t ORDER BY 1;
-- @types
SELECT 4807 FROM t UNION ALL SELECT d1 FROM t ORDER BY 1;
-- @types
SELECT NULL FROM t UNION ALL SELECT d1 FROM t ORDER BY 1;
-- @types
SELECT YEAR(NULL) FROM t UNION ALL SELECT IF(vc > 'x', -11, d2) FROM t UNION ALL SELECT LEAST(i, i) FROM t ORDER BY 1;
-- @types
SELECT 42 FROM t UNION ALL SELECT ROUND(2.49) FROM t UNION ALL SELECT ROUND(d2, 1) FROM t ORDER BY 1;
-- @types
SELECT d1 FROM t UNION SELECT ti FROM t UNION SELECT 1.25 ORDER BY 1;
-- DISTINCT and ORDER BY compare a UNION column's values as its type: 'abc' and 0 are two
-- strings, and '5' sorts before 'abc'.
-- @types
SELECT vc FROM t UNION SELECT i FROM t ORDER BY 1;
SELECT vc AS x FROM t UNION SELECT i FROM t ORDER BY x DESC;
SELECT dt FROM t UNION ALL SELECT vc FROM t ORDER BY 1;
SELECT d1 FROM t INTERSECT SELECT 1.50;
-- ROUND of a DECIMAL to constant places has that scale; of a DOUBLE, halves go to even.
-- @types
SELECT ROUND(2.49), ROUND(2.49, 1), ROUND(-999999.99), ROUND(1.5, 3), ROUND(0.5e0), ROUND(-0.5e0), ROUND(2.5e0), ROUND(15e0, -1), ROUND(-2.5e0);
-- DIV of DECIMALs is exact (a double lost the last digits near 1e16).
SELECT 12345678901234567.5 DIV 1, 9999999999999999.99 DIV 0.01, 12345678901234567890.1 DIV 2, -7.5 DIV 2, d0 DIV 7 FROM t ORDER BY id;
SELECT 9223372036854775808.5 DIV 1;
-- HEX of a number is of the integer it rounds to (HEX(LEAST(decimal_col, 2147483647)) hexed
-- the DECIMAL's text).
SELECT HEX(297380.08), HEX(-11.00), HEX(1.5e0), HEX(1e300), HEX(2.5), HEX(-0.5), HEX(18446744073709551615), HEX(LEAST(d2, 2147483647)) FROM t ORDER BY id;
-- A number as a date: YYMMDD, YYYYMMDD, YYMMDDHHMMSS, YYYYMMDDHHMMSS, 0 the zero date.
SELECT CAST(20000101 AS DATE), CAST(991231 AS DATE), CAST(101 AS DATE), CAST(0 AS DATE), CAST(1000101 AS DATE), CAST(20000230 AS DATE), CAST(20000100 AS DATE), CAST(20000101.9 AS DATE), CAST(-1 AS DATE);
SELECT CAST(991231235959 AS DATETIME), CAST(20000101123456 AS DATETIME), CAST(200001011 AS DATETIME), CAST(20000101246060 AS DATETIME), CAST(i AS DATE) FROM t ORDER BY id;
