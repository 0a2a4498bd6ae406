-- SHOW ... WHERE evaluated over the SHOW's own result columns (names in any letter case),
-- DESCRIBE / DESC / EXPLAIN of a table as SHOW COLUMNS, with a column name or a pattern, and
-- boolean variables printed as ON/OFF.
-- (Only forms whose rows zipdb prints as MariaDB does: its SHOW INDEX lacks `Ignored`;
-- docs/COMPATIBILITY.md.)
SHOW COLUMNS FROM t WHERE `Type` = 'int(11)';
CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(20), KEY k_1 (k));
CREATE TABLE t2 (a VARCHAR(5));
SHOW TABLES WHERE Tables_in_replay = 't2';
SHOW TABLES WHERE tables_in_replay LIKE 't%' AND tables_in_replay <> 't';
SHOW FULL TABLES WHERE Table_type = 'BASE TABLE';
SHOW TABLES WHERE NULL;
SHOW TABLES WHERE nope = 1;
SHOW DATABASES WHERE `Database` = 'replay';
SHOW COLUMNS FROM t WHERE Field = 'c';
SHOW COLUMNS FROM t WHERE `Null` = 'YES';
SHOW VARIABLES WHERE Variable_name = 'no_such_variable';
SHOW CHARACTER SET WHERE Charset = 'nope';
DESCRIBE t c;
DESC t2;
EXPLAIN t2;
DESCRIBE t 'c%';
DESCRIBE nope;
SHOW VARIABLES WHERE Variable_name = 'autocommit';
SET autocommit = 0;
SHOW VARIABLES LIKE 'autocommit';
SELECT @@autocommit;
SET autocommit = 1;
SHOW VARIABLES WHERE Variable_name LIKE 'tx_read_only' AND Value = 'OFF';
