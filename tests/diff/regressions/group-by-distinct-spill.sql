-- GROUP BY and DISTINCT spilled to temporary files (issue 20 E7): with no group kept in memory
-- (tmp_memory_table_size = 0; MariaDB then uses on-disk temporary tables) the groups, their
-- aggregates and DISTINCT's rows are those of an in-memory run. Collation ties and NULLs in the
-- keys; every aggregate kind; joins large enough to need several sorted runs.
CREATE TABLE g (id INT PRIMARY KEY, s VARCHAR(10), n INT, d DECIMAL(6,2));
INSERT INTO g VALUES (1, 'A', 1, 37.25), (2, 'a', 2, 24.25), (3, 'B ', 3, 11.25), (4, 'c', 4, 48.25), (5, 'é', 5, 35.25), (6, 'E', 6, 22.25), (7, 'Straße', 0, 9.25), (8, 'strasse', 1, 46.25), (9, 'ß', 2, 33.25), (10, NULL, 3, 20.25), (11, 'b', 4, 7.25), (12, 'A', 5, 44.25), (13, 'a', 6, NULL), (14, 'B ', 0, 18.25), (15, 'c', 1, 5.25), (16, 'é', 2, 42.25), (17, 'E', 3, 29.25), (18, 'Straße', 4, 16.25), (19, 'strasse', 5, 3.25), (20, 'ß', 6, 40.25), (21, NULL, 0, 27.25), (22, 'b', 1, 14.25), (23, 'A', 2, 1.25), (24, 'a', 3, 38.25), (25, 'B ', 4, 25.25), (26, 'c', 5, NULL), (27, 'é', 6, 49.25), (28, 'E', 0, 36.25), (29, 'Straße', 1, 23.25), (30, 'strasse', 2, 10.25), (31, 'ß', 3, 47.25), (32, NULL, 4, 34.25), (33, 'b', 5, 21.25), (34, 'A', 6, 8.25), (35, 'a', 0, 45.25), (36, 'B ', 1, 32.25), (37, 'c', 2, 19.25), (38, 'é', 3, 6.25), (39, 'E', 4, NULL), (40, 'Straße', 5, 30.25), (41, 'strasse', 6, 17.25), (42, 'ß', 0, 4.25), (43, NULL, 1, 41.25), (44, 'b', 2, 28.25), (45, 'A', 3, 15.25), (46, 'a', 4, 2.25), (47, 'B ', 5, 39.25), (48, 'c', 6, 26.25), (49, 'é', 0, 13.25), (50, 'E', 1, 0.25), (51, 'Straße', 2, 37.25), (52, 'strasse', 3, NULL), (53, 'ß', 4, 11.25), (54, NULL, 5, 48.25), (55, 'b', 6, 35.25), (56, 'A', 0, 22.25), (57, 'a', 1, 9.25), (58, 'B ', 2, 46.25), (59, 'c', 3, 33.25), (60, 'é', 4, 20.25);
SET tmp_memory_table_size = 0;
SET sort_buffer_size = 65536;
-- @fold 0
SELECT s, COUNT(*), COUNT(d), COUNT(DISTINCT n), SUM(n), SUM(DISTINCT n), AVG(d), MIN(d), MAX(id) FROM g GROUP BY s ORDER BY s;
-- @fold 0
SELECT a.s, b.n, COUNT(*), SUM(a.d), MIN(b.id), MAX(a.id * b.id), AVG(b.n) FROM g a, g b, g c WHERE c.id <= 20 GROUP BY a.s, b.n ORDER BY a.s, b.n;
SELECT a.n, b.id % 9 AS k, COUNT(*), SUM(c.d) FROM g a, g b, g c GROUP BY a.n, k HAVING COUNT(*) > 2000 ORDER BY a.n, k;
SELECT a.id, b.id, COUNT(*) FROM g a, g b, g c WHERE c.n < 2 GROUP BY a.id, b.id ORDER BY 3 DESC, 1, 2 LIMIT 20;
SELECT COUNT(*) FROM (SELECT a.id, b.id AS bid, c.n FROM g a, g b, g c GROUP BY a.id, b.id, c.n) t;
-- @fold 0
SELECT DISTINCT a.s, b.n FROM g a, g b ORDER BY a.s, b.n;
SELECT COUNT(*) FROM (SELECT DISTINCT a.id, b.n, c.n AS cn FROM g a, g b, g c) t;
SELECT DISTINCT a.n + b.n, c.n FROM g a, g b, g c ORDER BY 1, 2;
SET tmp_memory_table_size = DEFAULT;
SET sort_buffer_size = DEFAULT;
SELECT @@tmp_memory_table_size, @@tmp_table_size;
