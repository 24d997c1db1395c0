package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/gatehouse/gatehouse/identity/store/storetest"
)

// TestSynchronous: the writer syncs every commit (FULL, 2) unless told
// otherwise; NORMAL is 1.
func TestSynchronous(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []Option
		want int
	}{
		{"Default", nil, 2},
		{"Full", []Option{WithSynchronous("full")}, 2},
		{"Normal", []Option{WithSynchronous("normal")}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := storetest.Context(t)
			s, err := Open(ctx, filepath.Join(t.TempDir(), "gatehouse.db"), tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var got int
			if err := s.w.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("PRAGMA synchronous = %d, want %d", got, tt.want)
			}
		})
	}
}
