-- UNION DISTINCT through one spilling DISTINCT (issue 20, session 15): with no key kept in
-- memory (tmp_memory_table_size = 0) the rows are those of an in-memory UNION, collation ties
-- and NULLs included; EXISTS and scalar subqueries that stop after the rows they need give
-- MariaDB's answers and errors.
CREATE TABLE u (id INT PRIMARY KEY, s VARCHAR(10), n INT);
INSERT INTO u VALUES (1, 'A', 1), (2, 'a', 2), (3, 'B ', 3), (4, 'é', 1), (5, 'E', 2), (6, 'Straße', 3), (7, 'strasse', 1), (8, NULL, 2), (9, 'b', 3), (10, NULL, NULL), (11, 'c', 1), (12, 'C', 2);
SET tmp_memory_table_size = 0;
SET sort_buffer_size = 65536;
-- @multiset
SELECT s FROM u UNION SELECT s FROM u WHERE id > 6;
-- @multiset
SELECT s, n FROM u UNION ALL SELECT s, n FROM u UNION SELECT 'x', 9;
-- @multiset
SELECT n FROM u UNION SELECT id FROM u UNION ALL SELECT n FROM u WHERE id < 4;
SELECT COUNT(*) FROM (SELECT a.id, b.n FROM u a, u b UNION SELECT b.id, a.n FROM u a, u b) t;
SELECT s FROM u UNION SELECT s FROM u ORDER BY s, 1 LIMIT 5;
SET tmp_memory_table_size = DEFAULT;
SET sort_buffer_size = DEFAULT;
SELECT EXISTS (SELECT * FROM u), EXISTS (SELECT * FROM u WHERE id > 100), NOT EXISTS (SELECT 1 FROM u a, u b);
SELECT id FROM u WHERE EXISTS (SELECT 1 FROM u v WHERE v.n = u.n AND v.id > u.id) ORDER BY id;
SELECT (SELECT s FROM u WHERE id = 3), (SELECT n FROM u WHERE id > 100);
SELECT (SELECT s FROM u);
SELECT id FROM u WHERE n = (SELECT n FROM u WHERE id > 10);
SELECT id, (SELECT v.id FROM u v WHERE v.id = u.id + 1) FROM u ORDER BY id;
UPDATE u SET n = n + 1 WHERE EXISTS (SELECT 1 FROM u v WHERE v.id = 1);
SELECT SUM(n) FROM u;
DELETE FROM u WHERE n = (SELECT n FROM u v);
SELECT COUNT(*) FROM u;
INSERT INTO u VALUES (20, 'z', NULL), (21, 'y', 7), (22, NULL, 8);
SELECT id, n IN (SELECT v.n FROM u v WHERE v.id > u.id), n NOT IN (SELECT v.n FROM u v WHERE v.id <> u.id AND v.n IS NOT NULL) FROM u ORDER BY id;
SELECT id, n IN (SELECT v.n FROM u v WHERE v.id > u.id + 100), n NOT IN (SELECT v.n FROM u v WHERE v.id > u.id + 100) FROM u ORDER BY id;
SELECT id, n > ANY (SELECT v.n FROM u v WHERE v.id > u.id), n >= ALL (SELECT v.n FROM u v WHERE v.id > u.id), n = ALL (SELECT v.n FROM u v WHERE v.id = u.id) FROM u ORDER BY id;
SELECT id, s IN (SELECT v.s FROM u v WHERE v.id < u.id) FROM u ORDER BY id;
SELECT id FROM u WHERE n IN (SELECT v.n + 1 FROM u v WHERE v.s = u.s) ORDER BY id;
