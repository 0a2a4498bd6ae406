-- Notes 1265 (never errors, counted in Warnings): a DECIMAL rounded to its scale (doubles
-- through their shortest digits), numbers followed by spaces, strings losing trailing
-- spaces (not CHAR), a DATE losing its time of day. Out of range after rounding is 1264.
CREATE TABLE t (k INT PRIMARY KEY, d DECIMAL(5,1), i INT, v VARCHAR(3), ch CHAR(3), dt DATE, x DATETIME, f DOUBLE);
INSERT INTO t (k, d) VALUES (1, 1.55);
SHOW WARNINGS;
INSERT INTO t (k, d) VALUES (2, 1.45e0), (3, -0.05), (4, -0.04), (5, 1e-300), (6, '1.25e0'), (7, ' 1.55 ');
SHOW WARNINGS;
INSERT INTO t (k, d) VALUES (8, 1.50), (9, '1.500000'), (10, 12);
INSERT INTO t (k, d) VALUES (11, 9999.95);
INSERT INTO t (k, d) VALUES (11, 9999.94);
INSERT INTO t (k, i) VALUES (12, '  12  '), (13, '12 '), (14, ' 12'), (15, 1.5), (16, '1.5'), (17, 2.5e0), (18, '2.5e0');
SHOW WARNINGS;
INSERT INTO t (k, f) VALUES (19, ' 12 '), (20, '1.5');
INSERT INTO t (k, v, ch) VALUES (21, 'abc  ', 'abc  '), (22, 'ab    ', 'ab    ');
SHOW WARNINGS;
INSERT INTO t (k, dt, x) VALUES (23, '2020-01-01 10:11:12', '2020-01-01 10:11:12.5'), (24, '2020-01-01 00:00:00.5', '2020-01-01 10:11:12.1234567');
INSERT INTO t (k, dt) VALUES (25, TIMESTAMP '2020-01-01 10:11:12'), (26, 20200101), (27, '20-1-1'), (28, '2020/01/02');
SHOW WARNINGS;
UPDATE t SET d = 1.55 WHERE k <= 3;
UPDATE t SET d = d WHERE k <= 3;
REPLACE INTO t (k, d) VALUES (1, 2.25);
INSERT INTO t (k, d) VALUES (1, 3.35) ON DUPLICATE KEY UPDATE d = 4.45;
SHOW WARNINGS;
SELECT * FROM t ORDER BY k;
-- DEFAULTs round the same way, with a note at CREATE TABLE ("at row 0"); a string default
-- cut even of spaces is refused.
CREATE TABLE dd (a DECIMAL(5,1) DEFAULT 1.55, c INT DEFAULT '12 ', d DATE DEFAULT '2020-01-01 10:00:00', e INT DEFAULT 1.5);
SHOW WARNINGS;
CREATE TABLE dd2 (v VARCHAR(3) DEFAULT 'abc  ');
CREATE TABLE dd3 (a DECIMAL(5,1) DEFAULT 123456);
INSERT INTO dd (e) VALUES (7);
SELECT * FROM dd;
