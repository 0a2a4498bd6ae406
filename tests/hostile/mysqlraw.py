"""A minimal MySQL client/server protocol client over a raw socket, for the hostile suite.

Only what the checks need: the handshake (mysql_native_password with an empty password),
packets with any sequence id, text result sets (several, with SERVER_MORE_RESULTS_EXISTS),
COM_STMT_PREPARE / COM_STMT_EXECUTE with binary rows. Every socket operation has a timeout
(socket.timeout is raised past it); a closed connection raises Closed.
"""

import socket
import struct

# Capability flags.
LONG_PASSWORD = 1
LONG_FLAG = 1 << 2
CONNECT_WITH_DB = 1 << 3
PROTOCOL_41 = 1 << 9
TRANSACTIONS = 1 << 13
SECURE_CONNECTION = 1 << 15
MULTI_STATEMENTS = 1 << 16
MULTI_RESULTS = 1 << 17
PS_MULTI_RESULTS = 1 << 18
PLUGIN_AUTH = 1 << 19

BASE_CAPS = (
    LONG_PASSWORD
    | LONG_FLAG
    | PROTOCOL_41
    | TRANSACTIONS
    | SECURE_CONNECTION
    | MULTI_RESULTS
    | PS_MULTI_RESULTS
    | PLUGIN_AUTH
)

MORE_RESULTS_EXISTS = 0x0008

# Commands.
COM_QUIT = 0x01
COM_QUERY = 0x03
COM_FIELD_LIST = 0x04
COM_STMT_PREPARE = 0x16
COM_STMT_EXECUTE = 0x17
COM_STMT_SEND_LONG_DATA = 0x18
COM_STMT_CLOSE = 0x19

# Column / parameter types.
T_DECIMAL = 0x00
T_TINY = 0x01
T_SHORT = 0x02
T_LONG = 0x03
T_FLOAT = 0x04
T_DOUBLE = 0x05
T_NULL = 0x06
T_TIMESTAMP = 0x07
T_LONGLONG = 0x08
T_INT24 = 0x09
T_DATE = 0x0A
T_TIME = 0x0B
T_DATETIME = 0x0C
T_YEAR = 0x0D
T_VARCHAR = 0x0F
T_NEWDECIMAL = 0xF6
T_BLOB = 0xFC
T_VAR_STRING = 0xFD
T_STRING = 0xFE

MAX_CHUNK = 0xFFFFFF


class Closed(Exception):
    """The server closed the connection (or reset it)."""


class ServerErr(Exception):
    """An ERR packet where the caller needed something else."""

    def __init__(self, code, msg):
        super().__init__(f"error {code}: {msg}")
        self.code = code
        self.msg = msg


def lenenc(n):
    if n < 251:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + struct.pack("<H", n)
    if n < 1 << 24:
        return b"\xfd" + struct.pack("<I", n)[:3]
    return b"\xfe" + struct.pack("<Q", n)


def read_lenenc(p, pos):
    """(value, new position); value None for 0xfb (NULL)."""
    c = p[pos]
    if c < 251:
        return c, pos + 1
    if c == 0xFB:
        return None, pos + 1
    if c == 0xFC:
        return struct.unpack_from("<H", p, pos + 1)[0], pos + 3
    if c == 0xFD:
        return int.from_bytes(p[pos + 1 : pos + 4], "little"), pos + 4
    if c == 0xFE:
        return struct.unpack_from("<Q", p, pos + 1)[0], pos + 9
    raise ValueError(f"bad length-encoded integer {c:#x}")


def parse_err(p):
    code = struct.unpack_from("<H", p, 1)[0]
    msg = p[9:] if p[3:4] == b"#" else p[3:]
    return code, msg.decode("utf-8", "replace")


def is_eof(p):
    return len(p) < 9 and p[:1] == b"\xfe"


class Result:
    """One result of a command: kind 'rows' (cols, rows), 'ok' (affected) or 'err' (code, msg)."""

    def __init__(self, kind, **kw):
        self.kind = kind
        self.cols = kw.get("cols", [])
        self.types = kw.get("types", [])
        self.rows = kw.get("rows", [])
        self.affected = kw.get("affected", 0)
        self.code = kw.get("code", 0)
        self.msg = kw.get("msg", "")
        self.status = kw.get("status", 0)

    def __repr__(self):
        if self.kind == "err":
            return f"ERR {self.code} ({self.msg[:120]})"
        if self.kind == "ok":
            return f"OK (affected {self.affected})"
        rows = self.rows[:3]
        more = f" ... {len(self.rows)} rows" if len(self.rows) > 3 else ""
        return f"rows {short(rows)}{more}"

    def values(self):
        """Rows as lists of str (None for NULL)."""
        return [
            [None if v is None else (v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)) for v in r]
            for r in self.rows
        ]


