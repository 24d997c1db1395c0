package auditlog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/audit"
)

// TestKinds: records counted by kind in order (each of a batch line's), a
// line that is not a record counted apart, a missing file said. It failed
// when a line that ParseLine refuses was counted under an empty kind
// (seen on purpose), and when a batch line counted as one record.
func TestKinds(t *testing.T) {
	rec := func(seq uint64, kind audit.Kind) *audit.Record {
		return &audit.Record{Instance: "i", Run: "r", Seq: seq, Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Kind: kind}
	}
	line := func(seq uint64, kind audit.Kind) string { return string(audit.MarshalLine(rec(seq, kind))) }
	file := filepath.Join(t.TempDir(), "audit.log")
	lines := []string{line(1, audit.KindRunStart), line(2, "query"), string(audit.MarshalBatchLine([]*audit.Record{rec(3, "query"), rec(4, "lapse")})),
		`{"kind":"query","extra":1}`}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, want := Kinds(file), "5 records in 4 lines ((not a record) 1, lapse 1, query 2, run_start 1)"; got != want {
		t.Errorf("Kinds = %q, want %q", got, want)
	}
	if got := Kinds(file + ".missing"); !strings.Contains(got, "no such file") {
		t.Errorf("Kinds of a missing file = %q", got)
	}
}
