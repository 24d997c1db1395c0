package logout

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestNotifierRetries: a delivery is tried again after a 5xx and stops at
// the first 2xx; a 400 (the RP refused the token) is not tried again; a
// receiver that never answers costs Attempts timeouts, no more.
func TestNotifierRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		statuses []int // answers in order; the last repeats
		want     int32 // requests seen
	}{
		{"503 then 200", []int{503, 503, 200}, 3},
		{"200 at once", []int{200}, 1},
		{"400 is final", []int{400}, 1},
		{"always 500", []int{500}, 3},
		{"429 is retried", []int{429, 204}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			done := make(chan struct{}, 8)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				i := int(n.Add(1)) - 1
				if r.PostFormValue("logout_token") != "tok" {
					w.WriteHeader(400)
				} else {
					w.WriteHeader(tc.statuses[min(i, len(tc.statuses)-1)])
				}
				done <- struct{}{}
			}))
			defer srv.Close()
			nt := NewNotifier(NotifierConfig{Attempts: 3, Backoff: 10 * time.Millisecond, Timeout: time.Second})
			if !nt.Notify(srv.URL, "rp", "jti-1", "tok") {
				t.Fatal("Notify refused")
			}
			for range tc.want {
				select {
				case <-done:
				case <-time.After(5 * time.Second):
					t.Fatalf("only %d requests", n.Load())
				}
			}
			time.Sleep(100 * time.Millisecond) // no further attempt comes
			nt.Close()
			if got := n.Load(); got != tc.want {
				t.Errorf("%d requests, want %d", got, tc.want)
			}
		})
	}
}

// TestNotifierCloseIsBounded: Close with a receiver that hangs and a full
// queue returns at once, and Notify after Close is refused.
func TestNotifierCloseIsBounded(t *testing.T) {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang)
	nt := NewNotifier(NotifierConfig{Workers: 1, Queue: 2, Attempts: 5, Timeout: time.Minute, Backoff: time.Minute})
	accepted := 0
	for range 5 {
		if nt.Notify(srv.URL, "rp", "j", "tok") {
			accepted++
		}
	}
	if accepted > 3 {
		t.Errorf("the bounded queue took %d", accepted)
	}
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	nt.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v", d)
	}
	if nt.Notify(srv.URL, "rp", "j", "tok") {
		t.Error("Notify after Close accepted")
	}
}
