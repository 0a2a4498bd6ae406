-- Integer display widths as MariaDB shows them: the default (int(11), int(10) unsigned,
-- bigint(20)), a declared one (INT(5)), BOOLEAN as tinyint(1) (which Rails and Connector/J
-- read as a boolean), INT(0) as the default, and past 255 error 1439. (SHOW CREATE TABLE
-- prints the same column lines, checked in crates/sql/tests/clients.rs: its ENGINE differs.)
CREATE TABLE w (a TINYINT, b TINYINT UNSIGNED, c SMALLINT, d SMALLINT UNSIGNED, e MEDIUMINT,
  f MEDIUMINT UNSIGNED, g INT, h INT UNSIGNED, i BIGINT, j BIGINT UNSIGNED, k INT(5),
  l BOOLEAN, m BOOL, n TINYINT(1), o INT(0), p BIGINT(3) UNSIGNED, q INTEGER(11) NOT NULL);
SHOW COLUMNS FROM w;
SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE FROM information_schema.COLUMNS
  WHERE TABLE_NAME = 'w' ORDER BY ORDINAL_POSITION;
CREATE TABLE w2 (a INT(256));
CREATE TABLE w3 (a INT(255), b TINYINT(255) UNSIGNED);
SHOW COLUMNS FROM w3;
INSERT INTO w (l, m, n, q) VALUES (TRUE, FALSE, 1, 7);
SELECT l, m, n, q FROM w;
-- Keys in MariaDB's order whatever the declaration order: PRIMARY, unique keys of NOT NULL
-- columns, other unique keys, the rest. (SHOW INDEX's Cardinality is an estimate in
-- MariaDB and NULL in zipdb, so the rows are compared through STATISTICS.)
CREATE TABLE ko (x INT NOT NULL, y INT, z INT NOT NULL, id INT NOT NULL, KEY kx (x),
  UNIQUE KEY uy (y), UNIQUE KEY uz (z, x), PRIMARY KEY (id), KEY kzy (z, y));
SELECT INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NON_UNIQUE, NULLABLE, INDEX_TYPE, IGNORED
  FROM information_schema.STATISTICS WHERE TABLE_NAME = 'ko';
SHOW INDEX FROM ko WHERE Key_name = 'nope';
