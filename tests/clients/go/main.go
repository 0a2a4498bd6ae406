// Drives zipdb through github.com/go-sql-driver/mysql: connect, Ping, Exec with arguments
// both as server-side prepared statements (interpolateParams=false, the driver's default) and
// interpolated into text queries (interpolateParams=true), every column type scanned back,
// NULLs, transactions, LastInsertId/RowsAffected, and errors with their MySQL numbers.
// Exits non-zero on the first failed check.
//
// usage: go run . 127.0.0.1:PORT
package main

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/go-sql-driver/mysql"
)

var checks int

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "FAIL: "+format+"\n", args...)
	os.Exit(1)
}

func check(ok bool, format string, args ...interface{}) {
	checks++
	if !ok {
		fail(format, args...)
	}
}

func must(err error, what string) {
	if err != nil {
		fail("%s: %v", what, err)
	}
}

// mysqlErr: the MySQL error number of err, or 0.
func mysqlErr(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

func open(addr, db string, interpolate bool) *sql.DB {
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "tcp"
	cfg.Addr = addr
	cfg.DBName = db
	cfg.ParseTime = true
	cfg.InterpolateParams = interpolate
	cfg.Loc = time.UTC
	conn, err := sql.Open("mysql", cfg.FormatDSN())
	must(err, "sql.Open")
	return conn
}

type row struct {
	id       int64
	ti       int8
	si       int16
	i        int32
	bi       int64
	ubi      uint64
	f        float32
	d        float64
	dec      string
	c        string
	vc       string
	tx       string
	bin      []byte
	blob     []byte
	date     time.Time
	dt       time.Time
	nullable sql.NullString
}

func roundTrip(db *sql.DB, label string) {
	table := "types_" + label
	_, err := db.Exec("DROP TABLE IF EXISTS " + table)
	must(err, label+": drop")
	_, err = db.Exec(`CREATE TABLE ` + table + ` (
		id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
		ti TINYINT, si SMALLINT, i INT, bi BIGINT, ubi BIGINT UNSIGNED,
		f FLOAT, d DOUBLE, dec1 DECIMAL(12,3), c CHAR(5), vc VARCHAR(50), tx TEXT,
		vb VARBINARY(20), bl BLOB, dt DATE, dtm DATETIME(6), n VARCHAR(5))`)
	must(err, label+": create")
	ins := "INSERT INTO " + table +
		" (ti, si, i, bi, ubi, f, d, dec1, c, vc, tx, vb, bl, dt, dtm, n) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	blob := make([]byte, 300)
	for k := range blob {
		blob[k] = byte(k)
	}
	day := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)
	moment := time.Date(2023, 12, 31, 23, 59, 58, 123456000, time.UTC)
	want := row{0, -128, 32767, -2147483648, math.MinInt64, math.MaxUint64, 1.5, math.Pi,
		"-123456789.125", "abc", "héllo 日本 🎉", "it's a \\ \"text\"\n", []byte{0, 0xff, '\'', '\\'},
		blob, day, moment, sql.NullString{}}
	res, err := db.Exec(ins, want.ti, want.si, want.i, want.bi, want.ubi, want.f, want.d, want.dec,
		want.c, want.vc, want.tx, want.bin, want.blob, want.date, want.dt, nil)
	must(err, label+": insert")
	id, err := res.LastInsertId()
	must(err, label+": LastInsertId")
	check(id == 1, "%s: LastInsertId = %d, want 1", label, id)
	n, err := res.RowsAffected()
	must(err, label+": RowsAffected")
	check(n == 1, "%s: RowsAffected = %d, want 1", label, n)
	// A second row of NULLs everywhere (but the key).
	res, err = db.Exec(ins, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, "x")
	must(err, label+": insert NULLs")
	id, _ = res.LastInsertId()
	check(id == 2, "%s: second LastInsertId = %d", label, id)

	var got row
	err = db.QueryRow("SELECT id, ti, si, i, bi, ubi, f, d, dec1, c, vc, tx, vb, bl, dt, dtm, n FROM "+table+" WHERE id = ?", 1).
		Scan(&got.id, &got.ti, &got.si, &got.i, &got.bi, &got.ubi, &got.f, &got.d, &got.dec, &got.c,
			&got.vc, &got.tx, &got.bin, &got.blob, &got.date, &got.dt, &got.nullable)
	must(err, label+": select row 1")
	check(got.id == 1 && got.ti == want.ti && got.si == want.si && got.i == want.i && got.bi == want.bi,
		"%s: integers %+v", label, got)
	check(got.ubi == want.ubi, "%s: BIGINT UNSIGNED %d", label, got.ubi)
	check(got.f == want.f && got.d == want.d, "%s: floats %v %v", label, got.f, got.d)
	check(got.dec == want.dec, "%s: DECIMAL %q", label, got.dec)
	check(got.c == want.c && got.vc == want.vc && got.tx == want.tx, "%s: strings %q %q %q", label, got.c, got.vc, got.tx)
	check(bytes.Equal(got.bin, want.bin) && bytes.Equal(got.blob, want.blob), "%s: binary %x", label, got.bin)
	check(got.date.Equal(want.date), "%s: DATE %v", label, got.date)
	check(got.dt.Equal(want.dt), "%s: DATETIME(6) %v", label, got.dt)
	check(!got.nullable.Valid, "%s: NULL scanned as %v", label, got.nullable)

	// Every column of the NULL row comes back NULL.
	var ti, si, i, bi, ubi, f, d, dec, c, vc, tx, vb, bl, dt, dtm sql.NullString
	var nn string
	err = db.QueryRow("SELECT ti, si, i, bi, ubi, f, d, dec1, c, vc, tx, vb, bl, dt, dtm, n FROM "+table+" WHERE id = 2").
		Scan(&ti, &si, &i, &bi, &ubi, &f, &d, &dec, &c, &vc, &tx, &vb, &bl, &dt, &dtm, &nn)
	must(err, label+": select NULL row")
	for k, v := range []sql.NullString{ti, si, i, bi, ubi, f, d, dec, c, vc, tx, vb, bl, dt, dtm} {
		check(!v.Valid, "%s: column %d of the NULL row is %q", label, k, v.String)
	}
	check(nn == "x", "%s: n = %q", label, nn)

	// UPDATE: RowsAffected counts changed rows, as MySQL does by default.
	res, err = db.Exec("UPDATE "+table+" SET i = ? WHERE id IN (?, ?)", 7, 1, 2)
	must(err, label+": update")
	n, _ = res.RowsAffected()
	check(n == 2, "%s: UPDATE RowsAffected = %d", label, n)
	res, err = db.Exec("UPDATE "+table+" SET i = ? WHERE id = ?", 7, 1)
	must(err, label+": update unchanged")
	n, _ = res.RowsAffected()
	check(n == 0, "%s: unchanged UPDATE RowsAffected = %d", label, n)

	// Several rows through Query/Next.
	rows, err := db.Query("SELECT id, n FROM "+table+" WHERE id >= ? ORDER BY id", 1)
	must(err, label+": query")
	var ids []int64
	for rows.Next() {
		var rid int64
		var rn sql.NullString
		must(rows.Scan(&rid, &rn), label+": scan")
		ids = append(ids, rid)
	}
	must(rows.Err(), label+": rows")
	rows.Close()
	check(len(ids) == 2 && ids[0] == 1 && ids[1] == 2, "%s: ids %v", label, ids)
}

