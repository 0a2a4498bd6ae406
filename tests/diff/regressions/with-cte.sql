-- WITH (non-recursive common table expressions): used once or twice, joined, with column
-- names, one built on another, inside subqueries, and a name that shadows a table.
CREATE TABLE a (id INT PRIMARY KEY, x INT);
CREATE TABLE b (id INT PRIMARY KEY, a_id INT, y INT);
INSERT INTO a VALUES (1, 10), (2, 20), (3, NULL);
INSERT INTO b VALUES (1, 1, 100), (2, 1, 200), (3, 2, 300);
WITH t AS (SELECT a_id, SUM(y) AS s FROM b GROUP BY a_id) SELECT a.id, t.s FROM a JOIN t ON t.a_id = a.id ORDER BY a.id;
WITH t (k, total) AS (SELECT a_id, SUM(y) FROM b GROUP BY a_id) SELECT k, total FROM t ORDER BY k;
WITH t AS (SELECT id FROM a), u AS (SELECT id FROM t WHERE id > 1) SELECT * FROM u ORDER BY id;
WITH t AS (SELECT id, x FROM a) SELECT p.id, q.id FROM t p JOIN t q ON p.x < q.x ORDER BY 1, 2;
WITH t AS (SELECT a_id FROM b) SELECT id FROM a WHERE id IN (SELECT a_id FROM t) ORDER BY id;
WITH b AS (SELECT 7 AS y) SELECT y FROM b;
WITH t (k) AS (SELECT id, x FROM a) SELECT * FROM t;