def short(x, n=200):
    s = repr(x)
    return s if len(s) <= n else s[:n] + "..."


class Conn:
    def __init__(self, port, caps=BASE_CAPS, timeout=10.0, login=True, db=None, user="root"):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.seq = 0
        self.caps = caps
        self.conn_id = None
        if login:
            self.login(user, db)

    def settimeout(self, t):
        self.sock.settimeout(t)

    def close(self, reset=False):
        try:
            if reset:
                # SO_LINGER 0: the close sends a RST, as a client killed mid-query does.
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    # -- framing

    def recv_exact(self, n):
        chunks = []
        while n > 0:
            try:
                b = self.sock.recv(min(n, 1 << 20))
            except (ConnectionResetError, BrokenPipeError) as e:
                raise Closed(str(e))
            if not b:
                raise Closed("end of stream")
            chunks.append(b)
            n -= len(b)
        return b"".join(chunks)

    def read_packet(self):
        out = []
        while True:
            h = self.recv_exact(4)
            n = h[0] | h[1] << 8 | h[2] << 16
            self.seq = (h[3] + 1) & 0xFF
            out.append(self.recv_exact(n))
            if n < MAX_CHUNK:
                return b"".join(out)

    def send_raw(self, data):
        try:
            self.sock.sendall(data)
        except (ConnectionResetError, BrokenPipeError) as e:
            raise Closed(str(e))

    def send_packet(self, payload, seq=None):
        """One logical payload, split into packets as needed; `seq` overrides the sequence id."""
        if seq is not None:
            self.seq = seq
        out = []
        rest = payload
        while True:
            n = min(len(rest), MAX_CHUNK)
            out.append(struct.pack("<I", n)[:3] + bytes([self.seq]) + rest[:n])
            self.seq = (self.seq + 1) & 0xFF
            rest = rest[n:]
            if n < MAX_CHUNK:
                break
        self.send_raw(b"".join(out))

    def command(self, cmd, arg=b""):
        self.send_packet(bytes([cmd]) + arg, seq=0)

    # -- connection phase

    def read_handshake(self):
        p = self.read_packet()
        if p[:1] == b"\xff":
            raise ServerErr(*parse_err(p))
        pos = p.index(b"\x00", 1) + 1
        self.conn_id = struct.unpack_from("<I", p, pos)[0]
        return p

    def handshake_response(self, user="root", db=None):
        caps = self.caps | (CONNECT_WITH_DB if db else 0)
        p = struct.pack("<IIB", caps, 1 << 24, 45) + b"\x00" * 23
        p += user.encode() + b"\x00" + b"\x00"  # empty auth response (1-byte length 0)
        if db:
            p += db.encode() + b"\x00"
        p += b"mysql_native_password\x00"
        return p

    def login(self, user="root", db=None):
        self.read_handshake()
        self.send_packet(self.handshake_response(user, db), seq=1)
        p = self.read_packet()
        if p[:1] == b"\xfe":  # auth switch: answer with an empty password
            self.send_packet(b"")
            p = self.read_packet()
        if p[:1] == b"\xff":
            raise ServerErr(*parse_err(p))
        if p[:1] != b"\x00":
            raise ValueError(f"unexpected reply to login: {short(p)}")

    # -- text protocol

    def query(self, sql):
        """Sends COM_QUERY; returns every result (a list of Result)."""
        if isinstance(sql, str):
            sql = sql.encode()
        self.command(COM_QUERY, sql)
        return self.read_results()

    def query1(self, sql):
        """One statement that must give exactly one result."""
        rs = self.query(sql)
        if len(rs) != 1:
            raise ValueError(f"{len(rs)} results for one statement: {rs}")
        return rs[0]

    def read_results(self, binary=False):
        out = []
        while True:
            r = self.read_result(binary)
            out.append(r)
            if r.kind == "err" or not r.status & MORE_RESULTS_EXISTS:
                return out

    def read_result(self, binary=False):
        p = self.read_packet()
        if p[:1] == b"\xff":
            code, msg = parse_err(p)
            return Result("err", code=code, msg=msg)
        if p[:1] == b"\x00":
            affected, pos = read_lenenc(p, 1)
            _, pos = read_lenenc(p, pos)
            status = struct.unpack_from("<H", p, pos)[0]
            return Result("ok", affected=affected, status=status)
        ncols, _ = read_lenenc(p, 0)
        cols, types = [], []
        for _ in range(ncols):
            name, t = parse_coldef(self.read_packet())
            cols.append(name)
            types.append(t)
        p = self.read_packet()
        if not is_eof(p):
            raise ValueError(f"no EOF after column definitions: {short(p)}")
        rows = []
        while True:
            p = self.read_packet()
            if is_eof(p):
                status = struct.unpack_from("<H", p, 3)[0] if len(p) >= 5 else 0
                return Result("rows", cols=cols, types=types, rows=rows, status=status)
            if p[:1] == b"\xff":
                code, msg = parse_err(p)
                return Result("err", code=code, msg=msg)
            rows.append(parse_binary_row(p, types) if binary else parse_text_row(p))

    # -- binary protocol

    def prepare(self, sql):
        """COM_STMT_PREPARE: (stmt_id, n_params, n_cols) or a Result('err')."""
        if isinstance(sql, str):
            sql = sql.encode()
        self.command(COM_STMT_PREPARE, sql)
        return self.read_prepare_reply()

    def read_prepare_reply(self):
        p = self.read_packet()
        if p[:1] == b"\xff":
            code, msg = parse_err(p)
            return Result("err", code=code, msg=msg)
        if p[:1] != b"\x00" or len(p) < 12:
            raise ValueError(f"bad COM_STMT_PREPARE_OK: {short(p)}")
        stmt, ncols, nparams = struct.unpack_from("<IHH", p, 1)
        for n in (nparams, ncols):
            if n:
                for _ in range(n):
                    self.read_packet()
                e = self.read_packet()
                if not is_eof(e):
                    raise ValueError(f"no EOF after definitions: {short(e)}")
        return stmt, nparams, ncols

    def execute(self, stmt, params):
        """COM_STMT_EXECUTE with bound types; params: list of (type, bytes) or None."""
        self.command(COM_STMT_EXECUTE, execute_payload(stmt, params))
        return self.read_results(binary=True)


