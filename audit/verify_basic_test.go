package audit_test

import "testing"

func TestUntouchedLogPasses(t *testing.T) {
	l := buildLog(t, 1, 2, 3, false)
	rep := l.verify(t)
	if !rep.OK() {
		t.Fatalf("problems: %v", rep.Problems)
	}
	if rep.Runs != 6 || len(rep.Unprotected) != 0 || len(rep.Cuts) != 0 || rep.Checkpoints < 6 {
		t.Fatalf("report %+v", rep)
	}
	t.Logf("%d records, %d checkpoints, %d files", rep.Records, rep.Checkpoints, len(l.files))
	t.Logf("%s", l.files[0].lines[0])
}
