package identity

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
)

// A consent form is answered once: its first answer uses it up, on every
// instance (a store counter), so re-posting it (Allow after Deny, Allow
// twice, a burst of Allows at once) gives no code and stores no consent.
// It failed when: the pending form was never used up within its 30
// minutes: Allow after Deny gave a code and stored the consent, Allow twice
// gave two codes.
func TestConsentFormAnsweredOnce(t *testing.T) {
	t.Run("allow after deny", func(t *testing.T) {
		f := newFixture(t, withBrowserClients)
		b := newBrowser(t, f)
		p := b.login(b.authorize(webRequest("code")), "other", "other-pw")
		if v := b.consent(p, "deny").result(t, false); v.Get("error") != "access_denied" {
			t.Fatalf("deny: %v", v)
		}
		again := b.consent(p, "allow")
		if again.status != http.StatusBadRequest || again.location != nil {
			t.Fatalf("allow after deny: %d %v, want 400 and no redirect", again.status, again.location)
		}
		// The same form spelled otherwise (base64 skips a line break) is the same
		// form. It failed when: the counter was keyed on the form's text.
		form := p.fields()
		req := form.Get("request")
		form.Set("request", req[:10]+"\n"+req[10:])
		form.Set("decision", "allow")
		if r := b.post(PathConsent, form); r.location != nil && r.location.Query().Get("code") != "" {
			t.Fatalf("allow after deny, the form's text respelled: a code")
		}
		if _, err := browserStore(f.st).Consent(t.Context(), "sub-other", "web"); err == nil {
			t.Error("allow after deny stored a consent")
		}
	})
	t.Run("allow twice", func(t *testing.T) {
		f := newFixture(t, withBrowserClients)
		b := newBrowser(t, f)
		p := b.login(b.authorize(webRequest("code")), "other", "other-pw")
		if v := b.consent(p, "allow").result(t, false); v.Get("code") == "" {
			t.Fatalf("allow: %v", v)
		}
		if again := b.consent(p, "allow"); again.status != http.StatusBadRequest || again.location != nil {
			t.Fatalf("allow twice: %d %v, want 400 and no second code", again.status, again.location)
		}
	})
	t.Run("a burst of allows", func(t *testing.T) {
		f := newFixture(t, withBrowserClients)
		b := newBrowser(t, f)
		p := b.login(b.authorize(webRequest("code")), "other", "other-pw")
		form := p.fields()
		form.Set("decision", "allow")
		var codes atomic.Int32
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				if r := b.post(PathConsent, form); r.location != nil && r.location.Query().Get("code") != "" {
					codes.Add(1)
				}
			})
		}
		wg.Wait()
		if n := codes.Load(); n != 1 {
			t.Errorf("16 answers at once of one form gave %d codes, want 1", n)
		}
	})
}
