package authorize

import (
	"crypto/aes"
	"crypto/cipher"
	"strings"
	"testing"
	"time"
)

func withSealKey(t *testing.T, e *Endpoint, key string) *Endpoint {
	t.Helper()
	block, err := aes.NewCipher([]byte(key))
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	c := *e
	c.aead = aead
	c.cfg.PendingLifetime = 30 * time.Minute
	return &c
}

func TestPendingSealOpen(t *testing.T) {
	e := withSealKey(t, testEndpoint(t), strings.Repeat("k", 32))
	q := &request{ClientID: "ro", RedirectURI: "https://ro.example/cb", ResponseType: "code", Code: true,
		Scopes: []string{"openid"}, State: "s", MaxAge: -1, Subject: "sub"}
	sealedText, err := e.seal(q, stepConsent)
	if err != nil {
		t.Fatal(err)
	}
	got, c, err := e.open(sealedText, stepConsent)
	if err != nil || c.ID != "ro" || got.Subject != "sub" || got.State != "s" {
		t.Fatalf("open: %+v %v", got, err)
	}

	other := withSealKey(t, e, strings.Repeat("x", 32))
	later := *e
	later.cfg.Now = func() time.Time { return now.Add(31 * time.Minute) }
	removed := *e
	removedClient := *q
	removedClient.RedirectURI = "https://ro.example/gone"
	gone, _ := e.seal(&removedClient, stepConsent)
	for name, try := range map[string]func() error{
		"another step":       func() error { _, _, err := e.open(sealedText, stepLogin); return err },
		"another key":        func() error { _, _, err := other.open(sealedText, stepConsent); return err },
		"expired":            func() error { _, _, err := later.open(sealedText, stepConsent); return err },
		"tampered":           func() error { _, _, err := e.open(flip(sealedText), stepConsent); return err },
		"empty":              func() error { _, _, err := e.open("", stepConsent); return err },
		"garbage":            func() error { _, _, err := e.open("!!!", stepConsent); return err },
		"redirect no longer": func() error { _, _, err := removed.open(gone, stepConsent); return err },
	} {
		if try() == nil {
			t.Errorf("%s: opened", name)
		}
	}
}

func flip(s string) string {
	b := []byte(s)
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

func TestResponseTypeAndMode(t *testing.T) {
	for _, tc := range []struct {
		rt, mode, wantMode, wantErr string
	}{
		{"code", "", modeQuery, ""},
		{"token", "", modeFragment, ""},
		{"id_token token", "", modeFragment, ""},
		{"token id_token", "", modeFragment, ""},
		{"code id_token", "form_post", modeFormPost, ""},
		{"code", "fragment", modeFragment, ""},
		{"code token", "query", modeFragment, "invalid_request"},
		{"", "", modeQuery, "invalid_request"},
		{"code  token", "", modeQuery, "unsupported_response_type"},
		{"none", "", modeQuery, "unsupported_response_type"},
		{"Code", "", modeQuery, "unsupported_response_type"},
		{"code", "jwt", modeQuery, "invalid_request"},
	} {
		q := &request{}
		perr := q.responseType(tc.rt)
		if perr == nil {
			perr = q.responseMode(tc.mode)
		}
		code := ""
		if perr != nil {
			code = perr.Code
		}
		if code != tc.wantErr || q.ResponseMode != tc.wantMode {
			t.Errorf("%q %q: mode %q error %q, want %q %q", tc.rt, tc.mode, q.ResponseMode, code, tc.wantMode, tc.wantErr)
		}
	}
}

func TestNeedsLogin(t *testing.T) {
	auth := now.Add(-time.Minute)
	for _, tc := range []struct {
		prompt []string
		maxAge int
		want   bool
	}{
		{nil, -1, false},
		{[]string{promptConsent}, -1, false},
		{[]string{promptLogin}, -1, true},
		{[]string{promptSelectAccount}, -1, true},
		{nil, 0, true},
		{nil, 59, true},
		{nil, 60, false},
	} {
		q := &request{Prompt: tc.prompt, MaxAge: tc.maxAge}
		if got := q.needsLogin(auth, now); got != tc.want {
			t.Errorf("prompt %v max_age %d: %t", tc.prompt, tc.maxAge, got)
		}
	}
}
