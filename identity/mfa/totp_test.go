package mfa

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
)

// rfcSecret is the SHA-1 seed of RFC 4226's and RFC 6238's test vectors.
var rfcSecret = []byte("12345678901234567890")

// TestCodeRFCVectors: Code reproduces RFC 4226 Appendix D's HOTP values
// (counters 0 to 9) and RFC 6238 Appendix B's SHA-1 TOTP values, the
// last six of their eight digits (leading zeros kept).
func TestCodeRFCVectors(t *testing.T) {
	hotp := []string{"755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583", "399871", "520489"}
	for counter, want := range hotp {
		if got := Code(rfcSecret, int64(counter)); got != want {
			t.Errorf("HOTP counter %d: %s, want %s", counter, got, want)
		}
	}
	for unix, want := range map[int64]string{
		59: "287082", 1111111109: "081804", 1111111111: "050471",
		1234567890: "005924", 2000000000: "279037", 20000000000: "353130",
	} {
		if got := Code(rfcSecret, Step(time.Unix(unix, 0))); got != want {
			t.Errorf("TOTP at %d: %s, want %s", unix, got, want)
		}
	}
}

// TestCheckWindow: with the clock injected, the codes of now's step and
// of the steps either side are accepted, each proving its own step; codes
// two steps away are refused. It failed with Skew 2 (two steps away
// accepted) and with the window's upper bound exclusive (the next step's
// code refused).
func TestCheckWindow(t *testing.T) {
	now := time.Unix(1_800_000_015, 0) // mid-step
	at := Step(now)
	for d := int64(-3); d <= 3; d++ {
		step, err := Check(rfcSecret, Code(rfcSecret, at+d), now, 0)
		inWindow := d >= -1 && d <= 1 // RFC 6238 §5.2's one step of delay, each way
		switch {
		case inWindow && (err != nil || step != at+d):
			t.Errorf("code of step %+d: step %d, %v; want step %d accepted", d, step, err, at+d)
		case !inWindow && !errors.Is(err, ErrWrongCode):
			t.Errorf("code of step %+d: step %d, %v; want ErrWrongCode", d, step, err)
		}
	}
}

// TestCheckReplay: a step's code works once: with last at the step it
// proved, the same code is refused (ErrReplayed), and so is the previous
// step's, still within the window; the next step's is accepted. It failed
// when Check compared with < instead of <= (the same code accepted twice).
func TestCheckReplay(t *testing.T) {
	now := time.Unix(1_800_000_015, 0)
	at := Step(now)
	code := Code(rfcSecret, at)
	last, err := Check(rfcSecret, code, now, 0)
	if err != nil || last != at {
		t.Fatalf("first use: %d, %v", last, err)
	}
	if _, err := Check(rfcSecret, code, now, last); !errors.Is(err, ErrReplayed) {
		t.Fatalf("the same code again: %v, want ErrReplayed", err)
	}
	if _, err := Check(rfcSecret, Code(rfcSecret, at-1), now.Add(time.Second), last); !errors.Is(err, ErrReplayed) {
		t.Fatalf("the step before the one accepted: %v, want ErrReplayed", err)
	}
	if step, err := Check(rfcSecret, Code(rfcSecret, at+1), now.Add(Period), last); err != nil || step != at+1 {
		t.Fatalf("the next step's code: %d, %v", step, err)
	}
}

// TestCheckForm: anything but six ASCII digits is refused before any
// arithmetic, and another secret's code is refused.
func TestCheckForm(t *testing.T) {
	now := time.Unix(1_800_000_015, 0)
	good := Code(rfcSecret, Step(now))
	for _, code := range []string{"", "12345", "1234567", good + " ", " " + good[1:], "12a456", "１２３４５６", "-12345"} {
		if _, err := Check(rfcSecret, code, now, 0); !errors.Is(err, ErrWrongCode) {
			t.Errorf("code %q: %v, want ErrWrongCode", code, err)
		}
	}
	if _, err := Check([]byte("another secret of twenty"), good, now, 0); !errors.Is(err, ErrWrongCode) {
		t.Errorf("another secret's code: %v", err)
	}
}

// TestKeyURI: the enrolment URI names the issuer and account, and carries
// the secret in unpadded base32 with the parameters spelled out.
func TestKeyURI(t *testing.T) {
	secret, err := NewSecret()
	if err != nil || len(secret) != SecretBytes {
		t.Fatalf("NewSecret: %d bytes, %v", len(secret), err)
	}
	raw, err := KeyURI("Gatehouse Demo", "trader", secret)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(raw, "+") || !strings.HasPrefix(raw, "otpauth://totp/Gatehouse%20Demo:trader?") {
		t.Fatalf("URI %s: spaces must be %%20", raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if u.Scheme != "otpauth" || u.Host != "totp" || u.Path != "/Gatehouse Demo:trader" ||
		q.Get("issuer") != "Gatehouse Demo" || q.Get("algorithm") != "SHA1" || q.Get("digits") != "6" || q.Get("period") != "30" {
		t.Fatalf("URI %s", u)
	}
	if s := q.Get("secret"); s != EncodeSecret(secret) || strings.Contains(s, "=") || len(s) != 32 {
		t.Fatalf("secret %q", s)
	}
	for _, bad := range [][2]string{{"", "trader"}, {"Gatehouse", ""}, {"Gate:house", "trader"}} {
		if _, err := KeyURI(bad[0], bad[1], secret); err == nil {
			t.Errorf("KeyURI(%q, %q) accepted", bad[0], bad[1])
		}
	}
}
