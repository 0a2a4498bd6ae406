-- An UPDATE that moves a row (its primary key changes) but leaves a unique key's columns
-- alone must not see the row's own unique entry as a duplicate.
CREATE TABLE t1 (t1_a DATETIME NOT NULL, t1_b TINYINT NOT NULL DEFAULT -26, PRIMARY KEY (t1_a, t1_b), UNIQUE KEY t1_k0 (t1_a), KEY t1_k1 (t1_b));
INSERT INTO t1 (t1_a, t1_b) VALUES ('2023-06-16 00:00:00', 100), ('2023-06-17 00:00:00', 1);
UPDATE t1 SET t1_b = 5 WHERE t1_b = 100;
SELECT * FROM t1 ORDER BY t1_a;
UPDATE t1 SET t1_a = '2023-06-17 00:00:00' WHERE t1_b = 5;
SELECT * FROM t1 ORDER BY t1_a;
