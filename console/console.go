// Package console serves the Gatehouse console: one embedded page, its
// script and style sheet, and a vendored build of oidc-client-ts, with which a
// person signs in (the authorization code flow with PKCE), watches quotes
// over the message gateway, runs queries, places an order after a step-up,
// and sees the session's rights change (docs/console.md).
//
// The package is pure: it knows nothing of Caddy. caddymodule/consolehandler
// makes it the handler gatehouse_console.
//
// Everything the page loads comes from this package: no CDN, no build step,
// nothing fetched at run time. The Content-Security-Policy allows the page's
// own origin, plus the origins of the identity server, the query service and
// the socket where they are elsewhere (Policy).
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
)

//go:embed assets
var assets embed.FS

// OIDCClientVersion is the version of oidc-client-ts in assets/vendor
// (docs/console.md says how to update it).
const OIDCClientVersion = "3.5.0"

// Config is what the page needs to know. Issuer and ClientID are required.
type Config struct {
	// Issuer is the identity server's issuer URL (its discovery document
	// is at Issuer + "/.well-known/openid-configuration").
	Issuer string
	// ClientID is the public OAuth client the console signs in as: the
	// authorization code flow with PKCE and refresh tokens, its redirect
	// URI the console's callback (Base + "callback" on the page's origin).
	ClientID string
	// Scopes are asked at sign-in.
	Scopes []string
	// StepUpScopes are added to Scopes for an order: the identity server
	// asks for a second factor first where they need one.
	StepUpScopes []string
	// Socket is the message gateway: a path on the page's origin
	// ("/ws") or a ws:// or wss:// URL.
	Socket string
	// Subprotocol is the socket's WebSocket sub-protocol.
	Subprotocol string
	// Query is the query service's base: a path on the page's origin
	// ("/query") or an http:// or https:// URL.
	Query string
	// Base is the path the console is served under; it ends with "/".
	Base string
	// Symbols are on the quote board at sign-in (CODE.VENUE).
	Symbols []string
	// Links are listed on the page under the identity server's own (its
	// discovery document, its key set, the account page).
	Links []Link
	// ConnectSrc are more origins the page may fetch from: an identity
	// server whose endpoints are not all on its issuer's origin.
	ConnectSrc []string
}

// Link is a link the page lists.
type Link struct {
	Title string
	// Href is a path or an http or https URL.
	Href string
}

// Handler serves the console under Config.Base.
type Handler struct {
	cfg     Config
	index   []byte // the page, the configuration in it
	files   map[string]file
	connect string   // the CSP's connect-src sources besides 'self' and the socket's
	form    []string // the CSP's form-action sources besides 'self': the issuer's and connect_src origins (the end-session endpoint's)
}

type file struct {
	body        []byte
	contentType string
	etag        string
}

// pageConfig is the configuration as the script reads it from the page.
type pageConfig struct {
	Issuer       string   `json:"issuer"`
	ClientID     string   `json:"clientId"`
	Scopes       string   `json:"scopes"`
	StepUpScopes string   `json:"stepUpScopes"`
	Socket       string   `json:"socket"`
	Subprotocol  string   `json:"subprotocol"`
	Query        string   `json:"query"`
	Base         string   `json:"base"`
	Symbols      []string `json:"symbols"`
	// FormOrigins are the origins besides the page's that the policy lets
	// a form post to: the sign-out checks the end-session endpoint's.
	FormOrigins []string `json:"formOrigins"`
}

// The asset names under Base + "console/".
var assetTypes = map[string]string{
	"console.js":                    "text/javascript; charset=utf-8",
	"console.css":                   "text/css; charset=utf-8",
	"vendor/oidc-client-ts.min.js":  "text/javascript; charset=utf-8",
	"vendor/oidc-client-ts.LICENSE": "text/plain; charset=utf-8",
	"vendor/jwt-decode.LICENSE":     "text/plain; charset=utf-8",
}

var indexTemplate = template.Must(template.ParseFS(assets, "assets/index.html"))

