package enginetest

import (
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
)

// testBind: Go values bound as arguments find the rows that hold them: a time (in any
// zone) a DateTime, a Decimal a decimal column (equal, and compared by value), a bool a
// boolean, an int64 an integer.
func testBind(t *testing.T, open Open) {
	e := open(t, Options{})
	p := Arg(e.Dialect(), 1)
	for _, tt := range []struct {
		name, sql string
		arg       any
		want      string
	}{
		{"time", `SELECT "Code" FROM "Security" WHERE "Updated" = ` + p, time.Date(2026, 11, 21, 20, 30, 5, 0, time.FixedZone("AEST", 10*3600)), "CBA"},
		{"decimal", `SELECT "Code" FROM "Security" WHERE "LastPrice" = ` + p, engine.Decimal("152.3000"), "CBA"},
		{"decimal compared", `SELECT "Code" FROM "Security" WHERE "LastPrice" > ` + p, engine.Decimal("250"), "CSL"},
		{"bool", `SELECT "Name" FROM "Item" WHERE "Active" = ` + p, true, "one"},
		{"integer", `SELECT "Code" FROM "Security" WHERE "Volume" = ` + p, int64(8734512), "BHP"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if rows := sqlRows(t, e, tt.sql, tt.arg); len(rows) != 1 || rows[0][0] != tt.want {
				t.Fatalf("rows %v, want [[%s]]", rows, tt.want)
			}
		})
	}
}
