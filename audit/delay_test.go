package audit_test

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/audit"
)

// lockedBuf is a log file the test reads while the writer writes it.
type lockedBuf struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (b *lockedBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	return b.buf.Write(p)
}

func (b *lockedBuf) snapshot() ([]byte, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes()), b.writes
}

// TestWriterFlushDelay: with a FlushDelay, Append returns before its
// record is written; the records of the delay share one write, and the
// chain verifies with every record in it. It failed when the delayed
// flush wrote one batch (256 records) and disarmed: the rest stayed
// queued until the next Append or Close.
func TestWriterFlushDelay(t *testing.T) {
	s := testKey(t, "k1", "k1")
	f := &lockedBuf{}
	w, err := audit.NewWriter(audit.Options{Instance: "gw", Signer: s, Sink: audit.LineSink{W: f},
		CheckpointInterval: time.Hour, FlushDelay: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, before := f.snapshot() // the run_start, written at once
	start := time.Now()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for range 150 {
				if err := w.Append(audit.KindQuery, audit.Int(audit.AttrRows, int64(g))); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if _, writes := f.snapshot(); writes != before && time.Since(start) < 300*time.Millisecond {
		t.Fatalf("%d writes before the delay was over, want none", writes-before)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, writes := f.snapshot()
		if bytes.Count(b, []byte(`"kind":"query"`)) == 600 {
			if writes-before > 4 {
				t.Errorf("600 records of one delay took %d writes, want them batched (256 a line)", writes-before)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the delayed flush wrote %d of 600 records in 10 s", bytes.Count(b, []byte(`"kind":"query"`)))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := f.snapshot()
	if rep := logOf(t, s, b); !rep.OK() || rep.Records != 1+600+1 {
		t.Fatalf("report %+v", rep)
	}
}

// TestWriterFlushDelayBounded: an Append that finds the queue full writes
// it itself and returns after its own write (bounded memory); Close and
// Flush write what is queued; a sink that panics in a delayed flush is a
// failed write, counted, and the process goes on. It failed when a full
// queue kept growing (the records stayed unwritten until the delay).
func TestWriterFlushDelayBounded(t *testing.T) {
	defer audit.SetMaxDelayed(5)()
	s := testKey(t, "k1", "k1")
	f := &lockedBuf{}
	w, err := audit.NewWriter(audit.Options{Instance: "gw", Signer: s, Sink: audit.LineSink{W: f},
		CheckpointInterval: time.Hour, FlushDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if err := w.Append(audit.KindQuery, audit.Int(audit.AttrRows, int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := f.snapshot(); bytes.Count(b, []byte(`"kind":"query"`)) != 6 {
		t.Fatalf("the sixth Append over a bound of 5 left %d of 6 written", bytes.Count(b, []byte(`"kind":"query"`)))
	}
	if err := w.Append(audit.KindQuery, audit.Int(audit.AttrRows, 7)); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if b, _ := f.snapshot(); bytes.Count(b, []byte(`"kind":"query"`)) != 7 {
		t.Fatal("Flush left a record queued")
	}
	if err := w.Append(audit.KindQuery, audit.Int(audit.AttrRows, 8)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := f.snapshot()
	if rep := logOf(t, s, b); !rep.OK() || rep.Records != 1+8+1 {
		t.Fatalf("report %+v", rep)
	}

	// A sink that panics.
	var failures atomic.Int32
	panicky := sinkFunc(func(r *audit.Record) error {
		if r.Kind == audit.KindQuery {
			panic("a sink bug")
		}
		return nil
	})
	w, err = audit.NewWriter(audit.Options{Instance: "gw", Signer: s, Sink: panicky, FlushDelay: time.Millisecond,
		OnWriteFailure: func(error, uint64) { failures.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(audit.KindQuery); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for failures.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the panic was not counted as a failed write")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := w.Flush(); !errors.Is(err, audit.ErrWrite) {
		t.Fatalf("Flush after a failed write: %v, want ErrWrite", err)
	}
}
