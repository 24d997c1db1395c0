package mfa

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1" // RFC 6238's default, and the one every authenticator app computes
	"crypto/subtle"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The TOTP parameters every authenticator app honours: HMAC-SHA-1, six
// digits, 30-second steps counted from the Unix epoch. (RFC 6238 allows
// SHA-256 and SHA-512, eight digits and other periods; several widely used
// apps ignore the otpauth URI's parameters and compute these anyway, so a
// server that chose others would refuse their codes.)
const (
	Digits = 6
	Period = 30 * time.Second
	// Skew is how many steps either side of now a code may be from: one,
	// so a code typed as its step ends, or read off a phone whose clock
	// is up to 30 s off, is still accepted; two steps away is refused.
	Skew = 1
	// SecretBytes is the size of a new secret: 160 bits, RFC 4226 §4's
	// recommendation and the size of the HMAC-SHA-1 key block's digest.
	SecretBytes = 20
)

// Errors of Check. Both say only that the code was not accepted: the
// caller answers the same to either, and counts each as a failure.
var (
	// ErrWrongCode is a code that is none of the window's.
	ErrWrongCode = errors.New("mfa: wrong code")
	// ErrReplayed is a code of a step the factor has already accepted a
	// code of, or of an earlier one: each step's code works once.
	ErrReplayed = errors.New("mfa: code already used")
)

// NewSecret is a new TOTP secret from crypto/rand.
func NewSecret() ([]byte, error) {
	b := make([]byte, SecretBytes)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	return b, nil
}

// Step is the time step t falls in.
func Step(t time.Time) int64 { return t.Unix() / int64(Period/time.Second) }

// Code is the code of step under secret: RFC 4226's HOTP with the step as
// its counter (RFC 6238 §4.2), Digits digits with leading zeros.
func Code(secret []byte, step int64) string {
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], uint64(step))
	m := hmac.New(sha1.New, secret)
	m.Write(msg[:])
	sum := m.Sum(nil)
	off := sum[len(sum)-1] & 0x0f
	bin := binary.BigEndian.Uint32(sum[off:off+4]) & 0x7fffffff
	var code [Digits]byte
	for i := Digits - 1; i >= 0; i-- {
		code[i] = '0' + byte(bin%10)
		bin /= 10
	}
	return string(code[:])
}

// Check reports which step code proves under secret at now: a step within
// Skew of now's and later than last, the step the factor last accepted (0
// if none). A code of the window that is of step last or earlier is
// ErrReplayed; anything else, including a code of the wrong form, is
// ErrWrongCode. Every step of the window is compared, in constant time, so
// the time taken says nothing about which (if any) matched.
//
// The caller stores the step returned as the factor's last, with a
// compare-and-set on last, before it counts the code as accepted: two
// requests with the same code, on one instance or two, then see one
// success.
func Check(secret []byte, code string, now time.Time, last int64) (int64, error) {
	if !wellFormed(code) {
		return 0, ErrWrongCode
	}
	at := Step(now)
	var matched int64
	found := 0
	for step := at - Skew; step <= at+Skew; step++ {
		eq := subtle.ConstantTimeCompare([]byte(Code(secret, step)), []byte(code))
		// The latest step that matches: a code repeats across steps with
		// odds of one in a million, and the later one is the safer to keep.
		matched = int64(subtle.ConstantTimeSelect(eq, int(step), int(matched)))
		found |= eq
	}
	switch {
	case found == 0:
		return 0, ErrWrongCode
	case matched <= last:
		return 0, ErrReplayed
	}
	return matched, nil
}

// wellFormed reports whether code is Digits ASCII digits.
func wellFormed(code string) bool {
	if len(code) != Digits {
		return false
	}
	for i := 0; i < len(code); i++ {
		if code[i] < '0' || code[i] > '9' {
			return false
		}
	}
	return true
}

// EncodeSecret is secret as an authenticator app takes it typed in:
// base32 without padding (RFC 4648), as the otpauth URI carries it.
func EncodeSecret(secret []byte) string {
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(secret)
}

// KeyURI is the otpauth URI that enrols secret in an authenticator app
// (the QR code's content): the issuer names the service, account the
// user, and the parameters are spelled out for the apps that read them.
// Spaces are %20, never +, which some apps show as it is; a colon in the
// issuer would split the label elsewhere, and is refused.
func KeyURI(issuer, account string, secret []byte) (string, error) {
	if issuer == "" || account == "" || strings.Contains(issuer, ":") {
		return "", errors.New("mfa: an issuer and an account are needed, and the issuer may not contain a colon")
	}
	esc := func(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }
	return "otpauth://totp/" + url.PathEscape(issuer) + ":" + url.PathEscape(account) +
		"?secret=" + EncodeSecret(secret) + "&issuer=" + esc(issuer) + "&algorithm=SHA1&digits=" + strconv.Itoa(Digits) +
		"&period=" + strconv.Itoa(int(Period/time.Second)), nil
}
