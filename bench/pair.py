"""Throwaway servers for the comparison scripts (bench/joins.py, bench/engine.py): a MariaDB
started from scratch in a work directory, and a wait for a server's port."""
import os
import subprocess
import time

import pymysql


def wait_port(port, timeout=120):
    """Returns once a root login on 127.0.0.1:port works; exits the script after timeout s."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        try:
            pymysql.connect(host="127.0.0.1", port=port, user="root").close()
            return
        except pymysql.MySQLError:
            time.sleep(0.2)
    raise SystemExit(f"server on port {port} did not start")


def start_mariadb(work, port, pool_mb, *extra):
    """A MariaDB with a fresh data directory under work, InnoDB's pool of pool_mb, no grant
    tables, utf8mb4_general_ci (zipdb's collation); extra are more mariadbd options."""
    mdata = os.path.join(work, "m")
    subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={mdata}", "--user=root"],
                   check=True, capture_output=True)
    log = open(os.path.join(work, "maria.log"), "w")
    return subprocess.Popen(
        ["mariadbd", "--no-defaults", "--user=root", f"--datadir={mdata}", f"--port={port}",
         f"--socket={work}/m.sock", "--skip-grant-tables", f"--innodb-buffer-pool-size={pool_mb}M",
         "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci", *extra],
        stdout=log, stderr=log)
