-- INSERT ... SELECT: rows from a join with GROUP BY, from the target table itself, with
-- IGNORE, REPLACE and a column-count error; the info string for one row (Records: 1 ...).
CREATE TABLE a (id INT PRIMARY KEY, x INT);
CREATE TABLE b (id INT PRIMARY KEY, a_id INT, y INT);
CREATE TABLE c (id INT PRIMARY KEY, a_id INT, total INT, note VARCHAR(20) DEFAULT 'n');
INSERT INTO a VALUES (1, 10), (2, 20), (3, NULL);
INSERT INTO b VALUES (1, 1, 100), (2, 1, 200), (3, 2, 300), (4, NULL, 400);
INSERT INTO c (id, a_id, total) SELECT a.id, a.id, SUM(b.y) FROM a JOIN b ON b.a_id = a.id GROUP BY a.id;
SELECT * FROM c ORDER BY id;
INSERT INTO c (id, a_id, total) SELECT id + 10, id, x FROM a WHERE x IS NOT NULL;
INSERT INTO c SELECT * FROM c WHERE id = 1;
INSERT IGNORE INTO c SELECT * FROM c WHERE id = 1;
INSERT INTO c (a_id) SELECT id, x FROM a;
REPLACE INTO c (id, a_id, total) SELECT id, 99, total FROM c WHERE id <= 2;
INSERT INTO c (id, a_id, total) SELECT id + 20, id, id FROM a WHERE id = 3;
INSERT INTO b (id, a_id, y) SELECT id + 100, a_id, y FROM b;
SELECT * FROM c ORDER BY id;
SELECT COUNT(*), SUM(y) FROM b;
