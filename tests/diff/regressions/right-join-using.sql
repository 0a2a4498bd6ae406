-- RIGHT JOIN (run as the mirrored LEFT JOIN, columns still in FROM order) and JOIN ... USING
-- (the shared column once, unambiguous unqualified, listed first by SELECT *).
CREATE TABLE a (id INT PRIMARY KEY, x INT, k INT);
CREATE TABLE b (bid INT PRIMARY KEY, k INT, y INT);
INSERT INTO a VALUES (1, 10, 1), (2, 20, 2), (3, NULL, 9);
INSERT INTO b VALUES (1, 1, 100), (2, 1, 200), (3, 5, 300), (4, NULL, 400);
SELECT a.id, b.bid FROM a RIGHT JOIN b ON a.k = b.k ORDER BY b.bid, a.id;
SELECT * FROM a RIGHT JOIN b ON a.k = b.k ORDER BY b.bid, a.id;
SELECT a.id, b.bid FROM a RIGHT JOIN b ON a.k = b.k WHERE a.id IS NULL ORDER BY b.bid;
SELECT * FROM a JOIN b USING (k) ORDER BY a.id, b.bid;
SELECT k, a.id, b.bid FROM a JOIN b USING (k) ORDER BY 2, 3;
SELECT * FROM a LEFT JOIN b USING (k) ORDER BY a.id, b.bid;
SELECT k, COUNT(*) FROM a JOIN b USING (k) GROUP BY k ORDER BY k;
SELECT * FROM a JOIN b USING (nope);
SELECT * FROM a RIGHT JOIN b USING (k) ORDER BY b.bid, a.id;
