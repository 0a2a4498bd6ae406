-- UPDATE and DELETE with uncorrelated subqueries in WHERE and SET, including ones that read
-- the target table itself (run once, before any row changes, as MariaDB materializes them).
CREATE TABLE a (id INT PRIMARY KEY, x INT);
CREATE TABLE b (id INT PRIMARY KEY, a_id INT, y INT);
INSERT INTO a VALUES (1, 10), (2, 20), (3, NULL), (4, 40);
INSERT INTO b VALUES (1, 1, 100), (2, 1, 200), (3, 2, 300), (4, NULL, 400);
UPDATE a SET x = x + 1 WHERE id IN (SELECT a_id FROM b WHERE y >= 200);
SELECT * FROM a ORDER BY id;
UPDATE a SET x = (SELECT MAX(y) FROM b) WHERE id = 4;
SELECT * FROM a ORDER BY id;
UPDATE a SET x = 0 WHERE x > (SELECT AVG(x) FROM a);
SELECT * FROM a ORDER BY id;
DELETE FROM b WHERE a_id NOT IN (SELECT id FROM a WHERE x IS NOT NULL);
SELECT * FROM b ORDER BY id;
DELETE FROM b WHERE EXISTS (SELECT 1 FROM a WHERE x = 0) AND y > 250;
SELECT * FROM b ORDER BY id;
DELETE FROM a WHERE id = (SELECT id FROM b);
UPDATE a SET x = (SELECT y FROM b) WHERE id = 1;
