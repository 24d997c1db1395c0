// Package iqengine is the query service's iq engine: it hands each
// statement, re-printed as canonical IQL by the handler, to the platform's
// own query service (zenith-protocol.md, "Query service (IQ)") with the
// caller's token and Request-Id, and checks the answer before it is passed
// back. It imports no database driver and nothing of Caddy.
package iqengine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// Defaults of Config.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultMaxAnswerBytes = 64 << 20
	DefaultMaxIdleConns   = 16
	maxRefusalBodyBytes   = 4 << 10
)

// Config configures the engine.
type Config struct {
	// URL is the upstream's base URL; statements go to URL + "/query".
	// Required: http or https, no user info, query or fragment.
	URL string
	// Catalog is the upstream's tables and columns, configured (the
	// upstream lists its tables but not their columns' types).
	Catalog sqlgen.Catalog
	// Timeout bounds one upstream request, answer included. Default
	// DefaultTimeout.
	Timeout time.Duration
	// MaxAnswerBytes bounds an answer. Default DefaultMaxAnswerBytes.
	MaxAnswerBytes int64
	// Client is the HTTP client; nil builds one (no proxy from the
	// environment, no redirects followed: a redirect is a failure).
	Client *http.Client
}

// Validate checks cfg and changes nothing.
func (c *Config) Validate() error {
	var errs []error
	// The errors quote the URL without its user info, query and fragment
	// (shownURL), or not at all when it does not parse.
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "" || err != nil:
		errs = append(errs, errors.New("the upstream URL is not a URL"))
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		errs = append(errs, fmt.Errorf("upstream URL %q: http(s)://host[:port][/path] needed", shownURL(u)))
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		errs = append(errs, fmt.Errorf("upstream URL %q: no user info, query or fragment", shownURL(u)))
	}
	if len(c.Catalog.Tables) == 0 {
		errs = append(errs, errors.New("no table in the catalog"))
	}
	for _, t := range c.Catalog.Tables {
		if len(t.Columns) == 0 {
			errs = append(errs, fmt.Errorf("table %q: no column", t.Name))
		}
	}
	if c.Timeout < 0 || c.MaxAnswerBytes < 0 {
		errs = append(errs, errors.New("a negative timeout or answer bound"))
	}
	return errors.Join(errs...)
}

// Engine is the iq engine: a queryproxy.Forwarder. Safe for concurrent
// use.
type Engine struct {
	cfg      Config
	endpoint string
	client   *http.Client
}

// New builds the engine cfg configures.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxAnswerBytes == 0 {
		cfg.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	client := cfg.Client
	if client == nil {
		client = &http.Client{
			Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: DefaultMaxIdleConns, IdleConnTimeout: 90 * time.Second,
				DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext, TLSHandshakeTimeout: 10 * time.Second},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return &Engine{cfg: cfg, endpoint: strings.TrimSuffix(cfg.URL, "/") + "/query", client: client}, nil
}

// Catalog is the configured catalog.
func (e *Engine) Catalog(context.Context) (sqlgen.Catalog, error) { return e.cfg.Catalog, nil }

