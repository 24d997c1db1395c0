package contain

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func observed() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zap.DebugLevel)
	return zap.New(core), logs
}

// counted sets the counter to one that records components, for the test.
func counted(t *testing.T) func() []string {
	var mu sync.Mutex
	var got []string
	SetCounter(func(c string) { mu.Lock(); got = append(got, c); mu.Unlock() })
	t.Cleanup(func() { SetCounter(nil) })
	return func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), got...) }
}

// TestGoContainsAPanic: a panic in a goroutine started by Go ends that
// goroutine only: it is logged at Error with its stack, counted by
// component, and the cleanup runs; a panic in the cleanup is contained too.
// It failed when: Go did not defer Recover (the test binary died).
func TestGoContainsAPanic(t *testing.T) {
	log, logs := observed()
	got := counted(t)
	cleaned := make(chan struct{})
	Go(log, "ws.test", func() { panic("boom") }, func() { close(cleaned) })
	select {
	case <-cleaned:
	case <-time.After(5 * time.Second):
		t.Fatal("the cleanup did not run")
	}
	e := logs.FilterMessage("panic recovered").All()
	if len(e) != 1 || e[0].Level != zapcore.ErrorLevel {
		t.Fatalf("logged %v", e)
	}
	m := e[0].ContextMap()
	if m["component"] != "ws.test" || m["panic"] != "boom" || !bytes.Contains([]byte(m["stack"].(string)), []byte("contain_test.go")) {
		t.Errorf("log fields %v", m)
	}
	if c := got(); len(c) != 1 || c[0] != "ws.test" {
		t.Errorf("counted %v", c)
	}

	done := make(chan struct{})
	Go(log, "ws.test", func() { panic("first") }, func() { defer close(done); panic("second") })
	<-done
	// The cleanup's recovery runs after its deferred close.
	for deadline := time.Now().Add(5 * time.Second); len(got()) < 3 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if c := got(); len(c) != 3 || c[2] != "ws.test.cleanup" {
		t.Errorf("counted %v, want the cleanup's panic too", c)
	}
}

// TestRecoverWithoutPanic: Recover does nothing when nothing panicked.
func TestRecoverWithoutPanic(t *testing.T) {
	log, logs := observed()
	ran := false
	func() {
		defer Recover(log, "x", func() { ran = true })
	}()
	if ran || logs.Len() != 0 {
		t.Errorf("cleanup ran %v, logs %d", ran, logs.Len())
	}
}

// TestLoopRestarts: a loop that panics runs again after a pause that
// doubles, each panic reported; it ends when its function returns, or when
// the context ends during a pause.
// It failed when: Loop did not recover (the binary died), or did not wait.
func TestLoopRestarts(t *testing.T) {
	firstPause, maxPause = 20*time.Millisecond, 80*time.Millisecond
	t.Cleanup(func() { firstPause, maxPause = time.Second, time.Minute })
	log, logs := observed()
	var runs atomic.Int32
	var at []time.Time
	Loop(context.Background(), log, "identity.purge", func(context.Context) {
		at = append(at, time.Now())
		if runs.Add(1) < 5 {
			panic("purge failed")
		}
	})
	if runs.Load() != 5 || logs.FilterMessage("panic recovered").Len() != 4 {
		t.Fatalf("runs %d, panics logged %d", runs.Load(), logs.FilterMessage("panic recovered").Len())
	}
	for i, want := range []time.Duration{20, 40, 80, 80} {
		if gap := at[i+1].Sub(at[i]); gap < want*time.Millisecond {
			t.Errorf("restart %d after %v, want at least %v", i+1, gap, want*time.Millisecond)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // the test's own goroutine
		defer close(done)
		Loop(ctx, log, "x", func(context.Context) { panic("always") })
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Loop did not end with its context")
	}
}

// TestAfterFuncs: the timers' functions are contained.
func TestAfterFuncs(t *testing.T) {
	log, logs := observed()
	got := counted(t)
	AfterFunc(log, "a", time.Millisecond, func() { panic("a") })
	ctx, cancel := context.WithCancel(context.Background())
	ContextAfterFunc(ctx, log, "b", func() { panic("b") })
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for len(got()) < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if len(got()) != 2 || logs.Len() != 2 {
		t.Errorf("counted %v", got())
	}
}

// TestDefaultBuildHasNoFaultHook: a binary built without the
// gatehouse_faults tag holds no fault hook (its marker is absent), and one
// built with it does (so the check can fail).
func TestDefaultBuildHasNoFaultHook(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	dir := t.TempDir()
	for _, tt := range []struct {
		tags string
		want bool
	}{{"", false}, {"gatehouse_faults", true}} {
		bin := filepath.Join(dir, "probe"+tt.tags)
		args := []string{"build", "-o", bin}
		if tt.tags != "" {
			args = append(args, "-tags", tt.tags)
		}
		cmd := exec.Command("go", append(args, "./testdata/probe")...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", args, err, out)
		}
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Contains(b, []byte("gatehouse-fault-injection-armed")); got != tt.want {
			t.Errorf("tags %q: the marker is in the binary: %v, want %v", tt.tags, got, tt.want)
		}
	}
	if Faults {
		t.Log("this test binary was built with gatehouse_faults")
	}
}

// TestServe: a panic in a handler is answered by fail, told whether the
// response had begun, and reported; the process goes on.
func TestServe(t *testing.T) {
	log, logs := observed()
	for _, tt := range []struct {
		name    string
		h       http.HandlerFunc
		started bool
	}{
		{"before", func(http.ResponseWriter, *http.Request) { panic("before") }, false},
		{"after", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("[1,")); panic("after") }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			var got *bool
			Serve(log, "query.http", rec, httptest.NewRequest("POST", "/", nil), tt.h, func(w http.ResponseWriter, started bool) {
				got = &started
				if !started {
					w.WriteHeader(http.StatusInternalServerError)
				}
			})
			if got == nil || *got != tt.started {
				t.Fatalf("fail told started=%v, want %v", got, tt.started)
			}
			if !tt.started && rec.Code != http.StatusInternalServerError {
				t.Errorf("status %d", rec.Code)
			}
		})
	}
	if logs.FilterMessage("panic recovered").Len() != 2 {
		t.Errorf("%d panics logged", logs.FilterMessage("panic recovered").Len())
	}
}
