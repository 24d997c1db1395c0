package identity

import (
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/tokens"
)

// The browser clients of the tests.
const (
	spaRedirect = "http://127.0.0.1/cb"
	webRedirect = "https://web.example/cb"
	verifier    = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk" // RFC 7636 Appendix B
)

// withBrowserClients adds the browser flows' clients: spa (public, code
// with PKCE), web (confidential, every response type, consent) and plain
// (public, may use plain PKCE).
func withBrowserClients(c *Config) {
	c.Clients = append(c.Clients,
		clients.Config{
			ID: "spa", Name: "Single Page", Public: true,
			GrantTypes:   []string{oauth.GrantAuthorizationCode, oauth.GrantRefreshToken},
			Scopes:       []string{"openid", "profile", "email", "offline_access", "Service/Market"},
			RedirectURIs: []string{spaRedirect, "https://spa.example/cb?tenant=a"},
		},
		clients.Config{
			ID: "web", Name: "Web <App>", SecretHashes: [][]byte{sha("web-secret")},
			GrantTypes:     []string{oauth.GrantAuthorizationCode, oauth.GrantImplicit, oauth.GrantRefreshToken},
			Scopes:         []string{"openid", "profile", "email", "offline_access", "Service/Market"},
			RedirectURIs:   []string{webRedirect},
			RequireConsent: true,
		},
		clients.Config{
			ID: "plain", Public: true, AllowPlainPKCE: true,
			GrantTypes:   []string{oauth.GrantAuthorizationCode},
			Scopes:       []string{"openid", "Service/Market"},
			RedirectURIs: []string{spaRedirect},
		},
	)
}

// browser drives the server's pages as a browser would: it keeps cookies
// and sends the headers of a same-origin form post.
type browser struct {
	t   *testing.T
	f   *fixture
	jar *cookiejar.Jar
}

func newBrowser(t *testing.T, f *fixture) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, f: f, jar: jar}
}

// page is a response of the server to the browser.
type page struct {
	status   int
	header   http.Header
	body     string
	location *url.URL
}

// do sends req with the browser's cookies and keeps those set.
func (b *browser) do(req *http.Request) page {
	b.t.Helper()
	return b.send(req, func(*http.Cookie) bool { return true })
}

// send is do with the cookies that sends chooses (a browser sends no
// SameSite=Lax cookie with a cross-site POST). Safe from goroutines.
func (b *browser) send(req *http.Request, sends func(*http.Cookie) bool) page {
	b.t.Helper()
	for _, c := range b.jar.Cookies(req.URL) {
		if sends(c) {
			req.AddCookie(c)
		}
	}
	rec := httptest.NewRecorder()
	b.f.srv.ServeHTTP(rec, req)
	res := rec.Result()
	b.jar.SetCookies(req.URL, res.Cookies())
	raw, _ := io.ReadAll(res.Body)
	p := page{status: res.StatusCode, header: res.Header, body: string(raw)}
	if loc := res.Header.Get("Location"); loc != "" {
		u, err := url.Parse(loc)
		if err != nil {
			b.t.Errorf("Location %q: %v", loc, err)
		}
		p.location = u
	}
	return p
}

// authorize opens the authorization endpoint with params.
func (b *browser) authorize(params url.Values) page {
	b.t.Helper()
	return b.do(httptest.NewRequest(http.MethodGet, testIssuer+PathAuthorize+"?"+params.Encode(), nil))
}

// post posts a form as a same-origin page of the issuer does.
func (b *browser) post(path string, form url.Values, headers ...string) page {
	b.t.Helper()
	req := httptest.NewRequest(http.MethodPost, testIssuer+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", testIssuer)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	return b.do(req)
}

var hiddenField = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// fields are the hidden fields of a page's form.
func (p page) fields() url.Values {
	v := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(p.body, -1) {
		v.Set(m[1], html.UnescapeString(m[2]))
	}
	return v
}

// login submits the login form of p with the user's credentials.
func (b *browser) login(p page, user, password string) page {
	b.t.Helper()
	if !strings.Contains(p.body, `action="/connect/login"`) {
		b.t.Fatalf("not the login form: %d %s", p.status, p.body)
	}
	form := p.fields()
	form.Set("username", user)
	form.Set("password", password)
	return b.post(PathLogin, form)
}

// consent answers the consent form of p.
func (b *browser) consent(p page, decision string) page {
	b.t.Helper()
	if !strings.Contains(p.body, `action="/connect/consent"`) {
		b.t.Fatalf("not the consent page: %d %s", p.status, p.body)
	}
	form := p.fields()
	form.Set("decision", decision)
	return b.post(PathConsent, form)
}

// codeRequest is an authorization request of spa for a code with PKCE.
func codeRequest(extra ...string) url.Values {
	v := form("response_type", "code", "client_id", "spa", "redirect_uri", spaRedirect,
		"scope", "openid profile offline_access", "state", "st-1", "nonce", "n-1",
		"code_challenge", tokens.S256Challenge(verifier), "code_challenge_method", "S256")
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] == "" {
			v.Del(extra[i])
		} else {
			v.Set(extra[i], extra[i+1])
		}
	}
	return v
}

// result reads the parameters of a redirect back to the client: its query
// or its fragment.
func (p page) result(t *testing.T, fragment bool) url.Values {
	t.Helper()
	if p.location == nil {
		t.Fatalf("no redirect: %d %s", p.status, p.body)
	}
	raw := p.location.RawQuery
	if fragment {
		raw = p.location.Fragment
	}
	v, err := url.ParseQuery(raw)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// exchange redeems a code at the token endpoint.
func (f *fixture) exchange(clientID, code, redirectURI, verifier string, mods ...func(*http.Request)) response {
	f.t.Helper()
	v := form("grant_type", "authorization_code", "client_id", clientID, "code", code, "redirect_uri", redirectURI,
		"code_verifier", verifier)
	for k, vs := range v {
		if vs[0] == "" {
			delete(v, k)
		}
	}
	return f.post(v, mods...)
}

// loggedIn is a browser logged in as demo through spa's code flow, and the
// code it got.
func loggedIn(t *testing.T, f *fixture) (*browser, string) {
	t.Helper()
	b := newBrowser(t, f)
	res := b.login(b.authorize(codeRequest()), "demo", "demo-pw")
	v := res.result(t, false)
	if v.Get("code") == "" {
		t.Fatalf("no code: %d %v %s", res.status, v, res.body)
	}
	return b, v.Get("code")
}

// crossSitePost posts form to path as a relying party's page on another
// site makes the browser do it: Origin and Sec-Fetch-Site say so, and the
// SameSite=Lax session cookies are not sent (only SameSite=None cookies
// travel with a cross-site POST).
func (b *browser) crossSitePost(path string, form url.Values, origin string) page {
	b.t.Helper()
	req := httptest.NewRequest(http.MethodPost, testIssuer+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	return b.send(req, func(c *http.Cookie) bool { return c.Name != "gatehouse.session" && c.Name != "gatehouse.browser" })
}

// resubmit submits p's form (a Repost page) as its script does: a post
// from our own page, same-site, with the browser's cookies.
func (b *browser) resubmit(p page) page {
	b.t.Helper()
	m := regexp.MustCompile(`<form method="post" action="([^"]*)">`).FindStringSubmatch(p.body)
	if p.status != http.StatusOK || m == nil || !strings.Contains(p.body, "document.forms[0].submit()") {
		b.t.Fatalf("not a page that posts its form: %d %s", p.status, p.body)
	}
	return b.post(m[1], p.fields())
}
