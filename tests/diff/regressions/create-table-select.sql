-- CREATE TABLE ... SELECT: the table takes the query's result columns and rows; keys may be
-- declared beside the query; IF NOT EXISTS on an existing table is a note and inserts nothing;
-- a failing insert (a duplicate in the declared key) leaves no table; the query is compiled
-- before the table exists (it cannot read it).
CREATE TABLE src (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(10), d DECIMAL(6,2));
INSERT INTO src VALUES (1, 10, 'a', 1.50), (2, 20, NULL, 2.25), (3, 10, 'c', NULL);
CREATE TABLE t1 SELECT * FROM src;
SELECT * FROM t1 ORDER BY id;
SHOW COLUMNS FROM t1;
CREATE TABLE t2 AS SELECT k, COUNT(*) AS n, SUM(d) AS total FROM src GROUP BY k;
SELECT * FROM t2 ORDER BY k;
CREATE TABLE t3 (PRIMARY KEY (id), KEY kk (k)) SELECT id, k FROM src WHERE id > 1;
SELECT * FROM t3 ORDER BY id;
INSERT INTO t3 VALUES (2, 0);
CREATE TABLE IF NOT EXISTS t3 SELECT 9 AS id, 9 AS k;
SHOW WARNINGS;
SELECT COUNT(*) FROM t3;
CREATE TABLE t4 (PRIMARY KEY (k)) SELECT k FROM src;
SELECT * FROM t4;
CREATE TABLE t5 SELECT * FROM t5;
CREATE TABLE t6 SELECT id, id FROM src;
CREATE TABLE t7 SELECT id FROM src WHERE 0;
SELECT COUNT(*) FROM t7;
INSERT INTO t7 VALUES (5);
SELECT * FROM t7;
