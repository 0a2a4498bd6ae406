-- CEIL/FLOOR of a DECIMAL are exact (not through a double); CAST of a negative DECIMAL or
-- DOUBLE to UNSIGNED clips to 0, a negative integer wraps.
CREATE TABLE t1 (t1_a DECIMAL(18,4) NOT NULL, PRIMARY KEY (t1_a));
INSERT INTO t1 VALUES (-99999999999999.9999), (99999999999999.9999), (2.5), (-2.5), (0), (-3);
SELECT t1_a, CEIL(t1_a), FLOOR(t1_a), CEILING(t1_a) FROM t1 ORDER BY t1_a;
-- @ignore-warnings
SELECT CAST(-100 AS UNSIGNED), CAST(-999999.99 AS UNSIGNED), CAST(-1.5e0 AS UNSIGNED);
