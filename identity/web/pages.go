package web

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strings"
)

//go:embed templates/*.html
var files embed.FS

// DefaultProduct is the name the pages show when Pages.Product is empty.
const DefaultProduct = "Gatehouse"

// Pages renders the pages. It is safe for concurrent use.
type Pages struct {
	// Product is the name in each page's header and title.
	Product string
	// HSTS, if set, is sent as Strict-Transport-Security.
	HSTS string
	tmpl *template.Template
}

// New parses the embedded templates.
func New(product, hsts string) (*Pages, error) {
	t, err := template.ParseFS(files, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("parsing page templates: %w", err)
	}
	if product == "" {
		product = DefaultProduct
	}
	return &Pages{Product: product, HSTS: hsts, tmpl: t}, nil
}

// page is what every template reads, besides its own data.
type page struct {
	Title, Product, Nonce, Host string
}

// Login is the login form's data.
type Login struct {
	// Action is the URL the form posts to.
	Action string
	// ClientName names the application the user signs in to.
	ClientName string
	// CSRFToken and Pending travel as hidden fields.
	CSRFToken, Pending string
	// Username prefills the username field.
	Username string
	// Error, if set, is shown above the form.
	Error string
}

// Scope is one scope on the consent page.
type Scope struct {
	Name, Description string
}

// Consent is the consent page's data.
type Consent struct {
	Action             string
	ClientName         string
	Username           string
	Scopes             []Scope
	CSRFToken, Pending string
}

// Error is the error page's data: a request that cannot go back to the
// application (an unknown client, a redirect URI not registered).
type Error struct {
	Heading, Message, Detail string
}

// field is a hidden field of the form_post page.
type field struct{ Name, Value string }

// Login renders the login form with status. formActions are the origins,
// besides the page's own, that the form's submission may end up at (the
// application's redirect URI, reached by a redirect after the post).
func (p *Pages) Login(w http.ResponseWriter, r *http.Request, status int, d Login, formActions ...string) {
	p.render(w, r, status, "login.html", "Sign in", d, "'self'", formActions, false)
}

// Consent renders the consent page.
func (p *Pages) Consent(w http.ResponseWriter, r *http.Request, d Consent, formActions ...string) {
	p.render(w, r, http.StatusOK, "consent.html", "Allow access", d, "'self'", formActions, false)
}

// Error renders the error page with status.
func (p *Pages) Error(w http.ResponseWriter, r *http.Request, status int, d Error) {
	p.render(w, r, status, "error.html", d.Heading, d, "'none'", nil, false)
}

// FormPost renders the page of response_mode=form_post (OAuth 2.0 Form
// Post Response Mode): a form of params posted to action by its one inline
// script, or by hand without JavaScript.
func (p *Pages) FormPost(w http.ResponseWriter, r *http.Request, action string, params url.Values) {
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	sort.Strings(names)
	d := struct {
		Action string
		Fields []field
	}{Action: action}
	for _, k := range names {
		for _, v := range params[k] {
			d.Fields = append(d.Fields, field{k, v})
		}
	}
	p.render(w, r, http.StatusOK, "formpost.html", "Signing in", d, "", []string{Origin(action)}, true)
}

// render executes the template name with the page data and d under a fresh
// nonce, and writes it with the page headers.
func (p *Pages) render(w http.ResponseWriter, r *http.Request, status int, name, title string, d any, formSelf string,
	formActions []string, script bool) {
	nonce, err := newNonce()
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	pg := page{Title: title, Product: p.Product, Nonce: nonce, Host: r.Host}
	var buf bytes.Buffer
	err = p.tmpl.ExecuteTemplate(&buf, name, merge(pg, d))
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	PageHeaders(h, p.HSTS)
	h.Set("Content-Security-Policy", csp(nonce, formSelf, formActions, script))
	h.Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// PageHeaders sets the headers every page shares (besides its CSP): no
// caching, no framing, no sniffing, and no referrer to another origin (the
// relying party never learns the URL of a page of ours). The policy is
// same-origin rather than no-referrer: under no-referrer a browser sends
// the forms' posts to ourselves with "Origin: null", which the cross-site
// check must refuse.
func PageHeaders(h http.Header, hsts string) {
	h.Set("Cache-Control", "no-store, no-cache, max-age=0")
	h.Set("Pragma", "no-cache")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	if hsts != "" {
		h.Set("Strict-Transport-Security", hsts)
	}
}

// csp is a page's Content-Security-Policy: nothing but its own inline
// style (and script) by nonce, forms posting to self and formActions, no
// framing.
func csp(nonce, formSelf string, formActions []string, script bool) string {
	var b strings.Builder
	b.WriteString("default-src 'none'; style-src 'nonce-" + nonce + "'; img-src 'self' data:")
	if script {
		b.WriteString("; script-src 'nonce-" + nonce + "'")
	}
	sources := []string{}
	if formSelf != "" {
		sources = append(sources, formSelf)
	}
	for _, o := range formActions {
		if o != "" && !strings.ContainsAny(o, " ;,'") {
			sources = append(sources, o)
		}
	}
	if len(sources) == 0 {
		sources = []string{"'none'"}
	}
	b.WriteString("; form-action " + strings.Join(sources, " "))
	b.WriteString("; frame-ancestors 'none'; base-uri 'none'")
	return b.String()
}

// Origin is the CSP source of an absolute URL: its origin
// (scheme://host[:port]), or for a URI without a host (a native app's
// private scheme, "com.example.app:/cb") its scheme ("com.example.app:").
// "" for anything else.
func Origin(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Scheme == "":
		return ""
	case u.Host == "":
		return u.Scheme + ":"
	}
	return u.Scheme + "://" + u.Host
}

// merge is the data of a template: the page's fields and those of d (a
// struct), in one map.
func merge(pg page, d any) map[string]any {
	m := map[string]any{"Title": pg.Title, "Product": pg.Product, "Nonce": pg.Nonce, "Host": pg.Host}
	v := reflect.ValueOf(d)
	for i := 0; i < v.NumField(); i++ {
		if f := v.Type().Field(i); f.IsExported() {
			m[f.Name] = v.Field(i).Interface()
		}
	}
	return m
}

func newNonce() (string, error) {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
