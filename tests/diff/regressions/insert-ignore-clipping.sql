-- INSERT IGNORE stores what MariaDB stores where strict mode fails: values clipped to the
-- type's range (1264), text after a number cut (1265), no number at all as 0 (1366), strings
-- cut at the length (1265, where strict says 1406), bad dates as the zero date (1265, where
-- strict says 1292), NULL in NOT NULL as the implicit default (1048). Each a warning.
CREATE TABLE t (k INT PRIMARY KEY, i INT, d DECIMAL(5,1), c VARCHAR(3), dt DATE, ti TINYINT NOT NULL DEFAULT 0, u INT UNSIGNED, x DATETIME, f DOUBLE);
INSERT IGNORE INTO t (k, i, d, c, dt, ti, u) VALUES (1, 'abc', 123456, 'abcdef', 'xyz', NULL, -5);
SHOW WARNINGS;
INSERT IGNORE INTO t (k, dt) VALUES (2, '2020-02-30');
INSERT IGNORE INTO t (k, i) VALUES (3, '12abc');
INSERT IGNORE INTO t (k, i, ti) VALUES (4, 1, NULL), (5, 2, 300);
SHOW WARNINGS;
INSERT IGNORE INTO t (k, i, d, u) VALUES (6, '', '1.5.5', '4294967296'), (7, ' ', '-', 1e10);
SHOW WARNINGS;
INSERT IGNORE INTO t (k, x, dt) VALUES (8, '2023-01-01 25:00:00', '2020-01-01 10:11:12x');
INSERT IGNORE INTO t (k, d, f) VALUES (9, '1.55x', '1e400'), (10, '123456abc', '1.5x');
SHOW WARNINGS;
INSERT IGNORE INTO t (k, c, i) VALUES (11, 'abcd ', 2147483648), (12, 12345, -2147483649);
INSERT IGNORE INTO t (k, dt, x) VALUES (13, '0000-00-00', '0000-00-00 00:00:00'), (14, '2020-00-00', 0);
-- Duplicates and clipped values together: Duplicates counts the skipped rows.
INSERT IGNORE INTO t (k, ti) VALUES (1, 1), (15, 1000), (15, 2);
SHOW WARNINGS;
SELECT * FROM t ORDER BY k;
-- The same values fail a strict statement, each with its own error.
INSERT INTO t (k, i) VALUES (20, 'abc');
INSERT INTO t (k, i) VALUES (20, '12abc');
INSERT INTO t (k, c) VALUES (20, 'abcdef');
INSERT INTO t (k, dt) VALUES (20, '2020-02-30');
INSERT INTO t (k, dt) VALUES (20, '2020-01-01abc');
INSERT INTO t (k, ti) VALUES (20, 300);
INSERT INTO t (k, ti) VALUES (20, NULL);
INSERT INTO t (k, ti) VALUES (20, 1), (21, NULL);
INSERT INTO t (k, d) VALUES (20, '1.55x');
INSERT INTO t (k, f) VALUES (20, 'inf');
REPLACE INTO t (k, u) VALUES (1, -1);
INSERT INTO t (k) VALUES (1) ON DUPLICATE KEY UPDATE ti = 300;
INSERT IGNORE INTO t (k) VALUES (1) ON DUPLICATE KEY UPDATE ti = 300, c = 'abcdef';
SELECT * FROM t ORDER BY k;