// Forward POSTs the statement to the upstream's /query (text/plain) with
// the caller's bearer token and Request-Id, and checks its answer: a
// select's must be {"Columns": {...}, "Rows": [...]} with exactly the
// asked columns and at most MaxRows rows; an insert's {"RowsAffected": n}.
// Failures: ErrTimeout (the time limit), ErrCanceled (the caller went
// away), ErrUnavailable (no connection, or the upstream's 502/503/504),
// *queryproxy.UpstreamError (its 4xx), ErrBadGateway (anything else).
func (e *Engine) Forward(ctx context.Context, req queryproxy.ForwardRequest) (*queryproxy.ForwardResult, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, e.endpoint, strings.NewReader(req.IQL))
	if err != nil {
		return nil, fmt.Errorf("iq: %w: %w", queryproxy.ErrBadGateway, err)
	}
	hr.Header.Set("Content-Type", "text/plain; charset=utf-8")
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("Authorization", "Bearer "+req.Token)
	if req.RequestID != "" {
		hr.Header.Set("Request-Id", req.RequestID)
	}
	resp, err := e.client.Do(hr)
	if err != nil {
		return nil, transportError(ctx, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusBadGateway, resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusGatewayTimeout:
		return nil, fmt.Errorf("iq: upstream %s: %w", resp.Status, queryproxy.ErrUnavailable)
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return nil, &queryproxy.UpstreamError{Status: resp.StatusCode, Code: refusalCode(resp.Body)}
	default:
		return nil, fmt.Errorf("iq: upstream %s: %w", resp.Status, queryproxy.ErrBadGateway)
	}
	if mt := resp.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(mt), "application/json") {
		return nil, fmt.Errorf("iq: upstream answered %q: %w", mt, queryproxy.ErrBadGateway)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, e.cfg.MaxAnswerBytes+1))
	if err != nil {
		return nil, transportError(ctx, err)
	}
	if int64(len(body)) > e.cfg.MaxAnswerBytes {
		return nil, fmt.Errorf("iq: answer over %d bytes: %w", e.cfg.MaxAnswerBytes, queryproxy.ErrBadGateway)
	}
	if req.Write {
		var w struct{ RowsAffected *int64 }
		if err := json.Unmarshal(body, &w); err != nil || w.RowsAffected == nil || *w.RowsAffected < 0 {
			return nil, fmt.Errorf("iq: an insert's answer is not {\"RowsAffected\": n}: %w", queryproxy.ErrBadGateway)
		}
		return &queryproxy.ForwardResult{RowsAffected: *w.RowsAffected}, nil
	}
	if err := checkResult(body, req.Columns, req.MaxRows); err != nil {
		return nil, err
	}
	return &queryproxy.ForwardResult{Body: body}, nil
}

// checkResult checks a select's answer: one JSON object with Columns
// naming exactly the asked columns (Index their select-list order) and
// Rows, arrays of that many values, at most maxRows of them.
func checkResult(body []byte, want []sqlgen.Column, maxRows int) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var res struct {
		Columns map[string]struct {
			Index *int
			Type  string
		}
		Rows []json.RawMessage
	}
	if err := d.Decode(&res); err != nil || d.More() || res.Columns == nil || res.Rows == nil {
		return fmt.Errorf("iq: the answer is not {\"Columns\", \"Rows\"}: %w", queryproxy.ErrBadGateway)
	}
	if len(res.Columns) != len(want) {
		return fmt.Errorf("iq: the answer has %d columns, %d asked: %w", len(res.Columns), len(want), queryproxy.ErrBadGateway)
	}
	for i, c := range want {
		got, ok := res.Columns[c.Name]
		if !ok || got.Index == nil || *got.Index != i {
			return fmt.Errorf("iq: the answer's column %q is missing or out of place: %w", c.Name, queryproxy.ErrBadGateway)
		}
	}
	if maxRows > 0 && len(res.Rows) > maxRows {
		return fmt.Errorf("iq: %d rows: %w", len(res.Rows), queryproxy.ErrTooManyRows)
	}
	for i, raw := range res.Rows {
		var row []json.RawMessage
		if err := json.Unmarshal(raw, &row); err != nil || len(row) != len(want) {
			return fmt.Errorf("iq: row %d is not an array of %d values: %w", i, len(want), queryproxy.ErrBadGateway)
		}
		for _, v := range row {
			if k := bytes.TrimSpace(v); len(k) > 0 && (k[0] == '{' || k[0] == '[') {
				return fmt.Errorf("iq: row %d holds a nested value: %w", i, queryproxy.ErrBadGateway)
			}
		}
	}
	return nil
}

// refusalCode reads the code of an upstream refusal's body, when it is
// {"Error": {"Code": ...}}; "" otherwise.
func refusalCode(r io.Reader) string {
	var b struct{ Error struct{ Code string } }
	if json.NewDecoder(io.LimitReader(r, maxRefusalBodyBytes)).Decode(&b) != nil || len(b.Error.Code) > 64 {
		return ""
	}
	return b.Error.Code
}

// transportError classifies a failed request: the time limit, the
// caller gone, or the upstream unreachable.
func transportError(ctx context.Context, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("iq: %w: %w", queryproxy.ErrTimeout, err)
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("iq: %w: %w", queryproxy.ErrCanceled, err)
	}
	return fmt.Errorf("iq: %w: %w", queryproxy.ErrUnavailable, err)
}

var _ queryproxy.Forwarder = (*Engine)(nil)

// shownURL is u as an error may quote it: without user info, query or
// fragment, any of which may hold a secret.
func shownURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = nil, "", false, "", ""
	return c.String()
}
