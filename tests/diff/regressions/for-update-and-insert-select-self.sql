-- E5: locking reads through the operators, with subqueries (zipdb refused these with 1235
-- before), and INSERT ... SELECT whose SELECT reads the target table (every row read before
-- the first is written), under autocommit and in an open transaction.
CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(10), KEY k_1 (k));
CREATE TABLE s (id INT PRIMARY KEY, x INT);
INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 30, '3x'), (4, 40, NULL), (5, 50, 'e'), (6, 60, 'f');
INSERT INTO s VALUES (2, 5), (4, NULL), (6, 7);
SELECT id, k FROM t WHERE id IN (SELECT id FROM s) FOR UPDATE;
SELECT id, (SELECT COUNT(*) FROM s WHERE s.id < t.id) AS n FROM t WHERE k > 15 ORDER BY id FOR UPDATE;
SELECT id FROM t WHERE EXISTS (SELECT 1 FROM s WHERE s.x = 7 AND s.id = t.id) FOR UPDATE;
SELECT id FROM t WHERE id NOT IN (SELECT x FROM s) FOR UPDATE;
SELECT id FROM t WHERE k = (SELECT MAX(k) FROM t) FOR UPDATE;
SELECT id FROM t WHERE k > 15 ORDER BY id LIMIT 2 FOR UPDATE;
SELECT id FROM t WHERE id > 1 ORDER BY id LIMIT 1 OFFSET 1 FOR UPDATE;
SELECT t.id, s.x FROM t JOIN s ON s.id = t.id WHERE t.id IN (SELECT id FROM s WHERE x IS NOT NULL) FOR UPDATE;
SELECT id, c + 0 FROM t WHERE id < 4 FOR UPDATE;
BEGIN;
SELECT id, k FROM t WHERE id IN (SELECT id FROM s) FOR UPDATE;
UPDATE t SET k = k + 1 WHERE id IN (2, 4);
SELECT id, k FROM t WHERE id IN (SELECT id FROM s) FOR UPDATE;
COMMIT;
-- (Ids given: MariaDB's AUTO_INCREMENT reserves values in batches for INSERT ... SELECT.)
CREATE TABLE w (id INT PRIMARY KEY, k INT, c VARCHAR(10), UNIQUE KEY uc (c));
INSERT INTO w (id, k, c) SELECT id, k, c FROM t;
INSERT INTO w (id, k, c) SELECT id + 6, k + 1, CONCAT(c, '2') FROM w;
SELECT * FROM w ORDER BY id;
INSERT INTO w (id, k) SELECT 100 + COUNT(*), COUNT(*) FROM w;
INSERT INTO w (id, k, c) SELECT id + 200, k, c FROM w WHERE id < 3;
INSERT IGNORE INTO w (id, k, c) SELECT id + 200, k, c FROM w WHERE id < 4;
REPLACE INTO w (id, k, c) SELECT id, k * 10, c FROM w WHERE id IN (1, 2);
INSERT INTO w (id, k, c) SELECT id, 0, 'zz' FROM t WHERE id < 3 ON DUPLICATE KEY UPDATE k = w.k + 1;
SELECT * FROM w ORDER BY id;
INSERT INTO w (id, k, c) SELECT id + 300, id, c FROM w WHERE id IN (SELECT id FROM w WHERE k > 100) ORDER BY id;
BEGIN;
INSERT INTO w (id, k, c) SELECT id + 400, k, CONCAT(c, 'b') FROM w WHERE c IS NOT NULL;
SELECT COUNT(*) FROM w;
ROLLBACK;
SELECT COUNT(*) FROM w;
INSERT INTO w (id, k, c) SELECT id + 500, k, CONCAT(c, 'toolongtext') FROM w;
INSERT IGNORE INTO w (id, k, c) SELECT id + 600, k, CONCAT(c, 'toolongtext') FROM w WHERE id < 3;
INSERT INTO w (id, k, c) SELECT id + 700, id, CONCAT(c, 'u') FROM t WHERE id < 3 FOR UPDATE;
CREATE TABLE w2 SELECT id, k FROM w WHERE k > 20;
SELECT * FROM w2 ORDER BY id;
SELECT * FROM w ORDER BY id;
