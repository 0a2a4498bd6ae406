-- Integer arithmetic with an UNSIGNED operand is UNSIGNED: a negative result is error 1690,
-- as is a signed result outside BIGINT (found by the random run, seed 5: joins and UNIONs
-- over unsigned columns).
CREATE TABLE t (id INT PRIMARY KEY, u SMALLINT UNSIGNED NOT NULL, s INT NOT NULL);
INSERT INTO t VALUES (1, 10, 20), (2, 30, -5);
SELECT u - s FROM t WHERE id = 1;
SELECT u - s FROM t WHERE id = 2;
SELECT s - u FROM t WHERE id = 2;
SELECT u * s FROM t WHERE id = 2;
SELECT u + s FROM t ORDER BY id;
SELECT 9223372036854775807 + 1;
SELECT 18446744073709551614 + 1;
SELECT -(u) FROM t ORDER BY id;
