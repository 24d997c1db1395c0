package integration

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentRefresh sends the same refresh token eight times at once:
// inside the grace window every caller gets the same successor, and the
// family stays usable (DESIGN.md, "Token rules").
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