func transactions(db *sql.DB, label string) {
	_, err := db.Exec("CREATE TABLE IF NOT EXISTS acct (id INT PRIMARY KEY, bal INT NOT NULL)")
	must(err, "create acct")
	_, err = db.Exec("DELETE FROM acct")
	must(err, "clear acct")
	tx, err := db.Begin()
	must(err, label+": begin")
	_, err = tx.Exec("INSERT INTO acct VALUES (?, ?)", 1, 100)
	must(err, label+": insert in tx")
	must(tx.Commit(), label+": commit")
	tx, err = db.Begin()
	must(err, label+": begin 2")
	_, err = tx.Exec("UPDATE acct SET bal = bal - ? WHERE id = ?", 30, 1)
	must(err, label+": update in tx")
	var inside int
	must(tx.QueryRow("SELECT bal FROM acct WHERE id = ?", 1).Scan(&inside), label+": read own write")
	check(inside == 70, "%s: balance inside the transaction %d", label, inside)
	must(tx.Rollback(), label+": rollback")
	var after int
	must(db.QueryRow("SELECT bal FROM acct WHERE id = 1").Scan(&after), label+": read after rollback")
	check(after == 100, "%s: balance after rollback %d", label, after)
}

func errorsWithCodes(db *sql.DB, label string) {
	cases := []struct {
		sql  string
		args []interface{}
		code uint16
	}{
		{"INSERT INTO acct VALUES (?, ?)", []interface{}{1, 5}, 1062},
		{"SELECT * FROM no_such_table WHERE id = ?", []interface{}{1}, 1146},
		{"SELECT no_such_column FROM acct WHERE id = ?", []interface{}{1}, 1054},
		{"INSERT INTO acct VALUES (?, ?)", []interface{}{2, nil}, 1048},
		{"SELEC 1", nil, 1064},
	}
	for _, c := range cases {
		_, err := db.Exec(c.sql, c.args...)
		check(err != nil, "%s: %s succeeded", label, c.sql)
		check(mysqlErr(err) == c.code, "%s: %s: got %v, want error %d", label, c.sql, err, c.code)
	}
	// The connection is still usable after errors.
	must(db.Ping(), label+": ping after errors")
}

func main() {
	if len(os.Args) != 2 {
		fail("usage: %s HOST:PORT", os.Args[0])
	}
	addr := os.Args[1]
	boot := open(addr, "", false)
	must(boot.Ping(), "ping")
	_, err := boot.Exec("CREATE DATABASE IF NOT EXISTS gotest")
	must(err, "create database")
	var version string
	must(boot.QueryRow("SELECT VERSION()").Scan(&version), "version")
	check(version != "", "empty version")
	_, err = boot.Exec("USE no_such_db")
	check(mysqlErr(err) == 1049, "USE of an unknown database: %v", err)
	boot.Close()
	// Unknown database in the DSN: refused at connect.
	bad := open(addr, "no_such_db", false)
	err = bad.Ping()
	check(mysqlErr(err) == 1049, "connect to an unknown database: %v", err)
	bad.Close()

	for _, mode := range []struct {
		label       string
		interpolate bool
	}{{"prepared", false}, {"text", true}} {
		db := open(addr, "gotest", mode.interpolate)
		db.SetMaxOpenConns(2)
		must(db.Ping(), mode.label+": ping")
		roundTrip(db, mode.label)
		transactions(db, mode.label)
		errorsWithCodes(db, mode.label)
		// An explicitly prepared statement, reused.
		st, err := db.Prepare("SELECT bal + ? FROM acct WHERE id = ?")
		must(err, mode.label+": prepare")
		for k := 0; k < 3; k++ {
			var v int
			must(st.QueryRow(k, 1).Scan(&v), mode.label+": prepared query")
			check(v == 100+k, "%s: prepared result %d", mode.label, v)
		}
		st.Close()
		db.Close()
	}
	fmt.Printf("go-sql-driver/mysql: %d checks passed\n", checks)
}
