//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// client sends the benchmark's requests: one transport with a keep-alive
// connection per worker and instance.
type client struct{ http *http.Client }

func newClient(conns int) *client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = conns, conns
	return &client{http: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// tokenResponse is what the benchmark reads of a token response.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
}

// post sends form to base's path and decodes a 200 answer into out.
func (c *client) post(ctx context.Context, base, path string, form url.Values, user, secret string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(user, secret)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s%s: %s: %s", base, path, resp.Status, body)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(body, out)
}

// login runs the password grant on base.
func (c *client) login(ctx context.Context, d *deployment, base string) (tokenResponse, error) {
	var tok tokenResponse
	err := c.post(ctx, base, "/connect/token", url.Values{"grant_type": {"password"}, "client_id": {appID},
		"username": {username}, "password": {d.password}, "scope": {userScopes}}, "", "", &tok)
	return tok, err
}

// refresh refreshes token on base.
func (c *client) refresh(ctx context.Context, base, token string) (tokenResponse, error) {
	var tok tokenResponse
	err := c.post(ctx, base, "/connect/token", url.Values{"grant_type": {"refresh_token"}, "client_id": {appID},
		"refresh_token": {token}}, "", "", &tok)
	return tok, err
}

// grant is one kind of token request the load sends.
type grant string

const (
	grantClient  grant = "client_credentials"
	grantRefresh grant = "refresh_token"
)

// figure is one measured row.
type figure struct {
	ops      int
	elapsed  time.Duration
	p50, p99 time.Duration
	errors   int
	first    error // the first failure
}

func (f figure) rate() float64 { return float64(f.ops) / f.elapsed.Seconds() }

// measureTokens runs workers for dur against d's instances, round robin
// per request (as a load balancer without stickiness would: a refresh
// chain moves from instance to instance), and returns the figure.
func measureTokens(ctx context.Context, c *client, d *deployment, g grant, workers int, dur time.Duration) (figure, error) {
	// Each worker's chain begins with a login and one refresh, outside the
	// measured window.
	tokens := make([]string, workers)
	if g == grantRefresh {
		for w := range workers {
			tok, err := c.login(ctx, d, d.bases[w%len(d.bases)])
			if err != nil {
				return figure{}, fmt.Errorf("login: %w", err)
			}
			if tok, err = c.refresh(ctx, d.bases[w%len(d.bases)], tok.RefreshToken); err != nil {
				return figure{}, fmt.Errorf("warm-up refresh: %w", err)
			}
			tokens[w] = tok.RefreshToken
		}
	}
	var (
		mu        sync.Mutex
		latencies []time.Duration
		errs      int
		first     error
		wg        sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(dur)
	for w := range workers {
		wg.Go(func() {
			var mine []time.Duration
			for i := w; time.Now().Before(deadline); i++ {
				base := d.bases[i%len(d.bases)]
				began := time.Now()
				var err error
				if g == grantRefresh {
					var tok tokenResponse
					if tok, err = c.refresh(ctx, base, tokens[w]); err == nil {
						tokens[w] = tok.RefreshToken
					}
				} else {
					err = c.post(ctx, base, "/connect/token", url.Values{"grant_type": {"client_credentials"}},
						serviceID, d.serviceSecret, nil)
				}
				if err != nil {
					mu.Lock()
					errs++
					if first == nil {
						first = err
					}
					mu.Unlock()
					if g == grantRefresh {
						return // a broken chain stops its worker
					}
					continue
				}
				mine = append(mine, time.Since(began))
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	f := figure{ops: len(latencies), elapsed: time.Since(start), errors: errs, first: first}
	f.p50, f.p99 = percentile(latencies, 0.50), percentile(latencies, 0.99)
	return f, nil
}

// percentile is the q-quantile of ds (nearest rank); 0 for none. ds is
// sorted in place.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(q*float64(len(ds))+0.5) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}
