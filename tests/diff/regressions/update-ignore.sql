-- UPDATE IGNORE parses (not as a table named IGNORE); it clips values with warnings where
-- UPDATE fails, stores the implicit default for NULL in a NOT NULL column (1048), and leaves
-- a row that would duplicate a key as it was, silently (MariaDB 10.11 warns nothing).
CREATE TABLE u (a INT PRIMARY KEY, b TINYINT NOT NULL, c VARCHAR(3), d DECIMAL(5,1), e DATE, g INT, UNIQUE KEY ug (g));
INSERT INTO u VALUES (1, 1, 'a', 1, '2020-01-01', 1), (2, 2, 'b', 2, '2020-01-02', 2), (3, 3, 'c', 3, '2020-01-03', 3);
UPDATE u SET b = NULL WHERE a = 1;
UPDATE u SET b = 300 WHERE a = 1;
UPDATE u SET c = 'abcdef' WHERE a = 1;
UPDATE u SET e = 'xyz' WHERE a = 1;
UPDATE IGNORE u SET b = NULL WHERE a = 1;
SHOW WARNINGS;
UPDATE IGNORE u SET b = 300, c = 'abcdef', d = 1.55, e = 'xyz';
SHOW WARNINGS;
UPDATE u SET d = 1.55;
UPDATE IGNORE u SET a = 2 WHERE a = 1;
UPDATE IGNORE u SET g = 2 WHERE a = 1;
UPDATE IGNORE u SET g = g + 1;
UPDATE IGNORE u SET a = a + 1 ORDER BY a DESC;
UPDATE IGNORE u SET a = 10 WHERE a < 10 ORDER BY a LIMIT 3;
UPDATE IGNORE u SET c = 'xyzw' WHERE a = 10;
UPDATE u SET c = DEFAULT, d = DEFAULT WHERE a = 10;
UPDATE u SET b = DEFAULT;
SELECT * FROM u ORDER BY a;