// New checks cfg, fills its defaults and renders the page.
func New(cfg Config) (*Handler, error) {
	if cfg.Base == "" {
		cfg.Base = "/"
	}
	if cfg.Socket == "" {
		cfg.Socket = "/ws"
	}
	if cfg.Subprotocol == "" {
		cfg.Subprotocol = "ServiceJson"
	}
	if cfg.Query == "" {
		cfg.Query = "/query"
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = []string{"openid", "profile", "offline_access", "Service/Market"}
	}
	if len(cfg.Symbols) == 0 {
		cfg.Symbols = []string{"BHP.ASX", "CBA.ASX"}
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg, files: make(map[string]file, len(assetTypes))}
	for name, ct := range assetTypes {
		body, err := fs.ReadFile(assets, "assets/"+name)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(body)
		h.files[name] = file{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
	}
	// The sign-out is a form posted to the identity server's end-session
	// endpoint: on the issuer's origin, or one of connect_src's.
	h.form = origins(append([]string{cfg.Issuer}, cfg.ConnectSrc...))
	pc, err := json.Marshal(pageConfig{
		Issuer: strings.TrimSuffix(cfg.Issuer, "/"), ClientID: cfg.ClientID,
		Scopes: strings.Join(cfg.Scopes, " "), StepUpScopes: strings.Join(cfg.StepUpScopes, " "),
		Socket: cfg.Socket, Subprotocol: cfg.Subprotocol, Query: strings.TrimSuffix(cfg.Query, "/"),
		Base: cfg.Base, Symbols: cfg.Symbols, FormOrigins: h.form,
	})
	if err != nil {
		return nil, err
	}
	var page bytes.Buffer
	data := struct {
		Base, Config, Issuer string
		Links                []Link
	}{cfg.Base, string(pc), strings.TrimSuffix(cfg.Issuer, "/"), cfg.Links}
	if err := indexTemplate.Execute(&page, data); err != nil {
		return nil, err
	}
	h.index = page.Bytes()
	h.connect = strings.Join(origins(append([]string{cfg.Issuer, cfg.Query}, cfg.ConnectSrc...)), " ")
	return h, nil
}

func (c Config) check() error {
	var errs []error
	if !pathOrURL(c.Issuer, "http", "https") || strings.HasPrefix(c.Issuer, "/") {
		errs = append(errs, fmt.Errorf("issuer %q: an absolute http or https URL without user, query or fragment", c.Issuer))
	}
	for _, o := range c.ConnectSrc {
		if u, err := url.Parse(o); err != nil || origin(o) == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil || strings.TrimSuffix(o, "/") != origin(o) {
			errs = append(errs, fmt.Errorf("connect_src %q: an origin, scheme://host[:port]", o))
		}
	}
	if c.ClientID == "" {
		errs = append(errs, errors.New("client_id: required (a public client with the authorization code flow)"))
	}
	if !strings.HasPrefix(c.Base, "/") || !strings.HasSuffix(c.Base, "/") || path.Clean(c.Base+"x") != c.Base+"x" ||
		strings.Trim(c.Base, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._~/-") != "" {
		errs = append(errs, fmt.Errorf("base %q: a clean path of letters, digits and ._~- that starts and ends with /", c.Base))
	}
	// openid for the sign-in's ID token (the sign-out's hint), and
	// offline_access for the refresh token every renewal needs.
	for _, need := range []string{"openid", "offline_access"} {
		if !slices.Contains(c.Scopes, need) {
			errs = append(errs, fmt.Errorf("scopes: %s is needed (the console renews with a refresh token and signs out with the ID token)", need))
		}
	}
	if !pathOrURL(c.Socket, "ws", "wss") {
		errs = append(errs, fmt.Errorf("socket %q: a path or a ws:// or wss:// URL", c.Socket))
	}
	if !pathOrURL(c.Query, "http", "https") {
		errs = append(errs, fmt.Errorf("query %q: a path or an http:// or https:// URL", c.Query))
	}
	if !token(c.Subprotocol) {
		errs = append(errs, fmt.Errorf("subprotocol %q: an HTTP token", c.Subprotocol))
	}
	for _, s := range append(append([]string{}, c.Scopes...), c.StepUpScopes...) {
		if s == "" || strings.ContainsAny(s, " \"\\") {
			errs = append(errs, fmt.Errorf("scope %q: no spaces, quotes or backslashes", s))
		}
	}
	for _, l := range c.Links {
		if l.Title == "" || !pathOrURL(l.Href, "http", "https") {
			errs = append(errs, fmt.Errorf("link %q %q: a title and a path or an http or https URL", l.Title, l.Href))
		}
	}
	for _, s := range c.Symbols {
		if _, err := symbolVenue(s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// symbolVenue is the venue of a symbol CODE.VENUE: its code 1 to 12 of A-Z
// and 0-9, its venue one entitle accepts.
func symbolVenue(s string) (string, error) {
	code, venue, ok := strings.Cut(s, ".")
	if !ok || code == "" || len(code) > 12 || strings.Trim(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" {
		return "", fmt.Errorf("symbol %q: CODE.VENUE, the code of A-Z and 0-9", s)
	}
	if !entitle.ValidVenue(venue) {
		return "", fmt.Errorf("symbol %q: %q is not a venue (1 to 16 of A-Z and 0-9)", s, venue)
	}
	return venue, nil
}

func pathOrURL(s string, schemes ...string) bool {
	if strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//") {
		u, err := url.Parse(s)
		return err == nil && u.RawQuery == "" && u.Fragment == "" && u.Path == s
	}
	u, err := url.Parse(s)
	return err == nil && slices.Contains(schemes, u.Scheme) && u.Host != "" && u.User == nil && u.RawQuery == "" && u.Fragment == ""
}

func token(s string) bool {
	return s != "" && strings.Trim(s, "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") == ""
}

// origin is the origin of an absolute URL, "" for a path.
func origin(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// origins are the origins of the absolute URLs among urls, each once, in
// their order.
func origins(urls []string) []string {
	var out []string
	for _, u := range urls {
		if o := origin(u); o != "" && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

// Policy is the Content-Security-Policy of the console's responses to r:
// everything from the page's own origin, nothing inline, no frames; the
// identity server's and the query service's origins for fetch where they
// are elsewhere, and the socket's origin: its URL's, or for a path the
// request's host under ws: and wss: (a TLS-terminating proxy in front
// leaves the request without TLS while the page is https).
func (h *Handler) Policy(r *http.Request) string {
	connect := "'self'"
	if h.connect != "" {
		connect += " " + h.connect
	}
	if o := origin(h.cfg.Socket); o != "" {
		connect += " " + o
	} else if host := r.Host; hostOK(host) {
		connect += " ws://" + host + " wss://" + host
	}
	return "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src " + connect + "; form-action 'self' " + strings.Join(h.form, " ") + "; frame-src 'none'; frame-ancestors 'none'; " +
		"base-uri 'none'; object-src 'none'"
}

// hostOK says whether a Host header may go into the policy: a host name
// or address and a port, nothing that could end a directive.
func hostOK(host string) bool {
	return host != "" && len(host) <= 255 &&
		strings.Trim(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") == ""
}

// Serve answers r when its path is the console's (the page, its callback,
// an asset) and says whether it did; any other path is left to the caller.
func (h *Handler) Serve(w http.ResponseWriter, r *http.Request) bool {
	p := r.URL.Path
	if !strings.HasPrefix(p, h.cfg.Base) {
		return false
	}
	rest := p[len(h.cfg.Base):]
	var f file
	switch {
	case rest == "" || rest == "callback":
		f = file{body: h.index, contentType: "text/html; charset=utf-8"}
	case strings.HasPrefix(rest, "console/"):
		var ok bool
		if f, ok = h.files[strings.TrimPrefix(rest, "console/")]; !ok {
			return false
		}
	default:
		return false
	}
	hd := w.Header()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return true
	}
	hd.Set("Content-Security-Policy", h.Policy(r))
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Content-Type", f.contentType)
	if f.etag == "" {
		// The page: never cached, for its configuration changes with a
		// reload and its URL carries the code of a sign-in.
		hd.Set("Cache-Control", "no-store")
	} else {
		hd.Set("Cache-Control", "no-cache")
		hd.Set("ETag", f.etag)
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
	return true
}
