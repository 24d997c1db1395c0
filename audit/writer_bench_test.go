package audit_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/gatehouse/gatehouse/audit"
)

// BenchmarkAppendZapFile is the cost of one query-sized record through a
// zap JSON core into a file, as the Caddy glue writes them: the hash, the
// encoding and the write, from parallel callers. records/line says how
// many records a write took on average (group commit).
func BenchmarkAppendZapFile(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "audit.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{TimeKey: "ts", LevelKey: "level", NameKey: "logger",
		MessageKey: "msg", EncodeTime: zapcore.EpochTimeEncoder, EncodeLevel: zapcore.LowercaseLevelEncoder})
	core := zapcore.NewCore(enc, zapcore.AddSync(f), zapcore.InfoLevel)
	w, err := audit.NewWriter(audit.Options{Instance: "gw-1", Sink: audit.ZapSink{Core: core, LoggerName: "gatehouse.audit.chain"},
		Signer: testKey(b, "audit-1", "bench"), CheckpointInterval: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := w.Append(audit.KindQuery, audit.String(audit.AttrSubject, "5be86359-alice"),
				audit.String(audit.AttrClient, "demo-app"), audit.String("request_id", "4c1f0e9a-0d7b-4c8e-9d1e"),
				audit.String("endpoint", "select"), audit.String("statement", "select"),
				audit.String(audit.AttrTable, "Security"), audit.String(audit.AttrFeed, "quotes"),
				audit.Strings(audit.AttrVenues, "ASX", "NZX"), audit.Int(audit.AttrRows, 1),
				audit.String(audit.AttrOutcome, "ok"), audit.Int("status", 200)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.StopTimer()
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	raw, err := os.ReadFile(f.Name())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/float64(bytes.Count(raw, []byte("\n"))), "records/line")
}
