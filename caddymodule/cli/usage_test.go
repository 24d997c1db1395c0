package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/identity/keys"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
)

// writeUsageLogs writes the audit files of two instances with Writers
// signing with the store's audit key: alice holds ASX:quotes from the
// day's snapshot; instance a carries her subscription from 10:00 to
// 11:00; instance b one from 10:30, and a query of 3 ASX rows at 10:45,
// when b's run ends without its final checkpoint (a crash).
func writeUsageLogs(t *testing.T, dbPath, dir string) []string {
	t.Helper()
	st, err := sqlite.Open(t.Context(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	ak, err := keys.NewAuditKeys(st, keys.AuditPolicy{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ak.Sync(t.Context(), day); err != nil {
		t.Fatal(err)
	}
	now := day
	at := func(hh, mm int) { now = day.Add(time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute) }
	bufs := map[string]*bytes.Buffer{"a": {}, "b": {}}
	ws := map[string]*audit.Writer{}
	for _, inst := range []string{"a", "b"} {
		w, err := audit.NewWriter(audit.Options{Instance: inst, Sink: audit.LineSink{W: bufs[inst]}, Signer: ak,
			CheckpointInterval: audit.Day, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		ws[inst] = w
	}
	sub := func(inst string, kind audit.Kind) {
		if err := ws[inst].Append(kind, audit.String(audit.AttrSubject, "alice"), audit.String(audit.AttrVenue, "ASX"),
			audit.String(audit.AttrFeed, "quotes")); err != nil {
			t.Fatal(err)
		}
	}
	if err := ws["a"].Append(audit.KindEntitlementSnapshot, audit.String(audit.AttrSubject, "alice"),
		audit.String(audit.AttrUsername, "alice.smith"), audit.Strings(audit.AttrEntitlements, "ASX:quotes")); err != nil {
		t.Fatal(err)
	}
	at(10, 0)
	sub("a", audit.KindSubscriptionStart)
	at(10, 30)
	sub("b", audit.KindSubscriptionStart)
	at(10, 45)
	if err := ws["b"].Append(audit.KindQuery, audit.String(audit.AttrSubject, "alice"), audit.String(audit.AttrTable, "Security"),
		audit.String("statement", "select"), audit.String(audit.AttrFeed, "quotes"), audit.Strings(audit.AttrVenues, "ASX"), audit.Int(audit.AttrRows, 3), audit.String(audit.AttrOutcome, "ok")); err != nil {
		t.Fatal(err)
	}
	at(11, 0)
	sub("a", audit.KindSubscriptionEnd)
	if err := ws["a"].Close(); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, inst := range []string{"a", "b"} {
		p := filepath.Join(dir, inst+".log")
		if err := os.WriteFile(p, bufs[inst].Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// runSplit runs `gatehouse audit args...` and returns its output and its
// error output apart.
func runSplit(args ...string) (string, string, error) {
	cmd := &cobra.Command{Use: "audit", SilenceUsage: true, SilenceErrors: true}
	setUpAuditCommand(cmd)
	var out, errOut bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// TestAuditUsage runs `gatehouse audit usage` on files two Writers wrote:
// the CSV and the JSON give alice's figures (75 minutes: b's subscription
// ends at its run's last record), the crashed run's tail is a warning,
// and a range before the snapshot, an unknown format and an edited file
// are refused without a report. It failed when usage skipped the verify
// (the edited file gave a report).
func TestAuditUsage(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "gatehouse.db")
	paths := writeUsageLogs(t, dbPath, dir)
	args := func(extra ...string) []string {
		return append(append([]string{"usage", "--db", dbPath}, extra...), paths...)
	}

	out, errOut, err := runSplit(args("--from", "2026-03-02", "--to", "2026-03-02")...)
	want := "subject,username,venue,feed,days_entitled,days_used,peak_concurrent,subscription_minutes,queries,rows_read\n" +
		"alice,alice.smith,ASX,quotes,1,1,2,75,1,3\n"
	if err != nil || out != want {
		t.Fatalf("usage as CSV: %v\n%s\nwant\n%s\n%s", err, out, want, errOut)
	}
	if !strings.Contains(errOut, `warning: `+paths[1]) || !strings.Contains(errOut, "after the run's last checkpoint") {
		t.Errorf("the crashed run's tail was not warned of:\n%s", errOut)
	}

	out, _, err = runSplit(args("--from", "2026-03-02", "--to", "2026-03-03", "--format", "json")...)
	var rep struct {
		From, To string
		Rows     []audit.UsageRow
	}
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || rep.From != "2026-03-02" || rep.To != "2026-03-03" ||
		len(rep.Rows) != 1 || rep.Rows[0] != (audit.UsageRow{Subject: "alice", Username: "alice.smith", Venue: "ASX", Feed: "quotes", DaysEntitled: 2,
		DaysUsed: 1, PeakConcurrent: 2, SubscriptionMinutes: 75, Queries: 1, RowsRead: 3}) {
		t.Fatalf("usage as JSON: %v\n%s", err, out)
	}

	for _, tt := range []struct {
		name    string
		args    []string
		wantErr func(error) bool
	}{
		{"a range before the snapshot", args("--from", "2026-03-01", "--to", "2026-03-02"),
			func(err error) bool { return errors.Is(err, audit.ErrNoSnapshot) }},
		{"an unknown format", args("--from", "2026-03-02", "--to", "2026-03-02", "--format", "xml"),
			func(err error) bool { return err != nil && strings.Contains(err.Error(), "csv or json") }},
		{"no --to", args("--from", "2026-03-02"),
			func(err error) bool { return err != nil && strings.Contains(err.Error(), "--to is required") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if out, _, err := runSplit(tt.args...); !tt.wantErr(err) || out != "" {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}

	t.Run("an edited file", func(t *testing.T) {
		b, err := os.ReadFile(paths[0])
		if err != nil {
			t.Fatal(err)
		}
		edited := filepath.Join(t.TempDir(), "a.log")
		b = bytes.Replace(b, []byte("T10:00:00.000000000Z"), []byte("T09:00:00.000000000Z"), 1)
		if err := os.WriteFile(edited, b, 0o600); err != nil {
			t.Fatal(err)
		}
		out, errOut, err := runSplit("usage", "--db", dbPath, "--from", "2026-03-02", "--to", "2026-03-02", edited, paths[1])
		if !errors.Is(err, errAuditProblems) || out != "" || !strings.Contains(errOut, fmt.Sprintf("PROBLEM %s:3: edited:", edited)) {
			t.Fatalf("an edited file: %v\n%s\n%s", err, out, errOut)
		}
	})
}
