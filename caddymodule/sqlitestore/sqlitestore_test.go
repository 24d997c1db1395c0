package sqlitestore

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestUnmarshalCaddyfile(t *testing.T) {
	tests := []struct {
		name, input, path, err string
	}{
		{"default", "sqlite", "", ""},
		{"argument", "sqlite a.db", "a.db", ""},
		{"block", "sqlite {\n\tpath a.db\n}", "a.db", ""},
		{"two paths", "sqlite a.db b.db", "", "wrong argument count"},
		{"path twice", "sqlite a.db {\n\tpath b.db\n}", "", "sqlite store: path given twice"},
		{"path twice in block", "sqlite {\n\tpath a.db\n\tpath b.db\n}", "", "sqlite store: path given twice"},
		{"path without value", "sqlite {\n\tpath\n}", "", "wrong argument count"},
		{"unknown option", "sqlite {\n\tfile a.db\n}", "", `unrecognized subdirective "file"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := new(SQLiteStore)
			err := s.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.input))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil || s.Path != tt.path {
				t.Errorf("path %q, %v; want %q", s.Path, err, tt.path)
			}
		})
	}
}

// TestOpenStore provisions the module with a relative path and with none:
// the key names the absolute file, and the store opens there.
func TestOpenStore(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	for _, tt := range []struct{ path, want string }{
		{"data/store.db", "data/store.db"},
		{"", DefaultPath()},
	} {
		s := &SQLiteStore{Path: tt.path}
		if err := s.Provision(caddy.Context{}); err != nil {
			t.Fatal(err)
		}
		want, err := filepath.Abs(tt.want)
		if err != nil {
			t.Fatal(err)
		}
		if s.StoreKey() != "sqlite:"+want {
			t.Errorf("key %q, want %q", s.StoreKey(), "sqlite:"+want)
		}
		st, err := s.OpenStore(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
}
