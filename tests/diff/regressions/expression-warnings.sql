-- Warnings raised while evaluating expressions (1292 truncated numbers and dates, 1365
-- division by zero, 1441 datetime overflow), and strict INSERT/UPDATE turning them into errors.
CREATE TABLE w (a INT, c INT, d DATE);
INSERT INTO w VALUES (1, 1, '2020-01-01');
SELECT '1 '+0, ' 1'+0, ''+0, '1e'+0, '1.5x'+0, ' '+0, '0x10'+0, '1e400'+0, '-'+0, '.5'+0, '1.'+0, 'é'+0;
SELECT '1 '=1, '1x'=1.0, '1x'=1e0, 'a'<2, 2 IN ('1x',2), '2x' BETWEEN 1 AND 3;
SELECT d='xyz', d<'xyz', d>'xyz', d<=>'xyz', d='2020-01-01x', d='2020-01-01 00:00:00', d='20200101', d=20200101, d<'', d>'', d>'a', d<'a' FROM w;
SELECT d='2020-1-1', d IN ('xyz', '2020-01-01'), d > 7, d = 0 FROM w;
SELECT 1/0, 1 DIV 0, 1%0, MOD(1,0), 1.0/0, 1e0/0;
SELECT LOG2(0), LN(0), LOG(0), LOG10(-1), LOG(1,2), LOG(2, 0), SQRT(-1);
SELECT '9999-12-31' + INTERVAL 1 YEAR, DATE_ADD('9999-12-31', INTERVAL 1 DAY), ADDDATE('1000-01-01', -400000);
SELECT CAST('abc' AS SIGNED), CAST('1x' AS DECIMAL(5,2)), CAST('abc' AS DATE), CAST('2020-13-01' AS DATE), DATE('ba'), YEAR('x'), SQRT('x'), ABS('2x'), -'3x', 'x' AND 1, NOT 'x';
SELECT * FROM w WHERE c = 'abc';
SELECT * FROM w WHERE c = '1 ';
SELECT * FROM w WHERE d = 'xyz';
-- NULL on the left of XOR: the right side is not evaluated.
SELECT * FROM w WHERE (NULL = d) XOR (d > 42);
-- Constant terms are decided (and warn) once, even over an empty table; LIMIT 0 reads nothing.
CREATE TABLE e (a INT);
SELECT * FROM e WHERE DATE '2000-02-29' > 'ba';
SELECT * FROM e x JOIN w y ON x.a = y.a AND 'x' + 1 = 0;
SELECT 1/0 FROM w LIMIT 0;
-- Strict mode: INSERT and UPDATE fail on an expression warning (also in WHERE); DELETE warns.
UPDATE w SET a = 2 WHERE c = 'abc';
UPDATE w SET a = 'abc' + 1;
UPDATE w SET a = 3 WHERE d = 'xyz';
INSERT INTO w (a) SELECT 'abc' + 1;
INSERT INTO w (a) VALUES ('1x' + 1);
INSERT INTO w (a) VALUES (1/0);
INSERT IGNORE INTO w (a) VALUES ('1x' + 1), (1/0);
DELETE FROM w WHERE c = 'abc';
SELECT * FROM w ORDER BY a;
-- UPDATE reads all its rows first when it has an ORDER BY or changes the primary key: its
-- WHERE then only warns; otherwise strict mode fails on it. SET expressions always fail.
CREATE TABLE u2 (a INT PRIMARY KEY, s VARCHAR(10));
INSERT INTO u2 VALUES (1, 'ABC'), (2, '5');
UPDATE u2 SET a = 3 WHERE s > 1.5;
UPDATE u2 SET s = 'q' WHERE s > 1.5;
UPDATE u2 SET a = a + 10 WHERE s > 1.5 ORDER BY a;
UPDATE u2 SET s = 'r' WHERE s > 1.5 ORDER BY a;
UPDATE u2 SET s = s + 1 WHERE a > 0 ORDER BY a;
UPDATE IGNORE u2 SET s = 'z' WHERE s > 1.5;
SELECT * FROM u2 ORDER BY a;
-- The expression's error comes before a later row's duplicate key.
INSERT INTO u2 VALUES (100, '1x' + 1), (3, 'dup');
-- DATE(x) and CAST(x AS DATE) of a non-date compare as the zero date, though they are NULL.
SELECT DATE('x') <=> NULL, DATE('x') IS NULL, DATE('x') = DATE('y'), CAST('x' AS DATE) < DATE '2000-01-01', DATE('x') < 1, ADDDATE('x', 1) <=> NULL, DATE('x') IN (DATE('y')), CAST('x' AS DATETIME) <=> NULL, IFNULL(DATE('x'), 5), COALESCE(DATE('x')) <=> NULL;
SELECT * FROM w WHERE DATE '2023-06-16' <> CAST('0' AS DATE) ORDER BY a;
SELECT * FROM w WHERE DATE('ABC') <= DATE('É') ORDER BY a;
SELECT * FROM w WHERE CAST('HELLO' AS DATE) NOT BETWEEN d AND '2030-01-01' ORDER BY a;
SELECT SECOND('2000-01-01'), HOUR('2021-11-30 10:00:00'), HOUR('x'), MINUTE('12:30'), HOUR(DATE '2020-01-01');
UPDATE w SET c = 5 WHERE SECOND('2021-11-30') <=> c;
-- The select list is computed only for the rows ORDER BY ... LIMIT sends: no error or warning
-- from the others.
CREATE TABLE s (k INT PRIMARY KEY, a INT UNSIGNED, b INT UNSIGNED, t VARCHAR(5));
INSERT INTO s VALUES (1, 5, 2, 'x'), (2, 1, 9, '7'), (3, 0, 4, 'y');
SELECT k, a - b FROM s ORDER BY a DESC LIMIT 1;
SELECT k, t + 0 FROM s ORDER BY k DESC LIMIT 1 OFFSET 1;
SELECT k, a - b FROM s ORDER BY a DESC LIMIT 2;
