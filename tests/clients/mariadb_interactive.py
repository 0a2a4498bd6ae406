"""The stock `mariadb` client at a terminal (a pseudo-terminal): connect, `use` a database
(the client then loads table and column names for tab completion: SHOW DATABASES, SHOW
TABLES and a field list per table), complete a table name with TAB, run queries, `\\s`
(status), a failing statement, and `exit`. Checks what the client prints at each step.

usage: mariadb_interactive.py PORT
"""
import os
import pty
import re
import select
import sys
import time

PORT = sys.argv[1]
TIMEOUT = 20.0


class Term:
    """A child process on a pseudo-terminal, read until an expected pattern shows up."""

    def __init__(self, argv):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.environ["TERM"] = "dumb"
            # No ~/.my.cnf, no history file from the user running the test.
            os.environ["MYSQL_HISTFILE"] = "/dev/null"
            os.execvp(argv[0], argv)
        self.seen = ""  # everything printed so far
        self.pos = 0  # where the next expect starts looking

    def send(self, text):
        os.write(self.fd, text.encode())

    def expect(self, pattern, what):
        deadline = time.time() + TIMEOUT
        rx = re.compile(pattern)
        while True:
            m = rx.search(self.seen, self.pos)
            if m:
                self.pos = m.end()
                return m
            left = deadline - time.time()
            if left <= 0:
                sys.exit(f"FAIL: {what}: no /{pattern}/ within {TIMEOUT} s; the client printed:\n"
                         + self.seen[self.pos:])
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    data = b""
                if not data:
                    sys.exit(f"FAIL: {what}: the client exited; it printed:\n" + self.seen[self.pos:])
                self.seen += data.decode("utf-8", "replace").replace("\r\n", "\n")

    def wait(self):
        deadline = time.time() + TIMEOUT
        while time.time() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.05)
        sys.exit("FAIL: the client did not exit")


def main():
    checks = 0
    t = Term(["mariadb", "--no-defaults", "-h", "127.0.0.1", "-P", PORT, "-u", "root"])
    t.expect(r"Welcome to the MariaDB monitor", "banner")
    m = t.expect(r"Server version: (\S+)", "server version in the banner")
    assert "zipdb" in m.group(1), m.group(1)
    # The client's prompt names the server kind: MySQL for a server that is not MariaDB.
    t.expect(r"MySQL \[\(none\)\]> ", "first prompt")
    checks += 3

    t.send("CREATE DATABASE ttyshop;\n")
    t.expect(r"Query OK, 1 row affected", "CREATE DATABASE")
    t.send("CREATE TABLE ttyshop.fruitbasket (id INT PRIMARY KEY, fruitname VARCHAR(20), price DECIMAL(6,2));\n")
    t.expect(r"Query OK, 0 rows affected", "CREATE TABLE")
    t.send("INSERT INTO ttyshop.fruitbasket VALUES (1, 'apple', 0.5), (2, 'pear', 0.75);\n")
    t.expect(r"Query OK, 2 rows affected", "INSERT")
    t.expect(r"Records: 2  Duplicates: 0  Warnings: 0", "INSERT info")
    checks += 4

    # `use` loads the names for completion (what -A would skip).
    t.send("use ttyshop\n")
    t.expect(r"Reading table information for completion of table and column names",
             "completion loading")
    t.expect(r"Database changed", "use")
    t.expect(r"MySQL \[ttyshop\]> ", "prompt with the database")
    checks += 3

    # TAB completes a column name and a table name from the loaded lists (the prefixes are
    # chosen to match no SQL keyword, which the client completes too).
    t.send("SELECT fruitn\t FROM fruitb\t ORDER BY id;\n")
    t.expect(r"\| fruitname\s+\|", "completed column and table: header")
    t.expect(r"\| apple\s+\|\s*\n\| pear\s+\|", "completed column and table: rows")
    t.expect(r"2 rows in set", "row count")
    checks += 3

    t.send("SELECT id, price FROM fruitbasket WHERE id = 2\\G\n")
    t.expect(r"\*+ 1\. row \*+\n\s+id: 2\n\s*price: 0\.75", "vertical output")
    checks += 1

    t.send("\\s\n")
    t.expect(r"Current database:\s+ttyshop", "status: database")
    t.expect(r"Current user:\s+root@", "status: user")
    t.expect(r"Server version:\s+\S*zipdb", "status: server version")
    t.expect(r"Protocol version:\s+10", "status: protocol")
    t.expect(r"Uptime:\s+.*\n+Threads: \d+\s+Questions: \d+", "status: uptime and threads")
    checks += 5

    t.send("SELECT nope FROM fruitbasket;\n")
    t.expect(r"ERROR 1054 \(42S22\): Unknown column 'nope'", "error message")
    t.send("SHOW TABLES;\n")
    t.expect(r"\| Tables_in_ttyshop \|\n\+-+\+\n\| fruitbasket\s+\|", "SHOW TABLES after an error")
    checks += 2

    t.send("exit\n")
    t.expect(r"Bye", "exit")
    rc = t.wait()
    assert rc == 0, f"exit status {rc}"
    checks += 2
    print(f"mariadb interactive: {checks} checks passed")


if __name__ == "__main__":
    main()
