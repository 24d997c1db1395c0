package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentRefresh sends the same refresh token eight times at once:
// inside the grace window every caller gets the same successor, and the
// family stays usable (docs/design.md, "Token rules").
func TestConcurrentRefresh(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	parent := g.PasswordGrant(t, "demo", "demo")

	const callers = 8
	type result struct {
		status int
		body   []byte
		err    error
	}
	endpoint := g.TokenEndpoint(t)
	form := url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {parent.RefreshToken},
		"client_id":     {publicClient},
	}.Encode()
	results := make([]result, callers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range callers {
		req := mustRequest(t, http.MethodPost, endpoint, strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		wg.Go(func() {
			<-start
			resp, err := g.Client.Do(req)
			if err != nil {
				results[i].err = err
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			results[i] = result{resp.StatusCode, body, err}
		})
	}
	close(start)
	wg.Wait()

	var successor string
	for i, r := range results {
		if r.err != nil {
			t.Errorf("caller %d: %v", i, r.err)
			continue
		}
		if r.status != http.StatusOK {
			t.Errorf("caller %d: status %d: %s", i, r.status, r.body)
			continue
		}
		tok := decodeToken(t, &http.Response{StatusCode: r.status}, r.body)
		switch {
		case tok.RefreshToken == "" || tok.RefreshToken == parent.RefreshToken:
			t.Errorf("caller %d: the refresh token was not rotated", i)
		case successor == "":
			successor = tok.RefreshToken
		case tok.RefreshToken != successor:
			t.Errorf("caller %d got a different successor than caller 0's", i)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// The family was not revoked by the concurrent callers.
	next := g.Refresh(t, successor)
	if next.RefreshToken == "" || next.RefreshToken == successor {
		t.Error("the shared successor did not refresh")
	}
}

// TestParallelGuessesLockThePair sends a burst of wrong passwords for one
// user from one address at once, then the right one: the burst gets no
// more tries than sequential guesses would (each answer is invalid_grant,
// or temporarily_unavailable for what exceeds the address's share of the
// hash slots), and the right password is refused afterwards: the pair is
// locked. The lockout counter shows it.
func TestParallelGuessesLockThePair(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	const guesses = 20
	endpoint := g.TokenEndpoint(t)
	form := func(password string) string {
		return url.Values{"grant_type": {"password"}, "username": {"trader"}, "password": {password}, "client_id": {publicClient}}.Encode()
	}
	g.AddSecret("guess-not-the-password")
	codes := make([]string, guesses)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range guesses {
		req := mustRequest(t, http.MethodPost, endpoint, strings.NewReader(form("guess-not-the-password")))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		wg.Go(func() {
			<-start
			resp, err := g.Client.Do(req)
			if err != nil {
				codes[i] = err.Error()
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			var e errorResponse
			_ = json.Unmarshal(body, &e)
			codes[i] = fmt.Sprintf("%d %s", resp.StatusCode, e.Error)
		})
	}
	close(start)
	wg.Wait()
	for i, c := range codes {
		if c != "400 invalid_grant" && c != "503 temporarily_unavailable" {
			t.Errorf("guess %d: %s", i, c)
		}
	}
	resp, body := g.PostToken(t, url.Values{"grant_type": {"password"}, "username": {"trader"}, "password": {"trader"}, "client_id": {publicClient}}, "", "")
	if e := decodeError(t, resp, body); resp.StatusCode != http.StatusBadRequest || e.Error != "invalid_grant" {
		t.Fatalf("the right password after the burst: %d %s", resp.StatusCode, body)
	}
	if n := metricValue(scrapeMetrics(t, g), "gatehouse_lockouts_total"); n != 1 {
		t.Errorf("gatehouse_lockouts_total = %v, want 1", n)
	}
}
