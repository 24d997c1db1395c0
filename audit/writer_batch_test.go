package audit_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/gatehouse/gatehouse/audit"
)

// slowFile is a log file whose writes take a while, so that appends queue
// behind them, and that notes its writes and syncs.
type slowFile struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	delay  time.Duration
	events *[]string
}

func (f *slowFile) Write(p []byte) (int, error) {
	time.Sleep(f.delay)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.events != nil {
		*f.events = append(*f.events, "write")
	}
	return f.buf.Write(p)
}

func (f *slowFile) Sync() error {
	if f.events != nil {
		*f.events = append(*f.events, "sync")
	}
	return nil
}

func zapCore(ws zapcore.WriteSyncer) zapcore.Core {
	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{TimeKey: "ts", LevelKey: "level", NameKey: "logger",
		MessageKey: "msg", EncodeTime: zapcore.EpochTimeEncoder, EncodeLevel: zapcore.LowercaseLevelEncoder})
	return zapcore.NewCore(enc, ws, zapcore.InfoLevel)
}

// TestWriterGroupCommit: appends from many goroutines while a write is
// under way share the next write, a batch line (zap's, msg "audit
// records"; LineSink's), and the chain verifies with every record in it;
// a record that comes alone is a record line. It failed when: the flush
// took one record at a time (no batch line); the records of a batch were
// chained to the chain's last record, not to their predecessor in the
// batch (verify named a record chained to another hash). Both on purpose.
func TestWriterGroupCommit(t *testing.T) {
	for _, zap := range []bool{true, false} {
		t.Run(fmt.Sprintf("zap=%v", zap), func(t *testing.T) {
			s := testKey(t, "k1", "k1")
			f := &slowFile{delay: 200 * time.Microsecond}
			var sink audit.Sink = audit.LineSink{W: f}
			if zap {
				sink = audit.ZapSink{Core: zapCore(f), LoggerName: "gatehouse.audit.chain"}
			}
			w, err := audit.NewWriter(audit.Options{Instance: "gw", Signer: s, Sink: sink, CheckpointInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for range 50 {
						if err := w.Append(audit.KindQuery, audit.Int(audit.AttrRows, int64(g))); err != nil {
							t.Error(err)
						}
					}
				})
			}
			wg.Wait()
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			var batches, largest int
			for line := range bytes.Lines(f.buf.Bytes()) {
				rs, err := audit.ParseRecords(bytes.TrimSuffix(line, []byte("\n")))
				if err != nil {
					t.Fatal(err)
				}
				if len(rs) > 1 {
					batches++
					largest = max(largest, len(rs))
					if zap && !bytes.Contains(line, []byte(`"msg":"audit records","records":[{`)) {
						t.Fatalf("a batch line without its message: %s", line)
					}
				} else if zap && !bytes.Contains(line, []byte(`"msg":"audit record","instance":`)) {
					t.Fatalf("a record line not as before: %s", line)
				}
			}
			rep := logOf(t, s, f.buf.Bytes())
			if !rep.OK() || rep.Records != 1+400+1 || len(rep.Unprotected) != 0 || batches == 0 {
				t.Fatalf("report %+v, %d batch lines", rep, batches)
			}
			t.Logf("%d batch lines, the largest of %d records", batches, largest)
		})
	}
}

// gateSink holds its writes at the gate when one is set, notes each
// write's records, and fails the writes it is told to.
type gateSink struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	gate    chan struct{}
	entered chan struct{}
	fail    int // writes to fail after the gate opens
	writes  [][]audit.Kind
}

