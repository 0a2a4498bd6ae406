-- Defaults of the session switches clients read and set (mysqldump saves and sets
-- UNIQUE_CHECKS and FOREIGN_KEY_CHECKS; ORMs read sql_auto_is_null), shown ON/OFF, and a SET
-- read back.
SELECT @@sql_auto_is_null, @@sql_safe_updates, @@unique_checks, @@foreign_key_checks, @@sql_notes, @@sql_warnings, @@big_tables, @@sql_big_selects, @@profiling, @@sql_log_bin;
SHOW VARIABLES WHERE Variable_name IN ('sql_auto_is_null', 'sql_safe_updates', 'unique_checks', 'foreign_key_checks', 'sql_notes', 'sql_warnings', 'big_tables', 'sql_big_selects', 'profiling', 'sql_log_bin');
SET unique_checks = 0, sql_auto_is_null = 1;
SELECT @@unique_checks, @@sql_auto_is_null;
SHOW VARIABLES LIKE 'unique_checks';
