-- A session through the stock mariadb client (tests/clients/mariadb_session.sh runs it with
-- --batch --force -vvv and compares everything it prints with mariadb_session.expected).
SELECT 1 + 1 AS two, 'zipdb' AS name, NULL AS nothing;
CREATE DATABASE shop;
CREATE DATABASE shop;
USE nosuchdb;
USE shop;
SELECT DATABASE();
CREATE TABLE items (
    id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    sku VARCHAR(20) NOT NULL,
    name VARCHAR(100) NOT NULL,
    category CHAR(10) NOT NULL DEFAULT 'misc',
    price DECIMAL(10,2) NOT NULL,
    qty INT UNSIGNED NOT NULL DEFAULT 0,
    weight DOUBLE,
    added DATE,
    updated DATETIME,
    note TEXT,
    UNIQUE KEY uk_sku (sku),
    KEY k_name (name),
    KEY k_cat_price (category, price)
) ENGINE=InnoDB ROW_FORMAT=COMPRESSED;
SHOW WARNINGS;
CREATE TABLE log (id BIGINT PRIMARY KEY, msg VARCHAR(50)) COMPRESSION='lz4';
SHOW TABLES;
SHOW COLUMNS FROM items;
SHOW CREATE TABLE items;
SHOW INDEX FROM items;
INSERT INTO items (sku, name, category, price, qty, weight, added, updated, note) VALUES
    ('A-1', 'apple', 'fruit', 0.50, 100, 0.2, '2024-01-05', '2024-01-05 10:00:00', NULL),
    ('A-2', 'banana', 'fruit', 0.25, 150, 0.15, '2024-01-06', '2024-01-06 11:30:00', 'ripe'),
    ('B-1', 'bread', 'bakery', 2.80, 20, 0.5, '2024-02-01', '2024-02-01 07:15:00', NULL),
    ('B-2', 'croissant', 'bakery', 1.20, 35, 0.07, '2024-02-01', '2024-02-01 07:20:00', 'butter'),
    ('C-1', 'cheese', 'dairy', 7.95, 12, 0.25, '2024-03-10', '2024-03-10 09:00:00', NULL),
    ('C-2', 'milk', 'dairy', 1.09, 60, 1.03, '2024-03-11', '2024-03-11 09:05:00', 'café au lait ☕');
INSERT INTO items (sku, name, price) VALUES ('Z-9', 'widget', 3.00);
SELECT LAST_INSERT_ID();
INSERT INTO items (sku, name, price) VALUES ('A-1', 'duplicate apple', 1.00);
INSERT INTO items (sku, name, price, qty) VALUES ('N-1', 'negative', 1.00, -5);
INSERT INTO items (sku, name) VALUES ('N-2', 'no price');
SELECT id, sku, name, category, price, qty, weight, added, updated, note FROM items ORDER BY id;
SELECT * FROM items WHERE sku = 'C-2'\G
SELECT 'it''s', "say \"hi\"", 'back\\slash', CONCAT('a', NULL), COALESCE(NULL, 'x');
SELECT name, price FROM items WHERE category = 'fruit' AND price < 1 ORDER BY price DESC;
SELECT name FROM items WHERE name LIKE 'c%' ORDER BY name;
SELECT sku, name FROM items WHERE sku IN ('B-2', 'C-1', 'X-0') ORDER BY sku;
SELECT id, name FROM items ORDER BY qty DESC LIMIT 3;
SELECT id, name FROM items ORDER BY id LIMIT 2 OFFSET 4;
SELECT category, COUNT(*) AS n, SUM(qty) AS units, MIN(price), MAX(price), AVG(price)
    FROM items GROUP BY category ORDER BY category;
SELECT COUNT(*), COUNT(note), SUM(price * qty) AS stock_value FROM items;
SELECT COUNT(DISTINCT category) FROM items;
SELECT name, UPPER(name), CHAR_LENGTH(note), LENGTH(note) FROM items WHERE note IS NOT NULL ORDER BY id;
UPDATE items SET qty = qty + 10 WHERE category = 'bakery';
UPDATE items SET price = 2.80 WHERE sku = 'B-1';
UPDATE items SET qty = 0 WHERE sku = 'none';
DELETE FROM items WHERE qty < 20;
SELECT sku, qty FROM items ORDER BY sku;
BEGIN;
INSERT INTO log VALUES (1, 'first');
UPDATE items SET price = 0 WHERE category = 'fruit';
SELECT COUNT(*) FROM items WHERE price = 0;
ROLLBACK;
SELECT COUNT(*) FROM items WHERE price = 0;
SELECT COUNT(*) FROM log;
START TRANSACTION;
INSERT INTO log VALUES (2, 'second');
INSERT INTO log VALUES (2, 'duplicate in a transaction');
INSERT INTO log VALUES (3, 'third');
COMMIT;
SELECT id, msg FROM log ORDER BY id;
SELECT * FROM no_such_table;
SELECT nosuchcolumn FROM items;
SELEC 1;
DROP TABLE log;
SHOW TABLES;
DROP DATABASE shop;
SHOW DATABASES LIKE 'shop';
SELECT 'done';
