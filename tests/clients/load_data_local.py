"""LOAD DATA LOCAL through PyMySQL (local_infile=True), and clients that stop mid-file.

usage: load_data_local.py PORT WORKDIR
"""
import socket
import struct
import sys

import pymysql

port, work = int(sys.argv[1]), sys.argv[2]


def connect(**kw):
    return pymysql.connect(host="127.0.0.1", port=port, user="root", database="d", **kw)


path = f"{work}/py.csv"
with open(path, "w") as f:
    for i in range(3000):
        f.write(f"{900000 + i},{i},\"p,{i}\"\n")

c = connect(local_infile=True)
cur = c.cursor()
n = cur.execute(
    f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE t FIELDS TERMINATED BY ',' "
    "ENCLOSED BY '\"'"
)
assert n == 3000, n
cur.execute("SELECT COUNT(*), MIN(c), MAX(n) FROM t WHERE id >= 900000")
assert cur.fetchone() == (3000, "p,0", 2999), "rows"
c.commit()

# A client that starts sending the file, then closes the socket: the load is undone and the
# server serves the next client.


def packet(seq, payload):
    return struct.pack("<I", len(payload))[:3] + bytes([seq]) + payload


c2 = connect(local_infile=True)
sock = c2._sock
sql = f"LOAD DATA LOCAL INFILE 'x' INTO TABLE t".encode()
sock.sendall(packet(0, b"\x03" + sql))
head = sock.recv(4)
body = sock.recv(struct.unpack("<I", head[:3] + b"\0")[0])
assert body[:1] == b"\xfb" and body[1:] == b"x", body
sock.sendall(packet(head[3] + 1, b"700000\t1\tgone\n" * 10))
sock.close()

c3 = connect()
cur = c3.cursor()
cur.execute("SELECT COUNT(*) FROM t WHERE id = 700000")
assert cur.fetchone() == (0,), "a cut load left rows"
print("pymysql: ok")
