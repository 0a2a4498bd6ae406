// zipdb under the mysql2 driver: connect, every column type through `query` (text protocol,
// values escaped into the SQL by the driver) and `execute` (server-side prepared statements,
// binary protocol), NULLs, insertId/affectedRows, transactions, and errors with their MySQL
// codes (err.errno, err.sqlState). Exits non-zero on the first failed check.
//
// usage: node mysql2_test.js PORT
'use strict';
const assert = require('node:assert/strict');
const mysql = require('mysql2/promise');

const port = Number(process.argv[2]);
if (!port) {
  console.error('usage: node mysql2_test.js PORT');
  process.exit(2);
}
let checks = 0;
function eq(actual, expected, what) {
  checks++;
  assert.deepStrictEqual(actual, expected, what);
}

async function expectError(promise, errno, what) {
  checks++;
  try {
    await promise;
  } catch (e) {
    assert.equal(e.errno, errno, `${what}: ${e.message}`);
    assert.match(e.sqlState, /^[0-9A-Z]{5}$/, `${what}: SQLSTATE`);
    return e;
  }
  assert.fail(`${what}: no error, expected ${errno}`);
}

async function roundTrip(conn, run, label) {
  const t = `types_${label}`;
  await conn.query(`DROP TABLE IF EXISTS ${t}`);
  await conn.query(`CREATE TABLE ${t} (
      id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
      ti TINYINT, i INT, bi BIGINT, ubi BIGINT UNSIGNED, f FLOAT, d DOUBLE,
      dec1 DECIMAL(12,3), c CHAR(5), vc VARCHAR(50), tx TEXT, vb VARBINARY(20), bl BLOB,
      dt DATE, dtm DATETIME(6), n VARCHAR(5))`);
  const blob = Buffer.from(Array.from({ length: 300 }, (_, k) => k % 256));
  const vals = [-128, 2147483647, '-9223372036854775808', '18446744073709551615', 1.5,
    Math.PI, '-123456789.125', 'abc', 'héllo 日本 🎉', "it's a \\ \"text\"\n",
    Buffer.from([0, 0xff, 0x27, 0x5c]), blob, '2024-02-29', '2023-12-31 23:59:58.123456', null];
  const sql = `INSERT INTO ${t} (ti, i, bi, ubi, f, d, dec1, c, vc, tx, vb, bl, dt, dtm, n)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
  const [res] = await run(sql, vals);
  eq(res.insertId, 1, `${label}: insertId`);
  eq(res.affectedRows, 1, `${label}: affectedRows`);
  const [res2] = await run(sql, vals.map(() => null));
  eq(res2.insertId, 2, `${label}: second insertId`);

  const [rows] = await run(`SELECT * FROM ${t} WHERE id = ?`, [1]);
  eq(rows.length, 1, `${label}: one row`);
  const r = rows[0];
  eq(r.id, 1, `${label}: id`);
  eq(r.ti, -128, `${label}: TINYINT`);
  eq(r.i, 2147483647, `${label}: INT`);
  eq(String(r.bi), '-9223372036854775808', `${label}: BIGINT`);
  eq(String(r.ubi), '18446744073709551615', `${label}: BIGINT UNSIGNED`);
  eq(r.f, 1.5, `${label}: FLOAT`);
  eq(r.d, Math.PI, `${label}: DOUBLE`);
  eq(r.dec1, '-123456789.125', `${label}: DECIMAL`);
  eq(r.c, 'abc', `${label}: CHAR`);
  eq(r.vc, 'héllo 日本 🎉', `${label}: VARCHAR`);
  eq(r.tx, "it's a \\ \"text\"\n", `${label}: TEXT`);
  eq(r.vb, Buffer.from([0, 0xff, 0x27, 0x5c]), `${label}: VARBINARY`);
  eq(r.bl, blob, `${label}: BLOB`);
  eq(r.dt, '2024-02-29', `${label}: DATE`);
  eq(r.dtm, '2023-12-31 23:59:58.123456', `${label}: DATETIME(6)`);
  eq(r.n, null, `${label}: NULL`);
  const [nulls] = await run(`SELECT * FROM ${t} WHERE id = ?`, [2]);
  for (const [k, v] of Object.entries(nulls[0])) {
    if (k !== 'id') eq(v, null, `${label}: NULL row, column ${k}`);
  }
  const [upd] = await run(`UPDATE ${t} SET i = ? WHERE id IN (?, ?)`, [7, 1, 2]);
  eq(upd.affectedRows, 2, `${label}: UPDATE affectedRows`);
  const [same] = await run(`UPDATE ${t} SET i = ? WHERE id = ?`, [7, 1]);
  eq(same.changedRows, 0, `${label}: unchanged UPDATE changedRows`);
  const [del] = await run(`DELETE FROM ${t} WHERE id = ?`, [2]);
  eq(del.affectedRows, 1, `${label}: DELETE affectedRows`);
}

async function transactions(conn, run, label) {
  await conn.query('CREATE TABLE IF NOT EXISTS acct (id INT PRIMARY KEY, bal INT NOT NULL)');
  await conn.query('DELETE FROM acct');
  await conn.beginTransaction();
  await run('INSERT INTO acct VALUES (?, ?)', [1, 100]);
  await conn.commit();
  await conn.beginTransaction();
  await run('UPDATE acct SET bal = bal - ? WHERE id = ?', [30, 1]);
  const [[inside]] = await run('SELECT bal FROM acct WHERE id = ?', [1]);
  eq(inside.bal, 70, `${label}: read own write`);
  await conn.rollback();
  const [[after]] = await run('SELECT bal FROM acct WHERE id = ?', [1]);
  eq(after.bal, 100, `${label}: rolled back`);
}

async function errorCodes(conn, run, label) {
  await expectError(run('INSERT INTO acct VALUES (?, ?)', [1, 5]), 1062, `${label}: duplicate`);
  await expectError(run('SELECT * FROM nope WHERE id = ?', [1]), 1146, `${label}: no table`);
  await expectError(run('SELECT nope FROM acct WHERE id = ?', [1]), 1054, `${label}: no column`);
  await expectError(run('INSERT INTO acct VALUES (?, ?)', [2, null]), 1048, `${label}: NOT NULL`);
  await expectError(run('SELEC ?', [1]), 1064, `${label}: syntax`);
  await conn.ping();
}

async function main() {
  const base = { host: '127.0.0.1', port, user: 'root', supportBigNumbers: true,
    bigNumberStrings: true, dateStrings: true };
  await expectError(mysql.createConnection({ ...base, database: 'no_such_db' }), 1049,
    'connect to an unknown database');
  const conn = await mysql.createConnection(base);
  await conn.query('CREATE DATABASE IF NOT EXISTS nodetest');
  await conn.query('USE nodetest');
  const [[v]] = await conn.query('SELECT VERSION() AS v');
  eq(typeof v.v, 'string', 'VERSION()');
  const modes = {
    query: (sql, args) => conn.query(sql, args),
    execute: (sql, args) => conn.execute(sql, args),
  };
  for (const [label, run] of Object.entries(modes)) {
    await roundTrip(conn, run, label);
    await transactions(conn, run, label);
    await errorCodes(conn, run, label);
  }
  // A pool, as applications use the driver.
  const pool = mysql.createPool({ ...base, database: 'nodetest', connectionLimit: 3 });
  const counts = await Promise.all([1, 2, 3, 4, 5].map((k) =>
    pool.execute('SELECT bal + ? AS b FROM acct WHERE id = 1', [k]).then(([r]) => r[0].b)));
  eq(counts, [101, 102, 103, 104, 105], 'pool');
  await pool.end();
  await conn.end();
  console.log(`mysql2: ${checks} checks passed`);
}

main().catch((e) => {
  console.error('FAIL:', e && e.stack ? e.stack : e);
  process.exit(1);
});
