-- Derived tables (subqueries in FROM): alone, aggregated over, joined to tables and to each
-- other, with UNION inside, and the errors for a missing alias (1064 in MariaDB) and duplicate
-- names (1060).
CREATE TABLE a (id INT PRIMARY KEY, x INT, s VARCHAR(10));
CREATE TABLE b (id INT PRIMARY KEY, a_id INT, y INT);
INSERT INTO a VALUES (1, 10, 'p'), (2, 20, 'Q'), (3, NULL, 'r'), (4, 10, NULL);
INSERT INTO b VALUES (1, 1, 100), (2, 1, 200), (3, 2, 300), (4, NULL, 400);
SELECT COUNT(*) FROM (SELECT DISTINCT x FROM a) AS t;
SELECT * FROM (SELECT id, x * 2 AS dx FROM a WHERE x IS NOT NULL) AS t ORDER BY id;
SELECT t.a_id, t.total, a.s FROM (SELECT a_id, SUM(y) AS total FROM b GROUP BY a_id) t JOIN a ON a.id = t.a_id ORDER BY t.a_id;
SELECT a.id, t.n FROM a LEFT JOIN (SELECT a_id, COUNT(*) n FROM b GROUP BY a_id) t ON t.a_id = a.id ORDER BY a.id;
SELECT u.v FROM (SELECT x AS v FROM a UNION SELECT y FROM b) u WHERE u.v > 15 ORDER BY 1;
SELECT p.id, q.id FROM (SELECT id FROM a) p, (SELECT id FROM b) q WHERE p.id = q.id ORDER BY 1;
SELECT MAX(m) FROM (SELECT a_id, MAX(y) m FROM b GROUP BY a_id) t;
SELECT id FROM a WHERE x IN (SELECT v FROM (SELECT x AS v FROM a WHERE id > 1) t) ORDER BY id;
SELECT * FROM (SELECT 1 AS one) AS d;
SELECT COUNT(*) FROM (SELECT id FROM a);
SELECT * FROM (SELECT id, id FROM a) t;
