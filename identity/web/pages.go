package web

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"
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
	// FormAction, if set, travels as the hidden field "action" (the
	// account page's login).
	FormAction string
	// Passkey, if set, offers a sign-in with a passkey (usernameless).
	Passkey *PasskeyCeremony
}

// PasskeyCeremony is a passkey ceremony a page's script runs: it reads
// Options (the JSON for navigator.credentials.create or get), calls the
// browser, and posts the credential it returns with State to the page's
// passkey form.
type PasskeyCeremony struct {
	Options json.RawMessage
	State   string
	// Name is the name of a passkey being registered.
	Name string
}

// Passkey is one of the user's passkeys on the account page.
type Passkey struct {
	// ID is the credential id, base64url, as the forms send it back.
	ID, Name string
	// Created and LastUsed are dates to show ("" for never).
	Created, LastUsed string
}

// Factor is the second-factor form's data: a code of the user's
// authenticator app, or a recovery code.
type Factor struct {
	Action             string
	ClientName         string
	Username           string
	CSRFToken, Pending string
	// Error, if set, is shown above the form.
	Error string
	// TOTP: the user has an authenticator app (or recovery codes).
	TOTP bool
	// Passkey, if set, offers the user's passkeys.
	Passkey *PasskeyCeremony
}

// Account is the account page's data: the user's second factors and the
// forms that change them.
type Account struct {
	Action, Username, CSRFToken string
	// SecondFactor: the session passed a second factor.
	SecondFactor bool
	// TOTP: an authenticator app is enrolled, since TOTPSince.
	TOTP      bool
	TOTPSince string
	// RecoveryCodesLeft is how many unspent recovery codes the user has.
	RecoveryCodesLeft int
	// Enrolment, if set, is an authenticator app being set up.
	Enrolment *Enrolment
	// RecoveryCodes, if set, are new codes, shown once.
	RecoveryCodes []string
	// Notice and Error, if set, are shown above the page.
	Notice, Error string
	// PasskeysOn: passkeys are available; Passkeys are the user's.
	PasskeysOn bool
	Passkeys   []Passkey
	// PasskeyLimit: the user has as many passkeys as they may.
	PasskeyLimit bool
	// Registration, if set, is a passkey being registered.
	Registration *PasskeyCeremony
	// Verify, if set, offers the user's passkeys to pass a second
	// factor (a session that passed none).
	Verify *PasskeyCeremony
}