func (g *gateSink) write(rs []*audit.Record, line []byte) error {
	g.mu.Lock()
	gate, entered := g.gate, g.entered
	g.gate = nil
	g.mu.Unlock()
	if gate != nil {
		close(entered)
		<-gate
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var kinds []audit.Kind
	for _, r := range rs {
		kinds = append(kinds, r.Kind)
	}
	g.writes = append(g.writes, kinds)
	if gate == nil && g.fail > 0 {
		g.fail--
		return errors.New("disk full")
	}
	g.buf.Write(append(line, '\n'))
	return nil
}

func (g *gateSink) WriteRecord(r *audit.Record) error {
	return g.write([]*audit.Record{r}, audit.MarshalLine(r))
}

func (g *gateSink) WriteRecords(rs []*audit.Record) error {
	return g.write(rs, audit.MarshalBatchLine(rs))
}

// TestWriterBatchFailure: a batch the sink fails is not in the chain:
// each of its callers gets ErrWrite, the failure is counted once (one
// write), and the next write carries a loss record of the batch's size
// before its own record; the chain verifies. It failed when a failed
// batch's records were counted as one lost record (the loss said 1; seen
// on purpose).
func TestWriterBatchFailure(t *testing.T) {
	s := testKey(t, "k1", "k1")
	sink := &gateSink{}
	var stamped atomic.Int64 // clock readings, one per record queued
	w, err := audit.NewWriter(audit.Options{Instance: "gw", Signer: s, Sink: sink, CheckpointInterval: time.Hour,
		Now: func() time.Time { stamped.Add(1); return time.Now() }})
	if err != nil {
		t.Fatal(err)
	}
	gate, entered := make(chan struct{}), make(chan struct{})
	sink.mu.Lock()
	sink.gate, sink.entered, sink.fail = gate, entered, 1
	sink.mu.Unlock()
	first := make(chan error)
	go func() { first <- w.Append(audit.KindQuery) }()
	<-entered // the first record's write is under way
	const n = 5
	before := stamped.Load()
	errs := make(chan error, n)
	for range n {
		go func() { errs <- w.Append(audit.KindLapse) }()
	}
	for stamped.Load() < before+n {
		time.Sleep(time.Millisecond) // until all n are queued
	}
	close(gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-errs; !errors.Is(err, audit.ErrWrite) {
			t.Fatalf("a record of the failed batch: %v", err)
		}
	}
	if w.Failures() != 1 {
		t.Fatalf("%d failures, want 1 (one write)", w.Failures())
	}
	if err := w.Append(audit.KindQuery); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	want := [][]audit.Kind{{audit.KindRunStart}, {audit.KindQuery}, slices.Repeat([]audit.Kind{audit.KindLapse}, n),
		{audit.KindLoss, audit.KindQuery}, {audit.KindCheckpoint}}
	if fmt.Sprint(sink.writes) != fmt.Sprint(want) {
		t.Fatalf("writes %v, want %v", sink.writes, want)
	}
	rep := logOf(t, s, sink.buf.Bytes())
	if !rep.OK() || rep.Records != 5 {
		t.Fatalf("report %+v", rep)
	}
	lines := bytes.Split(sink.buf.Bytes(), []byte("\n"))
	rs, err := audit.ParseRecords(lines[2])
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := rs[0].Attr(audit.AttrLost); len(rs) != 2 || !v.Equal(audit.Int("", n).Value) {
		t.Fatalf("third line %s, want a loss of %d and a query", lines[2], n)
	}
}

// TestWriterSyncsBeforeTheStore: each checkpoint is written, then the
// sink synced (ZapSink syncs its core), then handed to OnCheckpoint: on
// Checkpoint, at the interval and at Close. It failed when the writer did
// not sync (seen on purpose).
func TestWriterSyncsBeforeTheStore(t *testing.T) {
	s := testKey(t, "k1", "k1")
	var events []string
	f := &slowFile{events: &events}
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	w, err := audit.NewWriter(audit.Options{Instance: "gw", Signer: s, CheckpointInterval: 5 * time.Second,
		Sink: audit.ZapSink{Core: zapCore(f)}, Now: func() time.Time { return now },
		OnCheckpoint: func(audit.Checkpoint) { events = append(events, "store") }})
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Append(audit.KindQuery)
	if err := w.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	now = now.Add(5 * time.Second)
	_ = w.Append(audit.KindQuery) // and a checkpoint at the interval
	_ = w.Close()
	want := []string{"write", "write", "write", "sync", "store", "write", "write", "sync", "store", "write", "sync", "store"}
	if !slices.Equal(events, want) {
		t.Fatalf("events %v, want %v", events, want)
	}
}
