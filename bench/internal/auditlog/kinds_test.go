package auditlog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/audit"
)

// TestKinds: records counted by kind in order, a line that is not a
// record counted apart, a missing file said. It failed when a line that
// ParseLine refuses was counted under an empty kind (seen on purpose).
func TestKinds(t *testing.T) {
	line := func(seq uint64, kind audit.Kind) string {
		return string(audit.MarshalLine(&audit.Record{Instance: "i", Run: "r", Seq: seq,
			Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Kind: kind}))
	}
	file := filepath.Join(t.TempDir(), "audit.log")
	lines := []string{line(1, audit.KindRunStart), line(2, "query"), line(3, "query"), `{"kind":"query","extra":1}`}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, want := Kinds(file), "4 records ((not a record) 1, query 2, run_start 1)"; got != want {
		t.Errorf("Kinds = %q, want %q", got, want)
	}
	if got := Kinds(file + ".missing"); !strings.Contains(got, "no such file") {
		t.Errorf("Kinds of a missing file = %q", got)
	}
}
