-- CREATE TABLE ... LIKE: the copy has the source's columns (types, NULL, defaults,
-- AUTO_INCREMENT), primary key and secondary keys, no rows, and its AUTO_INCREMENT counter
-- starts again; errors for a missing source (1146), an existing target (1050, a note with IF
-- NOT EXISTS), the table itself (1066). (Not the parenthesized `(LIKE src)`: the parser
-- reads it as a column list. Not SHOW KEYS: zipdb's Cardinality is NULL.)
CREATE TABLE src (id INT AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL DEFAULT 3, c VARCHAR(10), d DECIMAL(6,2) DEFAULT 1.50, UNIQUE KEY uc (c), KEY kk (k, id));
INSERT INTO src (k, c) VALUES (1, 'a'), (2, 'b');
CREATE TABLE dst LIKE src;
SELECT COUNT(*) FROM dst;
SHOW COLUMNS FROM dst;
INSERT INTO dst (c) VALUES ('x');
SELECT id, k, c, d FROM dst;
INSERT INTO dst (c) VALUES ('x');
CREATE TABLE IF NOT EXISTS dst LIKE src;
SHOW WARNINGS;
CREATE TABLE dst LIKE src;
CREATE TABLE src LIKE src;
CREATE TABLE z LIKE nosuch;
CREATE TABLE z2 LIKE src;
INSERT INTO z2 SELECT * FROM src;
SELECT * FROM z2 ORDER BY id;
INSERT INTO z2 (c) VALUES ('c');
SELECT id, c FROM z2 ORDER BY id;
