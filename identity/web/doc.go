// Package web renders the identity server's HTML pages: login, consent,
// the error page of a request that cannot be redirected, and the
// auto-submitting form of response_mode=form_post. The templates and their
// style are embedded in the binary (no external assets) and rendered with
// html/template.
//
// Every page is sent with the headers of a page that handles credentials:
// no caching, no referrer to another origin, no framing (CSP frame-ancestors 'none' and
// X-Frame-Options DENY), no MIME sniffing, and a Content-Security-Policy
// that allows only the page's own inline style and, on the form_post page,
// its one inline script, by a nonce drawn per response.
//
// It knows nothing of OAuth, the store or sessions: the endpoint packages
// give it the data to show. It imports nothing from identity.
package web
