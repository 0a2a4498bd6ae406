-- utf8mb4_general_ci folds accents, not only case: 'É' = 'E', 'ß' = 's', all characters outside
-- the BMP are equal. Comparisons, ORDER BY, GROUP BY, DISTINCT, unique keys, index lookups and
-- ranges, hash joins, LIKE, LOCATE/INSTR/POSITION, FIELD, STRCMP, IN; REPLACE stays binary,
-- UPPER/LOWER keep accents. (zipdb used to fold case only.)
SELECT 'É' = 'E', 'é' = 'E', 'è' = 'ê', 'Ë' = 'e', 'Ḕ' = 'e', 'ß' = 's', 'ß' = 'ss', 'ſ' = 'S', 'Æ' = 'A', 'æ' = 'Æ', 'Ø' = 'O', 'Ð' = 'D', 'Þ' = 'P', 'ı' = 'i', 'İ' = 'i', 'ǅ' = 'ǆ';
SELECT 'Ё' = 'Е', 'й' = 'и', 'ά' = 'α', 'ς' = 'Σ', 'µ' = 'μ', 'Ω' = 'ω', 'ａ' = 'A', 'ⓐ' = 'Ⓐ', 'K' = 'K', '😀' = '😁', '😀' = '�', '�' = '￿';
SELECT 'é' < 'f', 'é' > 'd', 'é' < '_', 'Ä' < 'b', 'Öl' = 'ol', 'Straße' = 'STRASE', 'Straße' < 'strasse', 'Æ' > 'Z', 'Ø' > 'Z', 'café ' = 'CAFE', 'naïve' = 'NAIVE';
SELECT STRCMP('é', 'E'), STRCMP('é', 'f'), STRCMP('Ø', 'o'), STRCMP('😀', '😎'), STRCMP(_binary 'é', 'E');
SELECT 'é' IN ('E', 'x'), 'x' IN ('é', 'É'), 'ö' NOT IN ('O'), FIELD('é', 'a', 'E', 'é'), FIELD('ß', 'ss', 'S'), FIELD('Ø', 'O');
SELECT 'é' LIKE 'E', 'É' LIKE '_', 'Straße' LIKE '%sse', 'Straße' LIKE '%se', 'naïve' LIKE 'na%ve', 'ÀÉÎ' LIKE 'aei', 'ÀÉÎ' LIKE 'a_i', 'Ø' LIKE 'o', '😀x' LIKE '😎_';
-- LOCATE matches a run of the needle's length in bytes: 'e' is not found in 'é' although 'e' = 'é'.
SELECT LOCATE('é', 'xÉ'), LOCATE('e', 'é'), LOCATE('e', 'xéE'), LOCATE('ée', 'xeÉ'), LOCATE('éx', 'ḕx'), LOCATE('ё', 'Е'), LOCATE('s', 'ß'), LOCATE('é', 'éé', 2), LOCATE('😀', 'a😁');
SELECT INSTR('naÏve', 'ï'), INSTR('naïve', 'i'), POSITION('É' IN 'café'), POSITION('e' IN 'café');
SELECT REPLACE('Éte', 'e', 'x'), REPLACE('Éte', 'E', 'x'), REPLACE('Éte', 'É', 'x'), UPPER('é'), LOWER('É'), UPPER('ÀéÎ'), LOWER('ÀÉÎ'), UPPER('ø'), LOWER('Ø');
CREATE TABLE w (id INT PRIMARY KEY, s VARCHAR(10), KEY (s));
INSERT INTO w VALUES (1, 'e'), (2, 'E'), (3, 'é'), (4, 'É'), (5, 'è'), (6, 'f'), (7, 'd'), (8, 'ss'), (9, 'ß'), (10, 's'), (11, 'Æ'), (12, 'ae'), (13, 'Ø'), (14, 'o'), (15, 'ö'), (16, '😀'), (17, '😎'), (18, '�'), (19, 'z'), (20, '_'), (21, 'Ë '), (22, 'café'), (23, 'CAFE'), (24, 'cafè '), (25, NULL), (26, 'Й'), (27, 'И'), (28, 'й'), (29, 'ω'), (30, 'Ω');
SELECT id, s FROM w ORDER BY s, id;
SELECT id, s FROM w ORDER BY s DESC, id;
-- @fold 0
SELECT s, COUNT(*), MIN(id), MAX(id) FROM w GROUP BY s ORDER BY s;
SELECT COUNT(DISTINCT s) FROM w;
-- @fold 0
SELECT DISTINCT s FROM w ORDER BY s;
SELECT id FROM w WHERE s = 'E' ORDER BY id;
SELECT id FROM w WHERE s = 'É' ORDER BY id;
SELECT id FROM w WHERE s = 's' ORDER BY id;
SELECT id FROM w WHERE s = '😬' ORDER BY id;
SELECT id FROM w WHERE s IN ('ö', 'CAFÉ') ORDER BY id;
SELECT id FROM w WHERE s BETWEEN 'e' AND 'ë' ORDER BY id;
SELECT id FROM w WHERE s > 'é' AND s < 'Z' ORDER BY id;
SELECT id FROM w WHERE s >= 'Ø' ORDER BY s, id;
SELECT id FROM w WHERE s LIKE 'É%' ORDER BY id;
SELECT id FROM w WHERE s LIKE 'caf_' ORDER BY id;
SELECT MIN(s) = 'AE', MAX(s) = '😀', MAX(s) = '😬' FROM w;
-- Unique keys: accent variants are duplicates (1062).
CREATE TABLE u (id INT PRIMARY KEY, s VARCHAR(20), UNIQUE KEY (s));
INSERT INTO u VALUES (1, 'É');
INSERT INTO u VALUES (2, 'E');
INSERT INTO u VALUES (3, 'e ');
INSERT INTO u VALUES (4, 'ë');
INSERT INTO u VALUES (5, 'ß');
INSERT INTO u VALUES (6, 'S');
INSERT INTO u VALUES (7, 'ss');
INSERT INTO u VALUES (8, '😀');
INSERT INTO u VALUES (9, '🙂');
INSERT INTO u VALUES (10, 'Æ');
INSERT INTO u VALUES (11, 'AE');
INSERT INTO u VALUES (12, 'Crème Brûlée');
INSERT INTO u VALUES (13, 'CREME BRULEE');
INSERT INTO u VALUES (14, 'й'), (15, 'и');
UPDATE u SET s = 'ê' WHERE id = 7;
UPDATE u SET s = 'Ë' WHERE id = 1;
SELECT id, s FROM u ORDER BY s, id;
INSERT INTO u VALUES (16, 'e') ON DUPLICATE KEY UPDATE s = 'ee';
SELECT id, s FROM u ORDER BY s, id;
REPLACE INTO u VALUES (17, 'CRÈME BRÛLÉE');
SELECT id, s FROM u ORDER BY s, id;
CREATE TABLE p (s VARCHAR(10) PRIMARY KEY, n INT);
INSERT INTO p VALUES ('Åre', 1), ('Zürich', 2), ('ÉCOLE', 3), ('Ωmega', 4);
INSERT INTO p VALUES ('are', 5);
INSERT INTO p VALUES ('zurich', 6);
SELECT s, n FROM p ORDER BY s;
SELECT n FROM p WHERE s = 'ecole';
SELECT n FROM p WHERE s > 'École' ORDER BY n;
-- Joins on accented keys: hash join, index lookup, and text against the primary key.
CREATE TABLE j (k VARCHAR(10), v INT);
INSERT INTO j VALUES ('e', 1), ('É', 2), ('ss', 3), ('S', 4), ('ZURICH', 5), ('are ', 6), ('😎', 7), (NULL, 8), ('Ø', 9);
SELECT w.id, j.v FROM w JOIN j ON w.s = j.k ORDER BY w.id, j.v;
SELECT w.id, j.v FROM w LEFT JOIN j ON j.k = w.s WHERE w.id < 12 ORDER BY w.id, j.v;
SELECT p.n, j.v FROM p JOIN j ON p.s = j.k ORDER BY p.n, j.v;
SELECT j.v, COUNT(w.id) FROM j LEFT JOIN w ON w.s = j.k GROUP BY j.v ORDER BY j.v;
SELECT a.id, b.id FROM w a, w b WHERE a.s = b.s AND a.id < b.id ORDER BY a.id, b.id;
-- PAD SPACE: a string compares as if padded with spaces, so a control character (below a space)
-- after a common prefix sorts first: 'a\t' < 'a' = 'a ' < 'a!'. Also in a text primary key,
-- whose rows both servers return in key order.
SELECT 'a\t' < 'a', 'a\t' < 'a ', 'a \t' < 'a', 'a \t' > 'a\t', 'a\0' < 'a', '\0' < '', 'a ' < 'a!', STRCMP('a\n', 'a'), STRCMP('a', 'a  \n'), STRCMP('a  x', 'a');
CREATE TABLE ps (s VARCHAR(10) PRIMARY KEY, id INT);
INSERT INTO ps VALUES ('a', 1), ('a\t', 2), ('a \t', 3), ('a  \0', 4), ('a!', 5), ('a b', 6), ('a\tb', 7), ('a  b', 8), ('', 9), ('\t', 10), (' \n', 11), ('\0', 12), ('é \t', 13), ('É \n x', 14), ('ab', 15);
INSERT INTO ps VALUES ('a  ', 16);
INSERT INTO ps VALUES (' ', 17);
-- @ordered
SELECT id FROM ps;
SELECT id FROM ps ORDER BY s;
SELECT id FROM ps ORDER BY s DESC;
SELECT id FROM ps WHERE s < 'a' ORDER BY id;
SELECT id FROM ps WHERE s > 'a' AND s < 'a!' ORDER BY id;
SELECT id FROM ps WHERE s BETWEEN 'a\t' AND 'a' ORDER BY id;
SELECT MIN(s) = '\0', HEX(MAX(s)) FROM ps;