def execute_payload(stmt, params):
    p = struct.pack("<IBI", stmt, 0, 1)
    if params:
        bitmap = bytearray((len(params) + 7) // 8)
        types = b""
        values = b""
        for i, v in enumerate(params):
            if v is None:
                bitmap[i // 8] |= 1 << (i % 8)
                types += bytes([T_NULL, 0])
            else:
                types += bytes([v[0], 0])
                values += v[1]
        p += bytes(bitmap) + b"\x01" + types + values
    return p


def parse_coldef(p):
    pos = 0
    strs = []
    for _ in range(6):
        n, pos = read_lenenc(p, pos)
        strs.append(p[pos : pos + n])
        pos += n
    _, pos = read_lenenc(p, pos)  # 0x0c
    t = p[pos + 6]
    return strs[4].decode("utf-8", "replace"), t


def parse_text_row(p):
    row, pos = [], 0
    while pos < len(p):
        n, pos = read_lenenc(p, pos)
        if n is None:
            row.append(None)
        else:
            row.append(p[pos : pos + n])
            pos += n
    return row


def parse_binary_row(p, types):
    nb = (len(types) + 9) // 8
    bitmap = p[1 : 1 + nb]
    pos = 1 + nb
    row = []
    for i, t in enumerate(types):
        if bitmap[(i + 2) // 8] & (1 << ((i + 2) % 8)):
            row.append(None)
            continue
        if t == T_TINY:
            row.append(struct.unpack_from("<b", p, pos)[0]); pos += 1
        elif t in (T_SHORT, T_YEAR):
            row.append(struct.unpack_from("<h", p, pos)[0]); pos += 2
        elif t in (T_LONG, T_INT24):
            row.append(struct.unpack_from("<i", p, pos)[0]); pos += 4
        elif t == T_LONGLONG:
            row.append(struct.unpack_from("<q", p, pos)[0]); pos += 8
        elif t == T_FLOAT:
            row.append(struct.unpack_from("<f", p, pos)[0]); pos += 4
        elif t == T_DOUBLE:
            row.append(struct.unpack_from("<d", p, pos)[0]); pos += 8
        elif t == T_NULL:
            row.append(None)
        elif t in (T_DATE, T_DATETIME, T_TIMESTAMP, T_TIME):
            n = p[pos]
            row.append(p[pos + 1 : pos + 1 + n]); pos += 1 + n
        else:
            n, pos = read_lenenc(p, pos)
            row.append(p[pos : pos + n]); pos += n
    return row
