package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// requestTimeout bounds one request, so a stuck server fails the run
// instead of hanging it.
const requestTimeout = 30 * time.Second

// target sends the benchmark's requests: HTTP/1.1 with keep-alive over
// loopback, through one transport that keeps a connection per worker.
type target struct {
	client *http.Client
	base   string
}

func newTarget(base string, c int) *target {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        c,
		MaxIdleConnsPerHost: c,
		MaxConnsPerHost:     c,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	return &target{client: &http.Client{Transport: tr, Timeout: requestTimeout}, base: base}
}

// post sends form to path and returns the body of a 200 answer. Any other
// status is an error that carries the status and the start of the body (an
// OAuth error body: no credentials).
func (t *target) post(ctx context.Context, path, form, authorization string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.base+path, strings.NewReader(form))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("reading answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("POST %s: HTTP %d: %.200s", path, resp.StatusCode, body)
	}
	return body, nil
}

// basicAuth is a client_secret_basic Authorization value (RFC 6749 §2.3.1:
// id and secret form-encoded, then Base64).
func basicAuth(id, secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(secret)))
}
