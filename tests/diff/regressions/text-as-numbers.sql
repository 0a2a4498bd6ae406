-- Text read as a number by the one scanner (issue 20 T2), where expression context and column
-- storage used to read it differently: tabs and newlines after a number are spaces (a note),
-- spaces before it are ASCII only, a binary string that is not UTF-8 still has its numeric
-- prefix, CAST AS SIGNED/UNSIGNED and integer arguments read sign and digits only (a point or
-- an exponent ends them, big integers stay exact, out-of-range ones wrap with a note), and
-- DECIMAL reads text exactly; integers CAST across the sign wrap (as UNSIGNED with the note). The
-- harness compares each statement's warnings.
SELECT '1\t' + 0, '2\n' + 0, ' 3 ' + 0, '\t4' + 0;
SELECT CONCAT(_utf8mb4 X'C2A0', '12') + 0, CONCAT(_utf8mb4 X'E38080', '-1.5') + 0;
SELECT X'3132FF' + 0, CAST(X'3132FF' AS SIGNED), CAST(X'312E35FF' AS DECIMAL(10,2));
SELECT CAST('1.5' AS SIGNED), CAST('-1.9' AS SIGNED), CAST('1e3' AS SIGNED), CAST(' 12 ' AS SIGNED),
  CAST('12x' AS SIGNED), CAST('.5' AS SIGNED), CAST('' AS SIGNED), CAST('-' AS SIGNED);
SELECT CAST('9007199254740993' AS SIGNED), CAST('9223372036854775807' AS SIGNED),
  CAST('-9223372036854775808' AS SIGNED), CAST('-9223372036854775809' AS SIGNED);
SELECT CAST('18446744073709551615' AS SIGNED);
SELECT CAST('99999999999999999999' AS SIGNED);
SELECT CAST('18446744073709551615' AS UNSIGNED), CAST('18446744073709551616' AS UNSIGNED),
  CAST('2.5' AS UNSIGNED);
SELECT CAST('-1' AS UNSIGNED);
SELECT CAST('-1.5' AS UNSIGNED);
SELECT CAST('1.2345678x' AS DECIMAL(20,10)), CAST('-9007199254740993x' AS DECIMAL(20,2)),
  CAST('1.5e-3' AS DECIMAL(10,4)), CAST(' 1.5 ' AS DECIMAL(10,2)), CAST('1.555' AS DECIMAL(10,2));
SELECT CAST('0e99999' AS DECIMAL(10,2)), CAST('0e99999' AS DOUBLE), '0e99999' + 0;
SELECT '1.5' DIV 1, '1e3' DIV 7, ' 12' DIV 5, '12x' DIV 5;
CREATE TABLE tn (id INT PRIMARY KEY, ti TINYINT, iu INT UNSIGNED, d DOUBLE, m DECIMAL(10,2));
INSERT IGNORE INTO tn VALUES (1, '1\t', '2\n', '3\t', '4.5\n');
INSERT IGNORE INTO tn VALUES (2, X'3132FF', X'3132FF', X'3132FF', X'3132FF');
INSERT IGNORE INTO tn VALUES (3, '0e100', '0e100', '0e99999', '0e99999');
INSERT IGNORE INTO tn VALUES (4, '1.5', '2.5', '1e3', '1.005');
SELECT * FROM tn ORDER BY id;
SELECT id FROM tn WHERE ti = '1\t' ORDER BY id;
SELECT CAST(18446744073709551615 AS SIGNED), CAST(9223372036854775808 AS SIGNED);
SELECT CAST(-1 AS UNSIGNED);
SELECT CAST(-9223372036854775808 AS UNSIGNED);
