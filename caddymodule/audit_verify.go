package caddymodule

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/identity/keys"
	"github.com/gatehouse/gatehouse/identity/store"
)

// AuditLogFiles returns the files the audit logger writes to under the
// logging section of a Caddy JSON configuration: for each file log that
// takes the logger, its rolled files oldest first (gzip ones included),
// then the file itself. Logs to other outputs are not files to read; a
// configuration with no file log for the logger is an error.
func AuditLogFiles(cfgJSON []byte) ([]string, error) {
	var cfg struct {
		Logging struct {
			Logs map[string]struct {
				Writer struct {
					Output   string `json:"output"`
					Filename string `json:"filename"`
				} `json:"writer"`
				Include []string `json:"include"`
				Exclude []string `json:"exclude"`
			} `json:"logs"`
		} `json:"logging"`
	}
	if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
		return nil, fmt.Errorf("reading the logging section: %w", err)
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(cfg.Logging.Logs)) {
		l := cfg.Logging.Logs[name]
		if l.Writer.Output != "file" || !takesModule(l.Include, l.Exclude, AuditLoggerName) {
			continue
		}
		rolled, err := rolledFiles(l.Writer.Filename)
		if err != nil {
			return nil, err
		}
		out = append(out, rolled...)
		out = append(out, l.Writer.Filename)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no log of the configuration writes the logger %s to a file", AuditLoggerName)
	}
	return out, nil
}

// rolledFiles are the files Caddy's file writer rolled name into
// (name-<time>.ext, possibly .gz), oldest first: their names sort by time.
func rolledFiles(name string) ([]string, error) {
	ext := filepath.Ext(name)
	prefix := strings.TrimSuffix(name, ext) + "-"
	matches, err := filepath.Glob(globEscape(prefix) + "*")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range matches {
		rest := strings.TrimPrefix(m, prefix)
		if strings.HasSuffix(rest, ext) || strings.HasSuffix(rest, ext+".gz") {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out, nil
}

func globEscape(s string) string {
	r := strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`)
	return r.Replace(s)
}

// AuditCheck is what VerifyAudit found beyond the report: the store's
// instances the files hold no record of (not checked), and how many
// checkpoints of the store were compared.
type AuditCheck struct {
	*audit.Report
	Unchecked []string
	Compared  int
}

// VerifyAudit reads the files in order (gzip ones decompressed) and
// verifies them with the store's audit keys and checkpoints: those of the
// instances the files hold records of, so that the logs of one instance
// verify apart from the others'. A store with checkpoints and files with
// no record at all is a problem (every run missing).
func VerifyAudit(ctx context.Context, st store.Audit, paths []string) (*AuditCheck, error) {
	pubs, err := keys.AuditPublicKeys(ctx, st)
	if err != nil {
		return nil, err
	}
	stored, err := st.AuditCheckpoints(ctx)
	if err != nil {
		return nil, err
	}
	files := make([]audit.File, 0, len(paths))
	instances := map[string]bool{} // the instances the files hold records of
	for _, p := range paths {
		b, err := readAuditFile(p)
		if err != nil {
			return nil, err
		}
		files = append(files, audit.File{Name: p, R: bytes.NewReader(b)})
		for line := range bytes.Lines(b) {
			if rs, err := audit.ParseRecords(bytes.TrimSpace(line)); err == nil {
				instances[rs[0].Instance] = true
			}
		}
	}
	check := &AuditCheck{}
	var expected []audit.Checkpoint
	unchecked := map[string]bool{}
	for _, c := range stored {
		if !instances[c.Instance] && len(instances) > 0 {
			unchecked[c.Instance] = true
			continue
		}
		var h [32]byte
		copy(h[:], c.Hash)
		expected = append(expected, audit.Checkpoint{Instance: c.Instance, Run: c.Run, Seq: c.Seq, Hash: h,
			Time: c.Time, KeyID: c.KeyID, Final: c.Final, JWS: c.JWS})
	}
	check.Unchecked = slices.Sorted(maps.Keys(unchecked))
	check.Compared = len(expected)
	check.Report, err = audit.Verify(files, audit.VerifyOptions{Keys: pubs, Expected: expected})
	if err != nil {
		return nil, err
	}
	return check, nil
}

// readAuditFile reads a log file, decompressing a .gz one.
func readAuditFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("opening audit file: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(p, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("reading audit file %s: %w", p, err)
		}
		defer zr.Close()
		r = zr
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading audit file %s: %w", p, err)
	}
	return b, nil
}

// AuditRecords reads the records of the files in order (gzip ones
// decompressed), for the usage report: verify them first (VerifyAudit).
func AuditRecords(paths []string) ([]*audit.Record, error) {
	files := make([]audit.File, 0, len(paths))
	for _, p := range paths {
		b, err := readAuditFile(p)
		if err != nil {
			return nil, err
		}
		files = append(files, audit.File{Name: p, R: bytes.NewReader(b)})
	}
	return audit.ReadRecords(files)
}