// Enrolment is an authenticator app being set up: the QR code of its
// otpauth URI, its key for typing, and the sealed secret the
// confirmation form carries.
type Enrolment struct {
	QRCode   template.HTML
	Key, URI string
	Sealed   string
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

// Device is the device verification page's data (RFC 8628 §3.3): Step
// "enter" asks for the code, "confirm" shows who asks for what with Allow
// and Deny, "done" tells the outcome.
type Device struct {
	Step       string
	Action     string
	UserCode   string
	ClientName string
	Username   string
	Scopes     []Scope
	// MarketAsked says that the device named the market data it asks
	// for (its authorization_details), listed in Market; without it the
	// device asks for all the market data the user holds.
	MarketAsked bool
	Market      []MarketData
	// NotHeld names the market data asked for that the user does not
	// hold ("ASX:depth, NZX:quotes"): the device is refused it.
	NotHeld   string
	CSRFToken string
	Error     string
	Approved  bool
}

// MarketData is a venue and a feed of it on the device verification page.
type MarketData struct {
	Venue, Feed string
	NotHeld     bool // the user does not hold it
}

// Error is the error page's data: a request that cannot go back to the
// application (an unknown client, a redirect URI not registered).
type Error struct {
	Heading, Message, Detail string
}

// LogoutConfirm is the logout confirmation page's data.
type LogoutConfirm struct {
	Action     string
	ClientName string // the application asking, if known
	Username   string
	CSRFToken  string
	// Fields are the request's parameters, carried as hidden fields.
	Fields url.Values
}

// LoggedOut is the logged-out page's data.
type LoggedOut struct {
	// Frames are the front-channel logout URIs to load, each in a hidden
	// iframe (OpenID Connect Front-Channel Logout 1.0).
	Frames []string
	// Redirect, if set, is where the page sends the browser once the
	// frames have loaded, or after Wait at most. It must be a URI the
	// caller checked (a registered post-logout redirect URI): it is
	// written as is, a native app's private scheme included.
	Redirect string
	// Wait bounds how long the page waits for the frames.
	Wait time.Duration
}

// field is a hidden field of the form_post page.
type field struct{ Name, Value string }

// Login renders the login form with status. formActions are the origins,
// besides the page's own, that the form's submission may end up at (the
// application's redirect URI, reached by a redirect after the post).
func (p *Pages) Login(w http.ResponseWriter, r *http.Request, status int, d Login, formActions ...string) {
	p.render(w, r, status, "login.html", "Sign in", d, "'self'", formActions, d.Passkey != nil)
}

// Factor renders the second-factor form; formActions are the origins
// the response may be posted to after it (form_post).
func (p *Pages) Factor(w http.ResponseWriter, r *http.Request, status int, d Factor, formActions ...string) {
	p.render(w, r, status, "factor.html", "Second factor", d, "'self'", formActions, d.Passkey != nil)
}

// Account renders the account page.
func (p *Pages) Account(w http.ResponseWriter, r *http.Request, status int, d Account) {
	p.render(w, r, status, "account.html", "Account security", d, "'self'", nil, d.Registration != nil || d.Verify != nil)
}

// AccountLogin renders the account page's login form.
func (p *Pages) AccountLogin(w http.ResponseWriter, r *http.Request, status int, d Login) {
	d.FormAction = "login"
	p.render(w, r, status, "login.html", "Sign in", d, "'self'", nil, false)
}

// Consent renders the consent page.
func (p *Pages) Consent(w http.ResponseWriter, r *http.Request, d Consent, formActions ...string) {
	p.render(w, r, http.StatusOK, "consent.html", "Allow access", d, "'self'", formActions, false)
}

// Device renders the device verification page with status.
func (p *Pages) Device(w http.ResponseWriter, r *http.Request, status int, d Device) {
	title := "Connect a device"
	p.render(w, r, status, "device.html", title, d, "'self'", nil, false)
}

// Error renders the error page with status.
func (p *Pages) Error(w http.ResponseWriter, r *http.Request, status int, d Error) {
	p.render(w, r, status, "error.html", d.Heading, d, "'none'", nil, false)
}

// LogoutConfirm renders the logout confirmation page.
func (p *Pages) LogoutConfirm(w http.ResponseWriter, r *http.Request, d LogoutConfirm) {
	data := struct {
		Action, ClientName, Username, CSRFToken string
		Fields                                  []field
	}{d.Action, d.ClientName, d.Username, d.CSRFToken, sortedFields(d.Fields)}
	p.render(w, r, http.StatusOK, "logout.html", "Sign out", data, "'self'", nil, false)
}

// LoggedOut renders the logged-out page: the front-channel frames (their
// origins allowed by frame-src), then, with its one script, the redirect.
func (p *Pages) LoggedOut(w http.ResponseWriter, r *http.Request, d LoggedOut) {
	var frameSrc []string
	for _, f := range d.Frames {
		if o := Origin(f); o != "" && !strings.ContainsAny(o, " ;,'") && !slices.Contains(frameSrc, o) {
			frameSrc = append(frameSrc, o)
		}
	}
	data := struct {
		Frames     []string
		Redirect   template.URL
		WaitMillis int64
	}{d.Frames, template.URL(d.Redirect), d.Wait.Milliseconds()}
	p.renderCSP(w, r, http.StatusOK, "loggedout.html", "Signed out", data, func(nonce string) string {
		c := csp(nonce, "", nil, d.Redirect != "")
		if len(frameSrc) > 0 {
			c += "; frame-src " + strings.Join(frameSrc, " ")
		}
		return c
	})
}

// sortedFields are v's fields, sorted by name.
func sortedFields(v url.Values) []field {
	names := make([]string, 0, len(v))
	for k := range v {
		names = append(names, k)
	}
	sort.Strings(names)
	var out []field
	for _, k := range names {
		for _, x := range v[k] {
			out = append(out, field{k, x})
		}
	}
	return out
}

// FormPost renders the page of response_mode=form_post (OAuth 2.0 Form
// Post Response Mode): a form of params posted to action by its one inline
// script, or by hand without JavaScript.
func (p *Pages) FormPost(w http.ResponseWriter, r *http.Request, action string, params url.Values) {
	p.formPost(w, r, "Signing in", "Signing you in…", action, "", []string{Origin(action)}, params)
}

// Repost renders a page that posts params to action, a path of ours, again,
// as FormPost does: from our own page the post is same-site, so it carries
// the SameSite=Lax cookies that a post from another site lacked.
// formActions are the origins the post may be redirected to.
func (p *Pages) Repost(w http.ResponseWriter, r *http.Request, action string, params url.Values, formActions ...string) {
	p.formPost(w, r, "Signing out", "Signing you out…", action, "'self'", formActions, params)
}

func (p *Pages) formPost(w http.ResponseWriter, r *http.Request, title, heading, action, formSelf string, formActions []string,
	params url.Values) {
	d := struct {
		Heading, Action string
		Fields          []field
	}{Heading: heading, Action: action, Fields: sortedFields(params)}
	p.render(w, r, http.StatusOK, "formpost.html", title, d, formSelf, formActions, true)
}

// render executes the template name with the page data and d under a fresh
// nonce, and writes it with the page headers.
func (p *Pages) render(w http.ResponseWriter, r *http.Request, status int, name, title string, d any, formSelf string,
	formActions []string, script bool) {
	p.renderCSP(w, r, status, name, title, d, func(nonce string) string { return csp(nonce, formSelf, formActions, script) })
}

// renderCSP is render with the page's Content-Security-Policy made by
// policy from the page's nonce.
func (p *Pages) renderCSP(w http.ResponseWriter, r *http.Request, status int, name, title string, d any, policy func(nonce string) string) {
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
	h.Set("Content-Security-Policy", policy(nonce))
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

// Origin is the origin of an absolute URL as a browser serializes it
// (scheme://host[:port], the host in lower case, no default port: what a
// page's location.origin says, which OIDC Session Management's
// session_state is computed over, and a CSP source), or for a URI without
// a host (a native app's private scheme, "com.example.app:/cb") its scheme
// ("com.example.app:"). "" for anything else.
func Origin(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Scheme == "":
		return ""
	case u.Host == "":
		return u.Scheme + ":"
	}
	host := strings.ToLower(u.Host)
	switch port := u.Port(); {
	case u.Scheme == "http" && port == "80", u.Scheme == "https" && port == "443":
		host = strings.TrimSuffix(host, ":"+port)
	}
	return u.Scheme + "://" + host
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
