-- IGNORE stores zero dates ('0000-00-00') in NOT NULL DATE/DATETIME columns; MariaDB finds
-- them with `col IS NULL` (and ISNULL(col)) as a term of a WHERE condition's AND/OR tree,
-- not under NOT, not in the select list, and not for '2020-00-00' or nullable columns.
CREATE TABLE zd (a INT PRIMARY KEY, d DATE NOT NULL, e DATETIME NOT NULL, f DATE);
INSERT IGNORE INTO zd VALUES (1, '0000-00-00', '0000-00-00 00:00:00', '0000-00-00'), (2, '2020-01-01', '2020-01-01', NULL), (3, '2020-00-00', 'xyz', '2020-00-00');
SELECT a, d IS NULL, e IS NULL, f IS NULL, d IS NOT NULL FROM zd ORDER BY a;
SELECT a FROM zd WHERE d IS NULL;
SELECT a FROM zd WHERE e IS NULL;
SELECT a FROM zd WHERE f IS NULL;
SELECT a FROM zd WHERE d IS NOT NULL;
SELECT a FROM zd WHERE NOT (d IS NULL);
SELECT a FROM zd WHERE d IS NULL OR a = 2;
SELECT a FROM zd WHERE ISNULL(d) AND a > 0;
SELECT a FROM zd WHERE d <=> NULL;
SELECT a FROM zd WHERE (d IS NULL) = 1;
UPDATE zd SET a = a + 10 WHERE d IS NULL;
DELETE FROM zd WHERE e IS NULL;
SELECT * FROM zd ORDER BY a;
