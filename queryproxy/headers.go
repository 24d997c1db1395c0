package queryproxy

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync/atomic"
)

// requestID is the client's Request-Id when it is one header of 1 to
// MaxRequestIDBytes visible ASCII characters (ok false otherwise), or a
// new one when there is none.
func requestID(values []string) (string, bool) {
	if len(values) == 0 {
		return newRequestID(), true
	}
	v := values[0]
	if len(values) != 1 || v == "" || len(v) > MaxRequestIDBytes {
		return newRequestID(), false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x21 || v[i] > 0x7e {
			return newRequestID(), false
		}
	}
	return v, true
}

// A new request id is this process's random prefix and a count: unique
// across processes and restarts (the prefix is 64 random bits) without
// reading randomness per request. It names a request in logs; it is not a
// secret.
var (
	idPrefix = func() string {
		var b [8]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}()
	idCount atomic.Uint64
)

func newRequestID() string {
	const digits = "0123456789abcdef"
	var b [32]byte // 16 hex digits of prefix, 16 of count
	copy(b[:], idPrefix)
	for i, n := 31, idCount.Add(1); i >= 16; i, n = i-1, n>>4 {
		b[i] = digits[n&15]
	}
	return string(b[:])
}

// cors lets an allowed Origin read the response, and on a preflight
// (OPTIONS, answered before authentication) says which method and headers
// it may send. An origin not allowed gets no CORS header: the browser
// refuses.
func (h *Handler) cors(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get("Origin")
	hdr := w.Header()
	hdr.Add("Vary", "Origin")
	if origin == "" || !h.originAllowed(origin) {
		return
	}
	hdr.Set("Access-Control-Allow-Origin", origin)
	hdr.Set("Access-Control-Expose-Headers", "Request-Id, WWW-Authenticate")
	if r.Method == http.MethodOptions {
		hdr.Set("Access-Control-Allow-Methods", "POST")
		hdr.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Request-Id")
		hdr.Set("Access-Control-Max-Age", "600")
	}
}

func (h *Handler) originAllowed(origin string) bool {
	for _, o := range h.cfg.AllowedOrigins {
		if o == "*" || o == origin {
			return true
		}
	}
	return false
}
