-- A NOT NULL column without DEFAULT that an INSERT does not name: strict mode fails with
-- 1364 before any row; IGNORE warns once per statement and column and stores the implicit
-- default (0, '', the zero date). DEFAULT for such a column warns per row. A column that ON
-- DUPLICATE KEY UPDATE assigns counts as named: it takes the implicit default silently.
CREATE TABLE t (a INT PRIMARY KEY, b INT NOT NULL, c VARCHAR(3) NOT NULL, d DATE NOT NULL, e DECIMAL(5,2) NOT NULL, f INT NOT NULL DEFAULT 5);
INSERT INTO t (a) VALUES (1);
INSERT INTO t (a, b) VALUES (1, NULL), (2, 300);
INSERT IGNORE INTO t (a) VALUES (1), (2);
SHOW WARNINGS;
INSERT IGNORE INTO t (a, b, c, d, e) VALUES (3, DEFAULT, 'x', '2020-01-01', 1), (4, DEFAULT, 'y', '2020-01-02', 2);
SHOW WARNINGS;
INSERT IGNORE INTO t (a) SELECT 5;
SELECT * FROM t ORDER BY a;
CREATE TABLE t1 (t1_a INT NOT NULL, t1_b INT, t1_c VARCHAR(3), PRIMARY KEY (t1_a));
INSERT INTO t1 (t1_b) VALUES (5) ON DUPLICATE KEY UPDATE t1_b = 6;
INSERT INTO t1 (t1_b) VALUES ('-2'), ('a'), ('0') ON DUPLICATE KEY UPDATE t1_a = -999999.9999;
INSERT INTO t1 (t1_c) VALUES ('-'), (NULL), ('0'), ('a') ON DUPLICATE KEY UPDATE t1_c = 'b', t1_a = t1_a + 1;
SELECT * FROM t1 ORDER BY t1_a;
