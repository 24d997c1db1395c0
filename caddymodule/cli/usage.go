package cli

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/caddymodule"
)

// usageColumns is the CSV header: the JSON names of audit.UsageRow.
var usageColumns = []string{"subject", "username", "venue", "feed", "days_entitled", "days_used", "peak_concurrent",
	"subscription_minutes", "queries", "rows_read"}

// runAuditUsage verifies the files first and refuses to report on files
// that do not verify: a usage declaration is only as good as its log.
// Unprotected records and cut lines are used, with a warning.
func runAuditUsage(cmd *cobra.Command, files []string) error {
	from, to, format, err := usageFlags(cmd)
	if err != nil {
		return err
	}
	if files, err = auditFiles(cmd, files); err != nil {
		return err
	}
	check, err := verifyAuditFiles(cmd, files)
	if err != nil {
		return err
	}
	errOut := cmd.ErrOrStderr()
	if !check.OK() {
		printAuditCheck(errOut, files, check)
		return fmt.Errorf("no usage report: %w", errAuditProblems)
	}
	for _, s := range check.Unprotected {
		fmt.Fprintf(errOut, "warning: %s: instance %q run %q seq %d to %d are after the run's last checkpoint: used, but nothing signed vouches for them\n",
			s.Position, s.Instance, s.Run, s.From, s.To)
	}
	for _, p := range check.Cuts {
		fmt.Fprintf(errOut, "warning: %s: a line a crash cut short is left out\n", p)
	}
	recs, err := caddymodule.AuditRecords(files)
	if err != nil {
		return err
	}
	rep, err := audit.Usage(recs, from, to)
	if err != nil {
		return err
	}
	if rep.UnmatchedEnds > 0 {
		fmt.Fprintf(errOut, "warning: %d subscription ends without a start in their run are left out\n", rep.UnmatchedEnds)
	}
	if format == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(usageJSON{From: rep.From.Format(time.DateOnly), To: rep.To.Format(time.DateOnly), UsageReport: rep})
	}
	return writeUsageCSV(cmd.OutOrStdout(), rep)
}

// usageJSON is the report with its days as dates.
type usageJSON struct {
	From string `json:"from"`
	To   string `json:"to"`
	*audit.UsageReport
}

func usageFlags(cmd *cobra.Command) (from, to time.Time, format string, err error) {
	day := func(name string) (time.Time, error) {
		s, _ := cmd.Flags().GetString(name)
		if s == "" {
			return time.Time{}, fmt.Errorf("--%s is required (a UTC day, YYYY-MM-DD)", name)
		}
		t, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return time.Time{}, fmt.Errorf("--%s %q: want a day as YYYY-MM-DD", name, s)
		}
		return t, nil
	}
	if from, err = day("from"); err != nil {
		return
	}
	if to, err = day("to"); err != nil {
		return
	}
	if format, _ = cmd.Flags().GetString("format"); format != "csv" && format != "json" {
		err = errors.New("--format is csv or json")
	}
	return
}

// writeUsageCSV writes a header row, then a row per user, venue and feed.
func writeUsageCSV(out io.Writer, rep *audit.UsageReport) error {
	w := csv.NewWriter(out)
	if err := w.Write(usageColumns); err != nil {
		return err
	}
	for _, r := range rep.Rows {
		rec := []string{r.Subject, r.Username, r.Venue, r.Feed, strconv.Itoa(r.DaysEntitled), strconv.Itoa(r.DaysUsed),
			strconv.Itoa(r.PeakConcurrent), strconv.FormatFloat(r.SubscriptionMinutes, 'f', -1, 64),
			strconv.FormatInt(r.Queries, 10), strconv.FormatInt(r.RowsRead, 10)}
		if err := w.Write(rec); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}
