"""SHOW PROCESSLIST and KILL through PyMySQL, with several connections: every connection is
listed with its user, host, database, command and statement; KILL QUERY makes a running
statement fail with 1317 and undoes it, leaving the connection usable; KILL CONNECTION closes
the target's socket (its blocked call and its next call fail); an unknown id is error 1094.

usage: kill_processlist.py PORT
"""
import sys
import threading
import time

import pymysql

PORT = int(sys.argv[1])
checks = 0


def connect(db=None):
    return pymysql.connect(host="127.0.0.1", port=PORT, user="root", database=db,
                           autocommit=True, read_timeout=60)


def check(ok, what):
    global checks
    checks += 1
    if not ok:
        sys.exit(f"FAIL: {what}")


def processlist(conn):
    with conn.cursor() as c:
        c.execute("SHOW FULL PROCESSLIST")
        cols = [d[0] for d in c.description]
        return {r[0]: dict(zip(cols, r)) for r in c.fetchall()}


def wait_for(conn, pred, what, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        rows = processlist(conn)
        if pred(rows):
            return rows
        time.sleep(0.05)
    sys.exit(f"FAIL: {what}; processlist: {processlist(conn)}")


def conn_id(conn):
    with conn.cursor() as c:
        c.execute("SELECT CONNECTION_ID()")
        return c.fetchone()[0]


def error_of(fn):
    try:
        fn()
    except pymysql.MySQLError as e:
        return e
    return None


class Blocked(threading.Thread):
    """Runs one statement on `conn` in the background and keeps its error (or None)."""

    def __init__(self, conn, sql):
        super().__init__(daemon=True)
        self.conn, self.sql, self.error, self.done = conn, sql, "not run", False

    def run(self):
        def go():
            with self.conn.cursor() as c:
                c.execute(self.sql)
        self.error = error_of(go)
        self.done = True


def main():
    admin = connect()
    with admin.cursor() as c:
        c.execute("CREATE DATABASE IF NOT EXISTS killdb")
        c.execute("CREATE TABLE IF NOT EXISTS killdb.t (id INT PRIMARY KEY, v INT)")
        c.execute("DELETE FROM killdb.t")
        c.execute("INSERT INTO killdb.t VALUES (1, 0), (2, 0)")
    holder = connect("killdb")
    victim = connect("killdb")
    vid, hid, aid = conn_id(victim), conn_id(holder), conn_id(admin)

    # Every connection is listed; the idle one sleeps in its database.
    rows = processlist(admin)
    check({vid, hid, aid} <= set(rows), f"ids {vid}, {hid}, {aid} in {sorted(rows)}")
    v = rows[vid]
    check(v["User"] == "root" and v["db"] == "killdb" and v["Command"] == "Sleep"
          and v["Info"] is None, f"idle row {v}")
    check(v["Host"].startswith("127.0.0.1:"), f"host {v['Host']}")
    me = rows[aid]
    check(me["Command"] == "Query" and me["Info"] == "SHOW FULL PROCESSLIST", f"own row {me}")
    with admin.cursor() as c:
        c.execute("SELECT ID, DB, COMMAND FROM information_schema.PROCESSLIST WHERE ID = %s", (vid,))
        check(c.fetchall() == ((vid, "killdb", "Sleep"),), "information_schema.PROCESSLIST")

    # Unknown id.
    e = error_of(lambda: admin.cursor().execute("KILL 987654"))
    check(e is not None and e.args == (1094, "Unknown thread id: 987654"), f"KILL unknown: {e!r}")

    # KILL QUERY of a statement waiting for a row lock: it fails with 1317 once it runs on,
    # its change is undone, and the connection stays usable.
    with holder.cursor() as c:
        c.execute("BEGIN")
        c.execute("UPDATE t SET v = v + 1 WHERE id = 1")
    t = Blocked(victim, "UPDATE t SET v = v + 10 WHERE id IN (2, 1)")
    t.start()
    rows = wait_for(admin, lambda r: r.get(vid, {}).get("Command") == "Query",
                    "the blocked UPDATE shows as a running query")
    check(rows[vid]["Info"].startswith("UPDATE t SET v = v + 10") and rows[vid]["State"] != "",
          f"running row {rows[vid]}")
    admin.cursor().execute(f"KILL QUERY {vid}")
    holder.cursor().execute("ROLLBACK")
    t.join(30)
    check(t.done and isinstance(t.error, pymysql.MySQLError) and t.error.args[0] == 1317,
          f"KILL QUERY: the statement ended with {t.error!r}")
    with victim.cursor() as c:
        c.execute("SELECT id, v FROM t ORDER BY id")
        check(c.fetchall() == ((1, 0), (2, 0)), "the killed UPDATE was undone")
        c.execute("SELECT 1")
        check(c.fetchone() == (1,), "the connection works after KILL QUERY")
    # A KILL QUERY that arrives while the connection is idle does not hit its next statement.
    admin.cursor().execute(f"KILL QUERY {vid}")
    with victim.cursor() as c:
        c.execute("SELECT COUNT(*) FROM t")
        check(c.fetchone() == (2,), "KILL QUERY of an idle connection")

    # KILL QUERY in the middle of a long scan (a join of 3000 x 3000 x 20 rows with no usable
    # condition: 180 million row combinations, about 30 s on a debug build): the scan stops
    # within a few hundred rows of the flag, not when it would have ended.
    with admin.cursor() as c:
        c.execute("CREATE TABLE IF NOT EXISTS killdb.big (id INT PRIMARY KEY, v INT)")
        c.execute("DELETE FROM killdb.big")
        for start in range(0, 3000, 500):
            c.execute("INSERT INTO killdb.big VALUES "
                      + ",".join(f"({i}, {i % 7})" for i in range(start, start + 500)))
    t = Blocked(victim, "SELECT COUNT(*) FROM big a JOIN big b ON a.v + b.v < 100 "
                        "JOIN big c ON c.id < 20 AND c.v + a.v > 100")
    began = time.monotonic()
    t.start()
    wait_for(admin, lambda r: r.get(vid, {}).get("Command") == "Query",
             "the long join shows as a running query")
    admin.cursor().execute(f"KILL QUERY {vid}")
    t.join(30)
    took = time.monotonic() - began
    check(t.done and isinstance(t.error, pymysql.MySQLError) and t.error.args[0] == 1317,
          f"KILL QUERY of a scan: the statement ended with {t.error!r}")
    check(took < 5, f"KILL QUERY stopped the scan after {took:.1f} s")
    with victim.cursor() as c:
        c.execute("SELECT 1")
        check(c.fetchone() == (1,), "the connection works after KILL QUERY of a scan")

    # KILL CONNECTION of a connection blocked in a lock wait: its call fails at once (not after
    # the lock wait timeout), and it leaves the process list.
    with holder.cursor() as c:
        c.execute("BEGIN")
        c.execute("UPDATE t SET v = v + 1 WHERE id = 1")
    t = Blocked(victim, "UPDATE t SET v = v + 10 WHERE id = 1")
    t.start()
    wait_for(admin, lambda r: r.get(vid, {}).get("Command") == "Query", "second blocked UPDATE")
    start = time.time()
    admin.cursor().execute(f"KILL CONNECTION {vid}")
    t.join(10)
    check(t.done and isinstance(t.error, pymysql.MySQLError),
          f"KILL CONNECTION: the blocked call ended with {t.error!r}")
    check(time.time() - start < 10, "KILL CONNECTION took effect before the lock wait timeout")
    holder.cursor().execute("ROLLBACK")
    e = error_of(lambda: victim.cursor().execute("SELECT 1"))
    check(e is not None, "a killed connection's next call fails")
    wait_for(admin, lambda r: vid not in r, "the killed connection leaves the list")

    # KILL of an idle connection: its next call fails.
    idle = connect()
    iid = conn_id(idle)
    admin.cursor().execute(f"KILL {iid}")
    e = error_of(lambda: idle.cursor().execute("SELECT 1"))
    check(e is not None, f"idle connection after KILL: {e!r}")
    wait_for(admin, lambda r: iid not in r, "the killed idle connection leaves the list")

    # A session that kills itself is told so, and is closed.
    e = error_of(lambda: holder.cursor().execute(f"KILL {hid}"))
    check(e is not None and e.args[0] == 1927, f"self KILL: {e!r}")
    wait_for(admin, lambda r: hid not in r, "the self-killed connection leaves the list")
    admin.close()
    print(f"kill/processlist: {checks} checks passed")


if __name__ == "__main__":
    main()
