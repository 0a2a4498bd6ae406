-- Text read as dates the way MariaDB reads it, by one reader for CAST, date functions,
-- storage, comparison and key bounds: delimited dates with any punctuation, two-digit years,
-- fields of any width, compact digit runs of any length (24031 is 2024-03-01), the time after
-- whitespace, T or punctuation, text left over (a warning, the value kept), and what is no
-- date at all (NULL or the zero date, with a warning). Each statement's warnings are compared
-- by the harness itself.
SELECT CAST('2024.03.10' AS DATE), CAST('24-3-1 1:2:3.4' AS DATETIME(6)), CAST('05-1-1' AS DATE),
  CAST('2024-0003-10' AS DATE), CAST('10:11:12' AS DATE);
SELECT CAST('24031' AS DATE), CAST('2403101' AS DATETIME), CAST('240310T101112' AS DATETIME),
  CAST('20240310101112.5' AS DATETIME(6)), CAST('310000' AS DATE);
SELECT CAST('2024-03-10 junk' AS DATE), CAST('2024-03-10 10::11' AS DATETIME),
  CAST('2024-03-10T10:11:12Z' AS DATETIME), CAST('2024-03-10 10:11:12.1234567' AS DATETIME(6));
SELECT CAST('2024--03--10' AS DATE), CAST('20240310.5' AS DATE), CAST('2024-3' AS DATE),
  CAST('2024-02-30' AS DATE), CAST('x2024-03-10' AS DATE);
SELECT YEAR('24.03.10'), MONTH('2024/3/1 1.2.3'), DAYOFMONTH('2403101');
SELECT '2024.03.10' = DATE'2024-03-10', '24031' = DATE'2024-03-01',
  '2024-03-10 junk' = DATE'2024-03-10', '2024--03--10' < DATE'0001-01-01';
CREATE TABLE td (id INT PRIMARY KEY, d DATE, t DATETIME(6), KEY kd (d));
INSERT IGNORE INTO td VALUES (1, '2024.03.10', '24-3-1 1:2:3.4'), (2, '24031', '2403101'),
  (3, '2024-03-10 junk', '2024-03-10 10:11:12.1234567'), (4, '2024--03--10', '20240310.5');
SHOW WARNINGS;
SELECT id, d, t FROM td ORDER BY id;
SELECT id FROM td WHERE d = '2024.03.10' ORDER BY id;
SELECT id FROM td WHERE d = '24031' ORDER BY id;
