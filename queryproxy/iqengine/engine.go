package iqengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// Defaults of Config.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultMaxAnswerBytes = 64 << 20
	DefaultMaxIdleConns   = 16
	DefaultMaxConns       = 32
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
	// Timeout bounds one upstream request, answer included: a select's
	// answer is read as the caller reads the result, so the caller's
	// reading counts. Default DefaultTimeout.
	Timeout time.Duration
	// MaxAnswerBytes bounds an answer. Default DefaultMaxAnswerBytes.
	MaxAnswerBytes int64
	// MaxConns bounds the connections to the upstream, so the requests
	// in flight to it: a request beyond it waits for one, within its time
	// limit. Default DefaultMaxConns. Ignored with Client.
	MaxConns int
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
	if c.Timeout < 0 || c.MaxAnswerBytes < 0 || c.MaxConns < 0 {
		errs = append(errs, errors.New("a negative timeout, answer bound or connection bound"))
	}
	return errors.Join(errs...)
}

// Engine is the iq engine: an engine.Forwarder. Safe for concurrent
// use.
type Engine struct {
	cfg        Config
	endpoint   string
	client     *http.Client
	pingClient *http.Client // the readiness probe's: one connection, apart from the statements'
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
	if cfg.MaxConns == 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	client := cfg.Client
	if client == nil {
		client = &http.Client{
			Transport: &http.Transport{Proxy: nil, MaxConnsPerHost: cfg.MaxConns,
				MaxIdleConnsPerHost: min(DefaultMaxIdleConns, cfg.MaxConns), IdleConnTimeout: 90 * time.Second,
				DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext, TLSHandshakeTimeout: 10 * time.Second},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	pingClient := cfg.Client
	if pingClient == nil {
		pingClient = &http.Client{
			Transport: &http.Transport{Proxy: nil, MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, IdleConnTimeout: 90 * time.Second,
				DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext, TLSHandshakeTimeout: 10 * time.Second},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return &Engine{cfg: cfg, endpoint: strings.TrimSuffix(cfg.URL, "/") + "/query", client: client, pingClient: pingClient}, nil
}

// MaxConns is the connections to the upstream at once (0 with Config.Client, whose
// bound is its own): the query handler keeps any one user to a share of them
// (engine.Pooled).
func (e *Engine) MaxConns() int {
	if e.cfg.Client != nil {
		return 0
	}
	return e.cfg.MaxConns
}

// Catalog is the configured catalog.
func (e *Engine) Catalog(context.Context) (sqlgen.Catalog, error) { return e.cfg.Catalog, nil }

// Forward POSTs the statement to the upstream's /query (text/plain) with
// the caller's bearer token and Request-Id, and checks its answer. An
// insert's must be {"RowsAffected": n} (insert). A select's, {"Rows":
// [...], "Columns": {...}} in either order, is read as it arrives
// (answer): the result has the rows it reads, each an array of one plain
// value per asked column, and the asked columns (names and types from
// the catalog), never the upstream's bytes; so a result's memory is a
// row's, whatever the answer's size. Failures: ErrTimeout (the time
// limit), ErrCanceled (the caller went away), ErrUnavailable (no
// connection, or the upstream's 502/503/504), *engine.UpstreamError
// (its 4xx), ErrBadGateway (anything else); a select's answer may fail
// the same ways while its rows are read.
func (e *Engine) Forward(ctx context.Context, req engine.ForwardRequest) (*engine.ForwardResult, error) {
	if req.Write {
		return e.insert(ctx, req)
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	resp, err := e.post(ctx, req)
	if err != nil {
		cancel()
		return nil, err
	}
	a := &answer{ctx: ctx, cancel: cancel, body: resp.Body, cols: req.Columns, vals: make([]any, len(req.Columns))}
	a.dec.Reset(&limitedBody{r: resp.Body, left: e.cfg.MaxAnswerBytes}, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(false))
	if tok, err := a.dec.ReadToken(); err != nil || tok.Kind() != '{' {
		a.fail(err, "not a JSON object")
		a.Close()
		return nil, a.err
	}
	return &engine.ForwardResult{Rows: a}, nil
}

// insert forwards an insert. The caller going away cancels it only until
// the request is written whole; from then it runs to its answer or the
// time limit, since the upstream may apply it. An error that leaves open
// whether it did wraps engine.ErrFateUnknown: the request was written
// whole (httptrace's WroteRequest), and then the connection or the time
// limit failed, or the answer was a 5xx (a proxy in front of the upstream
// answers 502, 503 or 504 while the upstream may still run it) or a 200
// that is not {"RowsAffected": n}. A request not written whole (a refused
// dial, a failed TLS handshake) or refused (a 4xx) applied nothing.
func (e *Engine) insert(caller context.Context, req engine.ForwardRequest) (*engine.ForwardResult, error) {
	var sent atomic.Bool
	ctx, cancel := context.WithTimeout(context.WithoutCancel(caller), e.cfg.Timeout)
	defer cancel()
	stop := contain.ContextAfterFunc(caller, nil, "query.iq", func() {
		if !sent.Load() {
			cancel()
		}
	})
	defer stop()
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(w httptrace.WroteRequestInfo) {
		if w.Err == nil {
			sent.Store(true)
		}
	}})
	unknown := func(err error) error { return fmt.Errorf("%w (%w)", err, engine.ErrFateUnknown) }
	resp, err := e.post(ctx, req)
	if err != nil {
		_, isUpstream := errors.AsType[*engine.UpstreamError](err)
		switch {
		case isUpstream:
		case sent.Load():
			err = unknown(err)
		}
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBodyBytes+1))
	if err != nil {
		return nil, unknown(transportError(ctx, err))
	}
	var w struct{ RowsAffected *int64 }
	if len(body) > maxRefusalBodyBytes || json.Unmarshal(body, &w) != nil || w.RowsAffected == nil || *w.RowsAffected < 0 {
		return nil, unknown(fmt.Errorf("iq: an insert's answer is not {\"RowsAffected\": n}: %w", engine.ErrBadGateway))
	}
	return &engine.ForwardResult{RowsAffected: *w.RowsAffected}, nil
}

// post sends the statement and returns the upstream's 200 answer, whose
// Content-Type is JSON; any other status is the error Forward documents.
func (e *Engine) post(ctx context.Context, req engine.ForwardRequest) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, e.endpoint, strings.NewReader(req.IQL))
	if err != nil {
		return nil, fmt.Errorf("iq: %w: %w", engine.ErrBadGateway, err)
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
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusBadGateway, resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusGatewayTimeout:
		resp.Body.Close()
		return nil, fmt.Errorf("iq: upstream %s: %w", resp.Status, engine.ErrUnavailable)
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		defer resp.Body.Close()
		return nil, &engine.UpstreamError{Status: resp.StatusCode, Code: refusalCode(resp.Body)}
	default:
		resp.Body.Close()
		return nil, fmt.Errorf("iq: upstream %s: %w", resp.Status, engine.ErrBadGateway)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		resp.Body.Close()
		return nil, fmt.Errorf("iq: upstream answered %q: %w", resp.Header.Get("Content-Type"), engine.ErrBadGateway)
	}
	return resp, nil
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
		return fmt.Errorf("iq: %w: %w", engine.ErrTimeout, err)
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("iq: %w: %w", engine.ErrCanceled, err)
	}
	return fmt.Errorf("iq: %w: %w", engine.ErrUnavailable, err)
}

var _ engine.Forwarder = (*Engine)(nil)

// shownURL is u as an error may quote it: without user info, query or
// fragment, any of which may hold a secret.
func shownURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = nil, "", false, "", ""
	return c.String()
}

// Ping checks that the upstream answers HTTP at all (any status), for a readiness
// probe: a GET of its base URL.
func (e *Engine) Ping(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.cfg.URL, nil)
	if err != nil {
		return err
	}
	// A client of its own: the statements' connections (MaxConns) may all be in
	// use, and a probe must not wait for one.
	resp, err := e.pingClient.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	return resp.Body.Close()
}
