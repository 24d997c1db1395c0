package integration

import (
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// The browser flows' helpers: a browser made of net/http and a cookie jar
// that follows no redirect (so the test reads each Location), and the
// forms of the login and consent pages.

// webClient is the demo's confidential browser client (Caddyfile.example).
// DEMO-ONLY credentials.
const (
	webClient = "demo-web"
	webSecret = "demo-web-secret"
)

// webCallback is demo-web's redirect URI on g.
func webCallback(g *Gatehouse) string { return g.Issuer + "/demo/callback" }

// browser is a cookie-keeping HTTP client through g's recording transport.
type browser struct {
	t      testing.TB
	g      *Gatehouse
	client *http.Client
}

func newBrowser(t testing.TB, g *Gatehouse) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, g: g, client: &http.Client{
		Jar: jar, Transport: g.Client.Transport, Timeout: requestTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// on is the same browser (its cookies) reaching g instead: g shares b's
// issuer URL, as instances behind one load balancer do.
func (b *browser) on(g *Gatehouse) *browser {
	c := *b.client
	c.Transport = g.Client.Transport
	return &browser{t: b.t, g: g, client: &c}
}

// page is a response to the browser, its body read.
type page struct {
	status   int
	header   http.Header
	body     string
	location *url.URL
}

func (b *browser) do(req *http.Request) page {
	b.t.Helper()
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", req.Method, req.URL.Redacted(), err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	p := page{status: resp.StatusCode, header: resp.Header, body: string(raw)}
	if loc := resp.Header.Get("Location"); loc != "" {
		if p.location, err = url.Parse(loc); err != nil {
			b.t.Fatalf("Location %q: %v", loc, err)
		}
	}
	return p
}

// get opens u.
func (b *browser) get(u string) page {
	b.t.Helper()
	return b.do(mustRequest(b.t, http.MethodGet, u, nil))
}

// post posts form to the issuer's path as a page of the issuer does;
// headers (name, value pairs; an empty value removes one) change that.
func (b *browser) post(path string, form url.Values, headers ...string) page {
	b.t.Helper()
	req := mustRequest(b.t, http.MethodPost, b.g.Issuer+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.g.Issuer)
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

// hasSession reports whether the browser holds a session cookie.
func (b *browser) hasSession() bool {
	u, _ := url.Parse(b.g.Issuer + "/")
	for _, c := range b.client.Jar.Cookies(u) {
		if strings.HasSuffix(c.Name, "gatehouse.session") {
			return true
		}
	}
	return false
}

var hiddenInput = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// fields are the hidden fields of the page's first form (the login and
// second-factor pages have a passkey form after it, whose fields would
// make a password or a code post another request).
func (p page) fields() url.Values {
	v := url.Values{}
	first, _, _ := strings.Cut(p.body, "</form>")
	for _, m := range hiddenInput.FindAllStringSubmatch(first, -1) {
		v.Set(m[1], html.UnescapeString(m[2]))
	}
	return v
}

// loginForm is the login page's form filled in with the credentials.
func (b *browser) loginForm(p page, user, password string) url.Values {
	b.t.Helper()
	if p.status != http.StatusOK || !strings.Contains(p.body, `action="/connect/login"`) {
		b.t.Fatalf("not the login page: %d %v %.300s", p.status, p.location, p.body)
	}
	v := p.fields()
	v.Set("username", user)
	v.Set("password", password)
	return v
}

// login submits the login page p.
func (b *browser) login(p page, user, password string) page {
	b.t.Helper()
	return b.post("/connect/login", b.loginForm(p, user, password))
}

// consent answers the consent page p, if p is one.
func (b *browser) consent(p page, decision string) page {
	b.t.Helper()
	if !strings.Contains(p.body, `action="/connect/consent"`) {
		return p
	}
	v := p.fields()
	v.Set("decision", decision)
	return b.post("/connect/consent", v)
}

// params are the parameters of a redirect back to the client: in the
// fragment when fragment is set, else in the query.
func (p page) params(t testing.TB, fragment bool) url.Values {
	t.Helper()
	if p.location == nil {
		t.Fatalf("no redirect: %d %.500s", p.status, p.body)
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
