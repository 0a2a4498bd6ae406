-- The diagnostics area: a failed statement's error is listed by SHOW WARNINGS and SHOW ERRORS
-- and counted by @@error_count / @@warning_count / SHOW COUNT(*); a statement that uses no
-- tables (SELECT @@x, SELECT 1, SET) keeps the previous statement's conditions, one that uses
-- tables clears them.
CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL);
SELECT CAST('1a' AS SIGNED);
SELECT @@warning_count;
SELECT @@error_count;
SELECT * FROM nope;
SHOW ERRORS;
SHOW WARNINGS;
SHOW COUNT(*) ERRORS;
SHOW COUNT(*) WARNINGS;
SELECT @@error_count;
SELECT @@warning_count;
SELECT 1;
SHOW ERRORS;
INSERT INTO t VALUES (1, 'x');
SHOW WARNINGS;
INSERT INTO t VALUES (1, 1);
INSERT INTO t VALUES (1, 2);
SHOW ERRORS;
SET @a = 1;
SHOW COUNT(*) ERRORS;
SELECT * FROM t;
SHOW COUNT(*) ERRORS;
SHOW ERRORS;
