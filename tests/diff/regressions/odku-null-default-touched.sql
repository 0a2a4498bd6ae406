-- ON DUPLICATE KEY UPDATE col = NULL on a row whose col is already NULL: MariaDB counts the
-- row once (affected 1, not "updated") when col has a DEFAULT other than zero/'' (its record
-- compares different, the engine finds it the same). REPLACE on the last unique key
-- overwrites an identical row in place (counted once); on an earlier key it deletes and
-- inserts (counted twice).
CREATE TABLE q (a INT PRIMARY KEY, b VARCHAR(3) DEFAULT 'zz', c INT DEFAULT 5, d INT, e CHAR(2) DEFAULT '');
INSERT INTO q (a, b, c, d, e) VALUES (1, NULL, NULL, NULL, NULL);
INSERT INTO q (a) VALUES (1) ON DUPLICATE KEY UPDATE b = NULL;
INSERT INTO q (a) VALUES (1) ON DUPLICATE KEY UPDATE c = NULL;
INSERT INTO q (a) VALUES (1) ON DUPLICATE KEY UPDATE d = NULL;
INSERT INTO q (a) VALUES (1) ON DUPLICATE KEY UPDATE e = NULL;
INSERT IGNORE INTO q (a) VALUES (1), (2) ON DUPLICATE KEY UPDATE c = NULL;
CREATE TABLE r (a SMALLINT UNSIGNED NOT NULL, b VARCHAR(1), c DATETIME, d TINYINT, PRIMARY KEY (a), UNIQUE KEY rk (c, d));
REPLACE INTO r (a) VALUES (65535), (65535);
CREATE TABLE r2 (a INT NOT NULL, b INT, PRIMARY KEY (a));
REPLACE INTO r2 (a) VALUES (1), (1);
SELECT * FROM q ORDER BY a;
