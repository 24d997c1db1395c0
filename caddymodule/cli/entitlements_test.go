package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
)

// entitle and unentitle change the user's set and revoke the user's
// tokens issued before (an entitlement change carrying the new set),
// without ending its sessions; show shows the set; a malformed pair, an
// unknown user and a set too large for a token are refused with nothing
// changed. It failed when unentitle took the given pairs from the old set
// the other way round (it kept only those).
func TestUserEntitlementCommands(t *testing.T) {
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	user := func(args ...string) (string, error) {
		t.Helper()
		return run(t, setUpUserCommand, "user", "a long pass phrase\n", append(args, "--db", db)...)
	}
	if out, err := user("add", "trader", "--subject", "trader-1", "--entitle", "ASX:quotes"); err != nil {
		t.Fatalf("add: %v\n%s", err, out)
	}
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	holds := func() string {
		u, err := st.User(context.Background(), "trader")
		if err != nil {
			t.Fatal(err)
		}
		return u.Entitlements.String()
	}
	changes := func() []string {
		revs, err := st.Revocations(context.Background(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range revs {
			if r.Entitlements == nil {
				out = append(out, "a session end")
				continue
			}
			out = append(out, r.Subject+" → "+r.Entitlements.String())
		}
		return out
	}
	tooMany := make([]string, 200)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf("V%03d:quotes", i)
	}
	for _, tc := range []struct {
		args    []string
		wantErr string // "" for none
		out     string
		holds   string
		changes string
	}{
		{[]string{"entitle", "trader", "ASX:depth", "NZX:quotes,ASX:quotes"}, "", "user trader holds ASX:depth ASX:quotes NZX:quotes; its access tokens issued before are revoked",
			"ASX:depth ASX:quotes NZX:quotes", "trader-1 → ASX:depth ASX:quotes NZX:quotes"},
		{[]string{"entitle", "trader", "ASX:depth"}, "", "user trader holds ASX:depth ASX:quotes NZX:quotes: unchanged",
			"ASX:depth ASX:quotes NZX:quotes", "trader-1 → ASX:depth ASX:quotes NZX:quotes"},
		{[]string{"unentitle", "trader", "NZX:quotes", "NZX:depth"}, "", "user trader holds ASX:depth ASX:quotes; its access tokens issued before are revoked",
			"ASX:depth ASX:quotes", "trader-1 → ASX:depth ASX:quotes"},
		{[]string{"entitle", "trader", "nzx:quotes"}, "malformed entitlement", "", "ASX:depth ASX:quotes", "trader-1 → ASX:depth ASX:quotes"},
		{[]string{"entitle", "nobody", "ASX:quotes"}, `no user "nobody"`, "", "ASX:depth ASX:quotes", "trader-1 → ASX:depth ASX:quotes"},
		{append([]string{"entitle", "trader"}, tooMany...), "too large for an access token", "", "ASX:depth ASX:quotes", "trader-1 → ASX:depth ASX:quotes"},
		{[]string{"unentitle", "trader", "ASX:depth", "ASX:quotes"}, "", "user trader holds -; its access tokens issued before are revoked", "", "trader-1 → "},
	} {
		out, err := user(tc.args...)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Fatalf("%s: %v", strings.Join(tc.args, " "), err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Fatalf("%s: error %v, want %q", strings.Join(tc.args[:2], " "), err, tc.wantErr)
		case tc.wantErr == "" && strings.TrimSpace(out) != tc.out:
			t.Errorf("%s printed %q, want %q", strings.Join(tc.args, " "), out, tc.out)
		}
		if got := holds(); got != tc.holds {
			t.Errorf("after %s: trader holds %q, want %q", strings.Join(tc.args[:2], " "), got, tc.holds)
		}
		if got := strings.Join(changes(), "; "); got != tc.changes {
			t.Errorf("after %s: revocations %q, want %q", strings.Join(tc.args[:2], " "), got, tc.changes)
		}
	}
	if _, err := user("entitle", "trader", "ASX:quotes"); err != nil {
		t.Fatal(err)
	}
	out, err := user("show", "trader")
	if err != nil || !regexp.MustCompile(`(?m)^entitlements:\s+ASX:quotes$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^subject:\s+trader-1$`).MatchString(out) ||
		strings.Contains(out, "argon2") {
		t.Errorf("show: %v\n%s", err, out)
	}
	if _, err := user("show", "nobody"); err == nil {
		t.Error("show of an unknown user succeeded")
	}
	if _, err := user("add", "big", "--entitle", strings.Join(tooMany, ",")); !errors.Is(err, entitle.ErrTooLarge) {
		t.Errorf("add with too many pairs: %v", err)
	}
}
