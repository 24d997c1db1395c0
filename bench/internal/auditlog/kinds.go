package auditlog

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/gatehouse/gatehouse/audit"
)

// Kinds counts the records of the audit log file by kind (each of a batch
// line's), as "N records in L lines (kind n, ...)", kinds in order; lines
// that are not records count as "(not a record)", one each. N/L is how
// many records the writer's group commit put in one write on average. An error reading the file is the answer, so
// that the benchmark's report still prints.
func Kinds(file string) string {
	f, err := os.Open(file)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	kinds := map[string]int{}
	total, lines := 0, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines++
		rs, err := audit.ParseRecords(sc.Bytes())
		if err != nil {
			kinds["(not a record)"]++
			total++
		}
		for _, r := range rs {
			kinds[string(r.Kind)]++
			total++
		}
	}
	if err := sc.Err(); err != nil {
		return err.Error()
	}
	parts := make([]string, 0, len(kinds))
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, kinds[k]))
	}
	return fmt.Sprintf("%d records in %d lines (%s)", total, lines, strings.Join(parts, ", "))
}
