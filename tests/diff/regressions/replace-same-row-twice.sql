-- REPLACE of a row identical to the existing one counts it once (no delete, no duplicate).
CREATE TABLE t2 (t2_a INT NOT NULL, t2_b INT, PRIMARY KEY (t2_a));
REPLACE INTO t2 (t2_a) VALUES (-1), (2), (11), (2);
REPLACE INTO t2 VALUES (2, NULL);
REPLACE INTO t2 VALUES (2, 5);
SELECT * FROM t2 ORDER BY t2_a;
