-- Hash-join build sides and nested-loop inner tables spilled to temporary files (issue 20 E7):
-- with no build row kept in memory (tmp_memory_table_size = 0; MariaDB then uses its own
-- plans) every join gives the rows of an in-memory run. Duplicate and NULL keys, collation ties
-- in text keys (which must meet in one partition), a text key against an integer one (values
-- that cannot be hashed), LEFT joins with ON and WHERE terms, derived tables as build sides, a
-- nested loop's inner table read once per outer row, INSERT ... SELECT reading its own table.
CREATE TABLE j (id INT PRIMARY KEY, k INT, s VARCHAR(10), m VARCHAR(10));
INSERT INTO j VALUES (1, 14, '', '12'), (2, 12, 'a ', '4'), (3, 10, '', '13'), (4, 14, 'A', '13'), (5, 5, 'strasse', '14'), (6, 2, 'a', '6'), (7, 6, 'A', '1'), (8, 2, 'é', '7'), (9, 9, 'e', '6'), (10, 3, 'b', '5'), (11, NULL, '', '14'), (12, 10, 'é', '5'), (13, 6, NULL, '1'), (14, 10, 'Straße', '12'), (15, 13, 'e', '6'), (16, 1, 'b', '9'), (17, 3, 'a', 'x'), (18, 3, 'A', '1'), (19, 3, 'B', NULL), (20, 11, 'B', '4'), (21, 11, 'B', '2'), (22, NULL, 'strasse', '1'), (23, 14, 'a', '4'), (24, 11, 'b', '13'), (25, 13, 'b', '9'), (26, 3, NULL, '0'), (27, 0, '', '9'), (28, 4, 'B', '2'), (29, 11, '', '5'), (30, 9, 'e', '14'), (31, 2, '', '4'), (32, 8, 'E', '2'), (33, NULL, 'a ', '6'), (34, 14, 'A', 'x'), (35, 11, 'a ', '12'), (36, 9, 'E', '5'), (37, 3, 'A', '14'), (38, 9, 'a', NULL), (39, 8, NULL, '3'), (40, 6, 'a ', '2'), (41, 13, 'A', '1'), (42, 12, 'B', '0'), (43, 12, '', '12'), (44, NULL, 'é', '10'), (45, 11, 'E', '7'), (46, 8, 'a', '13'), (47, 10, 'a ', '1'), (48, 7, 'Straße', '5'), (49, 0, 'A', '9'), (50, 11, 'A', '1'), (51, 5, 'B', 'x'), (52, 10, NULL, '1'), (53, 10, 'B', '10'), (54, 0, 'a', '3'), (55, NULL, 'b', '8'), (56, 8, 'a', '2'), (57, 0, '', NULL), (58, 11, 'Straße', '14'), (59, 2, 'B', '13'), (60, 2, 'E', '4'), (61, 1, 'E', '1'), (62, 3, 'b', '3'), (63, 13, 'b', '1'), (64, 4, 'a ', '8'), (65, 6, NULL, '14'), (66, NULL, 'a ', '10'), (67, 1, 'e', '7'), (68, 0, 'a ', 'x'), (69, 3, '', '4'), (70, 6, 'A', '14'), (71, 13, 'B', '3'), (72, 5, 'strasse', '4'), (73, 2, '', '11'), (74, 1, 'a', '4'), (75, 0, 'E', '5'), (76, 11, 'B', NULL), (77, NULL, 'E', '13'), (78, 14, NULL, '7'), (79, 12, 'A', '1'), (80, 9, 'e', '3'), (81, 14, 'a', '11'), (82, 11, 'Straße', '1'), (83, 14, 'Straße', '9'), (84, 5, 'a', '2'), (85, 4, 'B', 'x'), (86, 9, 'A', '0'), (87, 0, 'b', '11'), (88, NULL, 'b', '9'), (89, 6, 'strasse', '1'), (90, 9, 'é', '12'), (91, 4, NULL, '7'), (92, 0, '', '2'), (93, 14, 'strasse', '6'), (94, 14, 'Straße', '6'), (95, 6, 'B', NULL), (96, 0, 'e', '1'), (97, 9, 'e', '5'), (98, 3, 'b', '4'), (99, NULL, 'e', '14'), (100, 5, 'E', '3'), (101, 9, 'a', '5'), (102, 2, 'A', 'x'), (103, 11, 'é', '0'), (104, 12, NULL, '1'), (105, 7, 'b', '8'), (106, 2, 'B', '12'), (107, 11, 'a', '2'), (108, 10, 'é', '5'), (109, 8, 'a ', '0'), (110, NULL, 'b', '6'), (111, 8, 'e', '3'), (112, 14, 'E', '6'), (113, 11, 'Straße', '13'), (114, 11, 'B', NULL), (115, 8, 'strasse', '10'), (116, 11, 'B', '9'), (117, 12, NULL, '12'), (118, 1, '', '7'), (119, 4, 'é', 'x'), (120, 11, 'a ', '7');
SET tmp_memory_table_size = 0;
SELECT a.id, b.id, a.k FROM j a JOIN j b ON b.k = a.k ORDER BY a.id, b.id;
-- @fold 2
SELECT a.id, b.id, b.s FROM j a JOIN j b ON b.s = a.s ORDER BY a.id, b.id;
SELECT a.id, b.id FROM j a JOIN j b ON b.s = a.s AND b.k = a.k ORDER BY a.id, b.id;
SELECT a.id, b.id FROM j a LEFT JOIN j b ON b.s = a.s AND b.id % 3 = 0 ORDER BY a.id, b.id;
SELECT a.id, b.id FROM j a LEFT JOIN j b ON b.k = a.k WHERE b.id IS NULL ORDER BY a.id;
SELECT a.id, b.id FROM j a LEFT JOIN j b ON b.k = a.k AND b.id > 50 WHERE b.id < 90 OR b.id IS NULL ORDER BY a.id, b.id;
SELECT a.id, b.id FROM j a JOIN j b ON b.m = a.k WHERE b.id % 2 = 1 ORDER BY a.id, b.id;
SELECT a.id, b.id FROM j a JOIN j b ON b.k = a.m ORDER BY a.id, b.id;
SELECT a.id, b.id, b.k FROM j a LEFT JOIN j b ON b.k = a.m AND b.id % 4 = 0 ORDER BY a.id, b.id;
SELECT a.id, b.id, c.id FROM j a JOIN j b ON b.k = a.k LEFT JOIN j c ON c.s = b.s AND c.id < 20 ORDER BY a.id, b.id, c.id;
SELECT COUNT(*), SUM(a.id * b.id), SUM(c.id) FROM j a JOIN j b ON b.k = a.k JOIN j c ON c.k = b.k;
SELECT a.id, d.n FROM j a JOIN (SELECT k, COUNT(*) AS n FROM j GROUP BY k) d ON d.k = a.k ORDER BY a.id;
SELECT a.id, b.id FROM j a JOIN j b ON b.id < a.id AND b.k > a.k WHERE a.id <= 40 ORDER BY a.id, b.id;
SELECT a.id, COUNT(b.id) FROM j a LEFT JOIN j b ON b.id > a.id + 100 GROUP BY a.id ORDER BY a.id;
SELECT COUNT(*) FROM j a, j b, j c WHERE c.id <= 30;
INSERT INTO j SELECT id + 1000, k, s, m FROM j;
SELECT COUNT(*), SUM(id), COUNT(s), COUNT(k) FROM j;
SET tmp_memory_table_size = DEFAULT;
SELECT a.id, b.id FROM j a JOIN j b ON b.k = a.k WHERE a.id % 50 = 1 ORDER BY a.id, b.id;
