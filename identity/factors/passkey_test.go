package factors_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatehouse/gatehouse/identity/factors"
	"github.com/gatehouse/gatehouse/identity/factors/passkeytest"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
	"github.com/gatehouse/gatehouse/identity/users"
)

const (
	issuer = "https://login.example.com"
	source = "203.0.113.7"
)

// clock is a settable time.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fixture is a factors service over a SQLite store with alice and bob,
// and a browser at the issuer's origin.
type fixture struct {
	svc        *factors.Service
	st         *sqlite.Store
	clock      *clock
	alice, bob store.User
	browser    *passkeytest.Authenticator
}

func newFixture(t *testing.T, change ...func(*factors.Config)) *fixture {
	t.Helper()
	ctx := t.Context()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "gatehouse.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{st: st, clock: &clock{now: time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)},
		browser: &passkeytest.Authenticator{Origin: issuer}}
	for _, name := range []string{"alice", "bob"} {
		u := store.User{Username: name, Subject: "sub-" + name, PasswordHash: "x", Created: f.clock.Now(), Updated: f.clock.Now()}
		if err := st.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	f.alice, _ = st.User(ctx, "alice")
	f.bob, _ = st.User(ctx, "bob")
	checker, err := users.NewChecker(users.CheckerConfig{
		Store: st, Lockout: users.LockoutPolicy{MaxFailures: 3, ThrottleAfter: 100},
		FailureFloor: time.Nanosecond, Now: f.clock.Now,
		Sleep: func(context.Context, time.Duration) error { return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, factors.CeremonyKeySize)
	rand.Read(key)
	cfg := factors.Config{
		Store: st, Checker: checker, Issuer: "Gatehouse", Now: f.clock.Now,
		Passkeys: st, Users: st, Spent: st, IssuerURL: issuer, CeremonyKey: key, Audit: zaptest.NewLogger(t),
	}
	for _, c := range change {
		c(&cfg)
	}
	if f.svc, err = factors.New(cfg); err != nil {
		t.Fatal(err)
	}
	return f
}

// register registers a passkey for user with the authenticator's
// options o.
func (f *fixture) register(t *testing.T, user store.User, name string, o passkeytest.Options) (*passkeytest.Credential, store.Passkey) {
	t.Helper()
	options, state, err := f.svc.BeginPasskeyRegistration(t.Context(), user)
	if err != nil {
		t.Fatalf("BeginPasskeyRegistration: %v", err)
	}
	cred, response := f.browser.Create(t, options, o)
	p, err := f.svc.FinishPasskeyRegistration(t.Context(), user, state, response, name)
	if err != nil {
		t.Fatalf("FinishPasskeyRegistration: %v", err)
	}
	return cred, p
}

// signIn signs in with cred, for user (nil: usernameless), the
// authenticator answering with o.
func (f *fixture) signIn(t *testing.T, user *store.User, cred *passkeytest.Credential, o passkeytest.Options) (store.User, []string, error) {
	t.Helper()
	options, state, err := f.svc.BeginPasskeyLogin(t.Context(), user)
	if err != nil {
		t.Fatalf("BeginPasskeyLogin: %v", err)
	}
	return f.svc.FinishPasskeyLogin(t.Context(), user, state, f.browser.Get(t, options, cred, o), source)
}

// TestPasskeyRegisterAndSignIn: two passkeys registered, each signs its
// owner in, for a second factor and usernameless; user verification
// makes two factors, its absence one. It failed when the amr counted
// user verification whatever the flag said.
func TestPasskeyRegisterAndSignIn(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if st, _ := f.svc.Status(ctx, f.alice.Subject); st.Any() || st.Passkeys != 0 {
		t.Fatalf("status before: %+v", st)
	}
	laptop, p1 := f.register(t, f.alice, "  laptop ", passkeytest.Options{UV: true, Flags: passkeytest.FlagBE | passkeytest.FlagBS})
	if p1.Name != "laptop" || !p1.BackupEligible || !p1.BackupState || p1.Subject != f.alice.Subject {
		t.Errorf("the first passkey: %+v", p1)
	}

	// The second registration excludes the first passkey.
	options, state, err := f.svc.BeginPasskeyRegistration(ctx, f.alice)
	if err != nil {
		t.Fatal(err)
	}
	var opts struct {
		PublicKey struct {
			Exclude []struct {
				ID string `json:"id"`
			} `json:"excludeCredentials"`
			Selection struct {
				ResidentKey      string `json:"residentKey"`
				UserVerification string `json:"userVerification"`
			} `json:"authenticatorSelection"`
			RP struct {
				ID string `json:"id"`
			} `json:"rp"`
		} `json:"publicKey"`
	}
	if err := json.Unmarshal(options, &opts); err != nil {
		t.Fatal(err)
	}
	if len(opts.PublicKey.Exclude) != 1 || opts.PublicKey.RP.ID != "login.example.com" ||
		opts.PublicKey.Selection.ResidentKey != "preferred" || opts.PublicKey.Selection.UserVerification != "preferred" {
		t.Errorf("the second registration's options: %s", options)
	}
	f.clock.Add(time.Minute)
	key, response := f.browser.Create(t, options, passkeytest.Options{Counting: true})
	if _, err := f.svc.FinishPasskeyRegistration(ctx, f.alice, state, response, "key"); err != nil {
		t.Fatal(err)
	}
	if st, _ := f.svc.Status(ctx, f.alice.Subject); !st.Any() || st.Passkeys != 2 {
		t.Errorf("status after two: %+v", st)
	}

	for _, c := range []struct {
		name string
		cred *passkeytest.Credential
		uv   bool
		want []string
	}{
		{"laptop with UV", laptop, true, []string{"hwk", "user", "mfa"}},
		{"laptop without UV", laptop, false, []string{"hwk"}},
		{"key with UV", key, true, []string{"hwk", "user", "mfa"}},
		{"key without UV", key, false, []string{"hwk"}},
	} {
		for _, user := range []*store.User{&f.alice, nil} {
			name := c.name + ", a second factor"
			if user == nil {
				name = c.name + ", usernameless"
			}
			t.Run(name, func(t *testing.T) {
				got, amr, err := f.signIn(t, user, c.cred, passkeytest.Options{UV: c.uv})
				if err != nil {
					t.Fatalf("sign-in: %v", err)
				}
				if got.Subject != f.alice.Subject || !slices.Equal(amr, c.want) {
					t.Errorf("signed in %q with %v, want %q with %v", got.Subject, amr, f.alice.Subject, c.want)
				}
			})
		}
	}
	keys, _ := f.svc.Passkeys(ctx, f.alice.Subject)
	if len(keys) != 2 || keys[1].SignCount != 5 || keys[0].LastUsed.IsZero() {
		t.Errorf("the passkeys after the sign-ins: %+v", keys)
	}
}

// TestPasskeyRefusals: each check of a sign-in refuses what breaks it,
// and the right passkey still works after. They failed when: the error
// of go-webauthn's ValidateLogin was ignored (origin, RP ID, challenge,
// client data type, user presence, signature); the store's sign count
// was taken as accepted (a count that did not grow, a clone); Spent was
// not consulted (a replayed response). Another user's passkey as a
// second factor is refused twice, by the owner check and by
// go-webauthn's allow list: it failed only with both broken.
func TestPasskeyRefusals(t *testing.T) {
	f := newFixture(t)
	alice, _ := f.register(t, f.alice, "alice", passkeytest.Options{Counting: true})
	bob, _ := f.register(t, f.bob, "bob", passkeytest.Options{})
	stale := uint32(1)
	for _, c := range []struct {
		name string
		user *store.User
		cred *passkeytest.Credential
		o    passkeytest.Options
	}{
		{"another user's passkey, as a second factor", &f.alice, bob, passkeytest.Options{}},
		{"another user's passkey, usernameless with the user's handle", nil, bob, passkeytest.Options{UserHandle: alice.UserHandle}},
		{"a wrong origin", &f.alice, alice, passkeytest.Options{Origin: "https://login.example.com.evil.test"}},
		{"a wrong origin, usernameless", nil, alice, passkeytest.Options{Origin: "https://evil.test"}},
		{"a wrong RP ID", &f.alice, alice, passkeytest.Options{RPID: "evil.test"}},
		{"a parent domain as RP ID", &f.alice, alice, passkeytest.Options{RPID: "example.com"}},
		{"another challenge", &f.alice, alice, passkeytest.Options{Challenge: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}},
		{"a registration's client data", &f.alice, alice, passkeytest.Options{Type: "webauthn.create"}},
		{"no user presence", &f.alice, alice, passkeytest.Options{NoUP: true}},
		{"a tampered signature", &f.alice, alice, passkeytest.Options{TamperSignature: true}},
		{"backup eligibility changed", &f.alice, alice, passkeytest.Options{Flags: passkeytest.FlagBE}},
		{"a tampered signature, usernameless", nil, bob, passkeytest.Options{TamperSignature: true}},
		{"a sign count that did not grow", &f.alice, alice, passkeytest.Options{Count: &stale}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Fresh counters: three failures lock the pair.
			f.clock.Add(time.Hour)
			if _, _, err := f.signIn(t, c.user, c.cred, c.o); !errors.Is(err, users.ErrBadCredentials) {
				t.Fatalf("sign-in: %v, want %v", err, users.ErrBadCredentials)
			}
			who := c.user
			if who == nil {
				who = &f.alice
				if c.cred == bob {
					who = &f.bob
				}
			}
			cred := alice
			if who.Subject == f.bob.Subject {
				cred = bob
			}
			if _, _, err := f.signIn(t, who, cred, passkeytest.Options{}); err != nil {
				t.Fatalf("the right passkey after: %v", err)
			}
		})
	}

	t.Run("a replayed response", func(t *testing.T) {
		// Bob's passkey keeps no count: only the spent challenge stops
		// the same response from signing in twice.
		options, state, err := f.svc.BeginPasskeyLogin(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		response := f.browser.Get(t, options, bob, passkeytest.Options{UV: true})
		if _, _, err := f.svc.FinishPasskeyLogin(t.Context(), nil, state, response, source); err != nil {
			t.Fatalf("first: %v", err)
		}
		if _, _, err := f.svc.FinishPasskeyLogin(t.Context(), nil, state, response, source); !errors.Is(err, users.ErrBadCredentials) {
			t.Fatalf("again: %v, want %v", err, users.ErrBadCredentials)
		}
	})

	t.Run("a cloned authenticator", func(t *testing.T) {
		clone := *alice
		if _, _, err := f.signIn(t, &f.alice, alice, passkeytest.Options{}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.signIn(t, &f.alice, &clone, passkeytest.Options{}); !errors.Is(err, users.ErrBadCredentials) {
			t.Fatalf("the clone, a count behind: %v, want %v", err, users.ErrBadCredentials)
		}
	})

	t.Run("an unknown passkey", func(t *testing.T) {
		unknown := *alice
		unknown.ID = []byte("never registered")
		if _, _, err := f.signIn(t, nil, &unknown, passkeytest.Options{}); !errors.Is(err, factors.ErrCeremony) {
			t.Fatalf("sign-in: %v, want %v", err, factors.ErrCeremony)
		}
	})
}

// TestPasskeyFailuresLock: failed passkey sign-ins count as wrong
// passwords do: three lock the pair, and then the right passkey is
// refused too. It failed when FinishPasskeyLogin checked outside
// CheckFactor.
func TestPasskeyFailuresLock(t *testing.T) {
	f := newFixture(t)
	alice, _ := f.register(t, f.alice, "alice", passkeytest.Options{})
	for range 3 {
		if _, _, err := f.signIn(t, nil, alice, passkeytest.Options{TamperSignature: true}); !errors.Is(err, users.ErrBadCredentials) {
			t.Fatalf("a tampered signature: %v", err)
		}
	}
	if _, _, err := f.signIn(t, nil, alice, passkeytest.Options{}); !errors.Is(err, users.ErrBadCredentials) {
		t.Fatalf("the right passkey on a locked pair: %v, want %v", err, users.ErrBadCredentials)
	}
	f.clock.Add(time.Hour)
	if _, _, err := f.signIn(t, nil, alice, passkeytest.Options{}); err != nil {
		t.Fatalf("after the lock: %v", err)
	}
}

// TestPasskeyCeremonyState: a state works only for its ceremony, its
// user, unaltered and within CeremonyLifetime. It failed when the kind
// and subject were left out of the associated data, and when the expiry
// was not checked.
func TestPasskeyCeremonyState(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	alice, _ := f.register(t, f.alice, "alice", passkeytest.Options{})
	bob, _ := f.register(t, f.bob, "bob", passkeytest.Options{})
	_, _ = alice, bob

	loginOpts, loginState, err := f.svc.BeginPasskeyLogin(ctx, &f.alice)
	if err != nil {
		t.Fatal(err)
	}
	_, anyState, err := f.svc.BeginPasskeyLogin(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, regState, err := f.svc.BeginPasskeyRegistration(ctx, f.alice)
	if err != nil {
		t.Fatal(err)
	}
	response := f.browser.Get(t, loginOpts, alice, passkeytest.Options{})
	tampered := []byte(loginState)
	tampered[len(tampered)/2] ^= 'A' ^ 'B'
	for _, c := range []struct {
		name  string
		user  *store.User
		state string
	}{
		{"no state", &f.alice, ""},
		{"a tampered state", &f.alice, string(tampered)},
		{"a truncated state", &f.alice, loginState[:len(loginState)-4]},
		{"a registration's state", &f.alice, regState},
		{"another user's ceremony", &f.bob, loginState},
		{"a user's ceremony, usernameless", nil, loginState},
		{"a usernameless ceremony, for a user", &f.alice, anyState},
		{"an oversized state", &f.alice, strings.Repeat("A", factors.MaxCeremonyState+1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, _, err := f.svc.FinishPasskeyLogin(ctx, c.user, c.state, response, source); !errors.Is(err, factors.ErrCeremony) {
				t.Fatalf("sign-in: %v, want %v", err, factors.ErrCeremony)
			}
		})
	}
	t.Run("a registration with a sign-in's state", func(t *testing.T) {
		options, _, err := f.svc.BeginPasskeyRegistration(ctx, f.alice)
		if err != nil {
			t.Fatal(err)
		}
		_, created := f.browser.Create(t, options, passkeytest.Options{})
		if _, err := f.svc.FinishPasskeyRegistration(ctx, f.alice, loginState, created, "x"); !errors.Is(err, factors.ErrCeremony) {
			t.Fatalf("registration: %v, want %v", err, factors.ErrCeremony)
		}
		if _, err := f.svc.FinishPasskeyRegistration(ctx, f.bob, regState, created, "x"); !errors.Is(err, factors.ErrCeremony) {
			t.Fatalf("registration for another user: %v, want %v", err, factors.ErrCeremony)
		}
	})
	t.Run("expired", func(t *testing.T) {
		f.clock.Add(factors.CeremonyLifetime)
		if _, _, err := f.svc.FinishPasskeyLogin(ctx, &f.alice, loginState, response, source); !errors.Is(err, factors.ErrCeremony) {
			t.Fatalf("sign-in after %v: %v, want %v", factors.CeremonyLifetime, err, factors.ErrCeremony)
		}
	})
	t.Run("within its lifetime", func(t *testing.T) {
		options, state, err := f.svc.BeginPasskeyLogin(ctx, &f.alice)
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Add(factors.CeremonyLifetime - time.Second)
		if _, _, err := f.svc.FinishPasskeyLogin(ctx, &f.alice, state, f.browser.Get(t, options, alice, passkeytest.Options{}), source); err != nil {
			t.Fatalf("sign-in: %v", err)
		}
	})
}

// TestPasskeyRegistrationRefusals: a registration go-webauthn refuses
// (origin, RP ID, challenge) stores nothing; names and sizes are bounded;
// a user has at most store.MaxPasskeys.
func TestPasskeyRegistrationRefusals(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	for _, c := range []struct {
		name string
		o    passkeytest.Options
		want error
	}{
		{"a wrong origin", passkeytest.Options{Origin: "https://evil.test"}, factors.ErrCeremony},
		{"a wrong RP ID", passkeytest.Options{RPID: "evil.test"}, factors.ErrCeremony},
		{"another challenge", passkeytest.Options{Challenge: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}, factors.ErrCeremony},
		{"a sign-in's client data", passkeytest.Options{Type: "webauthn.get"}, factors.ErrCeremony},
		{"no user presence", passkeytest.Options{NoUP: true}, factors.ErrCeremony},
		{"backup state without eligibility", passkeytest.Options{Flags: passkeytest.FlagBS}, factors.ErrCeremony},
	} {
		t.Run(c.name, func(t *testing.T) {
			options, state, err := f.svc.BeginPasskeyRegistration(ctx, f.alice)
			if err != nil {
				t.Fatal(err)
			}
			_, response := f.browser.Create(t, options, c.o)
			if _, err := f.svc.FinishPasskeyRegistration(ctx, f.alice, state, response, "x"); !errors.Is(err, c.want) {
				t.Fatalf("registration: %v, want %v", err, c.want)
			}
		})
	}
	if keys, _ := f.svc.Passkeys(ctx, f.alice.Subject); len(keys) != 0 {
		t.Fatalf("%d passkeys stored by refused registrations", len(keys))
	}

	t.Run("names", func(t *testing.T) {
		options, state, err := f.svc.BeginPasskeyRegistration(ctx, f.alice)
		if err != nil {
			t.Fatal(err)
		}
		_, response := f.browser.Create(t, options, passkeytest.Options{})
		for _, name := range []string{strings.Repeat("n", store.MaxPasskeyName+1), "a\x00b", "tab\there", "\xff"} {
			if _, err := f.svc.FinishPasskeyRegistration(ctx, f.alice, state, response, name); !errors.Is(err, factors.ErrPasskeyName) {
				t.Errorf("name %q: %v, want %v", name, err, factors.ErrPasskeyName)
			}
		}
		if _, err := f.svc.FinishPasskeyRegistration(ctx, f.alice, state, []byte(strings.Repeat(" ", factors.MaxPasskeyResponse+1)), ""); !errors.Is(err, factors.ErrCeremony) {
			t.Errorf("an oversized response: %v, want %v", err, factors.ErrCeremony)
		}
		p, err := f.svc.FinishPasskeyRegistration(ctx, f.alice, state, response, "")
		if err != nil || p.Name != "Passkey" {
			t.Fatalf("no name: %+v, %v", p, err)
		}
		if _, err := f.svc.FinishPasskeyRegistration(ctx, f.alice, state, response, ""); !errors.Is(err, store.ErrAlreadyExists) {
			t.Errorf("the same passkey again: %v, want %v", err, store.ErrAlreadyExists)
		}
	})

	t.Run("at most MaxPasskeys", func(t *testing.T) {
		for i := 1; i < store.MaxPasskeys; i++ {
			f.register(t, f.alice, "k", passkeytest.Options{})
		}
		if _, _, err := f.svc.BeginPasskeyRegistration(ctx, f.alice); !errors.Is(err, store.ErrTooManyPasskeys) {
			t.Fatalf("one more: %v, want %v", err, store.ErrTooManyPasskeys)
		}
	})
}

// TestPasskeyRenameRemove: a user renames and removes their own passkeys
// only; a removed passkey signs nobody in.
func TestPasskeyRenameRemove(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	cred, p := f.register(t, f.alice, "old", passkeytest.Options{})
	if err := f.svc.RenamePasskey(ctx, f.bob, p.ID, "mine"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("bob renaming alice's: %v", err)
	}
	if err := f.svc.RenamePasskey(ctx, f.alice, p.ID, strings.Repeat("n", 65)); !errors.Is(err, factors.ErrPasskeyName) {
		t.Errorf("a long name: %v", err)
	}
	if err := f.svc.RenamePasskey(ctx, f.alice, p.ID, "new"); err != nil {
		t.Fatal(err)
	}
	if keys, _ := f.svc.Passkeys(ctx, f.alice.Subject); len(keys) != 1 || keys[0].Name != "new" {
		t.Errorf("after the rename: %+v", keys)
	}
	if err := f.svc.RemovePasskey(ctx, f.bob, p.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("bob removing alice's: %v", err)
	}
	if err := f.svc.RemovePasskey(ctx, f.alice, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.svc.BeginPasskeyLogin(ctx, &f.alice); !errors.Is(err, factors.ErrNoFactor) {
		t.Errorf("a second factor without a passkey: %v, want %v", err, factors.ErrNoFactor)
	}
	if _, _, err := f.signIn(t, nil, cred, passkeytest.Options{}); !errors.Is(err, factors.ErrCeremony) {
		t.Errorf("a removed passkey: %v, want %v", err, factors.ErrCeremony)
	}
}

// TestPasskeysOff: an issuer no relying party can be derived from turns
// passkeys off, with the reason; a bad configuration is an error.
func TestPasskeysOff(t *testing.T) {
	for _, c := range []struct{ issuer, rpID, off string }{
		{"https://127.0.0.1:8443", "", "IP address"},
		{"http://login.example.com", "", "not https"},
		{"", "", "no issuer URL"},
	} {
		f := newFixture(t, func(cfg *factors.Config) { cfg.IssuerURL, cfg.RPID = c.issuer, c.rpID })
		if off := f.svc.PasskeysOff(); !strings.Contains(off, c.off) {
			t.Errorf("issuer %q: off %q, want it to say %q", c.issuer, off, c.off)
		}
		if _, _, err := f.svc.BeginPasskeyLogin(t.Context(), nil); !errors.Is(err, factors.ErrPasskeysOff) {
			t.Errorf("issuer %q: BeginPasskeyLogin: %v", c.issuer, err)
		}
	}
	f := newFixture(t, func(cfg *factors.Config) { cfg.IssuerURL = "http://localhost:8080" })
	if off := f.svc.PasskeysOff(); off != "" {
		t.Errorf("localhost over http: off %q", off)
	}
	f = newFixture(t, func(cfg *factors.Config) { cfg.RPID = "example.com" })
	if off := f.svc.PasskeysOff(); off != "" {
		t.Errorf("a parent domain as RP ID: off %q", off)
	}
	for name, change := range map[string]func(*factors.Config){
		"an RP ID the issuer is not under": func(cfg *factors.Config) { cfg.RPID = "other.example" },
		"a short ceremony key":             func(cfg *factors.Config) { cfg.CeremonyKey = cfg.CeremonyKey[:16] },
		"an issuer that is no URL":         func(cfg *factors.Config) { cfg.IssuerURL = "login.example.com" },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := factors.Config{}
			f := newFixture(t, func(c *factors.Config) { cfg = *c })
			_ = f
			change(&cfg)
			if _, err := factors.New(cfg); err == nil {
				t.Errorf("New accepted it")
			}
		})
	}
}
