#!/usr/bin/env python3
"""500 concurrent client connections, all open at the same time.

Each of N threads connects (authenticating as root), runs SELECT 1, a point select and an
INSERT, then waits at a barrier so that all N are open at once; a further connection must
then see Threads_connected >= N + 2 (itself and the admin connection included) and the N rows. After all close,
Threads_connected must fall back to 1 and the server must still answer.

usage: many_connections.py PORT [N]
"""

import sys
import threading
import time

import pymysql

PORT = int(sys.argv[1])
N = int(sys.argv[2]) if len(sys.argv) > 2 else 500
DB = "many_conns"


def connect(db=DB):
    return pymysql.connect(host="127.0.0.1", port=PORT, user="root", password="", database=db,
                           autocommit=True, connect_timeout=60, read_timeout=120)


def threads_connected(cur):
    cur.execute("SHOW STATUS LIKE 'Threads_connected'")
    name, value = cur.fetchone()
    assert name == "Threads_connected", name
    return int(value)


admin = connect(None)
acur = admin.cursor()
acur.execute(f"DROP DATABASE IF EXISTS {DB}")
acur.execute(f"CREATE DATABASE {DB}")
acur.execute(f"USE {DB}")
acur.execute("CREATE TABLE small (id INT PRIMARY KEY, v VARCHAR(20))")
acur.executemany("INSERT INTO small VALUES (%s, %s)", [(i, f"v{i}") for i in range(100)])
acur.execute("CREATE TABLE hits (conn INT PRIMARY KEY, cid BIGINT)")
acur.execute("SHOW VARIABLES LIKE 'max_connections'")
max_conns = int(acur.fetchone()[1])
assert max_conns >= N + 2, f"max_connections is {max_conns}, need {N + 2}"

all_open = threading.Barrier(N + 1, timeout=180)
release = threading.Event()
errors = []


def client(i):
    try:
        con = connect()
        try:
            cur = con.cursor()
            cur.execute("SELECT 1")
            assert cur.fetchone() == (1,), "SELECT 1"
            cur.execute("SELECT v FROM small WHERE id = %s", (i % 100,))
            assert cur.fetchone() == (f"v{i % 100}",), "point select"
            cur.execute("SELECT CONNECTION_ID()")
            (cid,) = cur.fetchone()
            cur.execute("INSERT INTO hits VALUES (%s, %s)", (i, cid))
            assert cur.rowcount == 1, "INSERT"
            all_open.wait()
            # Still usable while everyone is connected.
            release.wait(180)
            cur.execute("SELECT COUNT(*) FROM hits")
            assert cur.fetchone() == (N,), "count while all connected"
        finally:
            con.close()
    except Exception as e:  # noqa: BLE001 - every failure is reported below
        errors.append(f"connection {i}: {type(e).__name__}: {e}")
        all_open.abort()


t0 = time.time()
threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(N)]
for t in threads:
    t.start()
try:
    all_open.wait()
except threading.BrokenBarrierError:
    pass
opened = time.time() - t0
if not errors:
    check = connect()
    ccur = check.cursor()
    tc = threads_connected(ccur)
    ccur.execute("SELECT COUNT(*), COUNT(DISTINCT cid) FROM hits")
    rows, cids = ccur.fetchone()
    print(f"  {N} connections open after {opened:.1f} s: Threads_connected = {tc}, "
          f"{rows} rows from {cids} distinct connection ids")
    # The N clients, the admin connection and this one.
    if tc < N + 2:
        errors.append(f"Threads_connected {tc} < {N + 2} with {N} clients and 2 more open")
    if (rows, cids) != (N, N):
        errors.append(f"hits: {rows} rows, {cids} distinct connection ids, want {N}")
    check.close()
release.set()
for t in threads:
    t.join(240)
if any(t.is_alive() for t in threads):
    errors.append("some client threads did not finish")

if not errors:
    # Closed connections must leave the server's count (it notices the close asynchronously).
    deadline = time.time() + 30
    while True:
        tc = threads_connected(acur)
        if tc == 1 or time.time() > deadline:
            break
        time.sleep(0.2)
    if tc != 1:
        errors.append(f"Threads_connected is {tc} after all clients closed, want 1")
    acur.execute("SELECT COUNT(*) FROM small")
    if acur.fetchone() != (100,):
        errors.append("server answers wrongly after the clients closed")
    acur.execute(f"DROP DATABASE {DB}")

admin.close()
if errors:
    for e in errors[:20]:
        print("  ", e)
    print(f"FAILED: many_connections: {len(errors)} errors")
    sys.exit(1)
print(f"many_connections: {N} concurrent connections ok ({time.time() - t0:.1f} s)")
