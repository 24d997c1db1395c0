package sqlite_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
)

// BenchmarkRefresh measures the store's share of one refresh grant, as the
// token endpoint makes it: RefreshFamily and UserBySubject on the readers,
// then RotateRefreshFamily on the writer. Each parallel goroutine refreshes
// a family of its own, so no rotation loses its compare-and-swap.
//
//	go test -run '^$' -bench Refresh -cpu 2 ./identity/store/sqlite/
//
// The database is in a temporary directory: with synchronous FULL, the
// commit's fsync makes ns/op depend on that disk and on what else writes to
// it. cpu-us/op, the process's CPU time per refresh, depends much less on
// the rest of the machine.
func BenchmarkRefresh(b *testing.B) {
	for _, sync := range []string{"full", "normal"} {
		b.Run("synchronous="+sync, func(b *testing.B) {
			benchmarkRefresh(b, sqlite.WithSynchronous(sync))
		})
	}
}

func benchmarkRefresh(b *testing.B, opts ...sqlite.Option) {
	// Cancellable, as a request's context is: the driver and database/sql
	// watch such a context during each statement.
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "gatehouse.db"), opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	const subject = "bench-subject"
	u := store.User{Username: "bench", Subject: subject, PasswordHash: "x", Scopes: []string{"offline_access"}}
	if err := s.CreateUser(ctx, u); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	var chains atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	cpu0 := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		famID := fmt.Sprintf("fam%d", chains.Add(1))
		f := store.RefreshFamily{ID: famID, ClientID: "app", Subject: subject, Scopes: []string{"offline_access"},
			Created: now, ExpiresAt: now.Add(24 * time.Hour), Salt: []byte("salt"),
			Generation: 1, Current: benchHash(famID + "/1"), CurrentExpiresAt: now.Add(time.Hour)}
		if err := s.CreateRefreshFamily(ctx, f, store.FamilyBound{}); err != nil {
			b.Error(err)
			return
		}
		for pb.Next() {
			fam, err := s.RefreshFamily(ctx, famID)
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := s.UserBySubject(ctx, fam.Subject); err != nil {
				b.Error(err)
				return
			}
			next := benchHash(fmt.Sprintf("%s/%d", famID, fam.Generation+1))
			if err := s.RotateRefreshFamily(ctx, famID, fam.Generation, next, now.Add(time.Hour), now); err != nil {
				b.Error(err)
				return
			}
		}
	})
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
	}
}

func benchHash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}
