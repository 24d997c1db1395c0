package logout

import (
	"crypto/rand"
	"encoding/base64"
	"html/template"
	"net/http"
	"strings"
)

// checkSessionPage is the OP iframe of OpenID Connect Session Management
// 1.0 §3.3. The relying party's page posts "client_id session_state" to it;
// it recomputes the session state from the browser-state cookie (see
// session.SessionState: hex SHA-256 of client_id, the sender's origin,
// the browser state and the salt, joined by spaces, then "." and the
// salt) and answers "unchanged", "changed", or "error" for a message it
// cannot read. It never answers a window other than its parent, and
// answers only to the sender's origin. Without the cookie (signed out, or
// a browser that keeps third-party cookies from the frame) the state is
// empty, and a session state computed against a session reads "changed":
// the relying party then asks with prompt=none, at the top level.
var checkSessionPage = template.Must(template.New("checksession").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>check session</title></head><body>
<script nonce="{{.Nonce}}">
(function () {
	"use strict";
	var cookieName = {{.Cookie}};
	function browserState() {
		var parts = document.cookie ? document.cookie.split(";") : [];
		for (var i = 0; i < parts.length; i++) {
			var p = parts[i].replace(/^\s+/, "");
			if (p.indexOf(cookieName + "=") === 0) return p.slice(cookieName.length + 1);
		}
		return "";
	}
	function hex(buf) {
		var b = new Uint8Array(buf), s = "";
		for (var i = 0; i < b.length; i++) s += (b[i] < 16 ? "0" : "") + b[i].toString(16);
		return s;
	}
	window.addEventListener("message", function (e) {
		if (e.source !== window.parent || !e.origin || e.origin === "null") return;
		var reply = function (m) { e.source.postMessage(m, e.origin); };
		var data = typeof e.data === "string" ? e.data : "";
		var sp = data.lastIndexOf(" ");
		var clientID = data.slice(0, sp), ss = data.slice(sp + 1), dot = ss.lastIndexOf(".");
		if (data.length > 4096 || sp < 1 || dot < 1 || dot === ss.length - 1 || !(window.crypto && crypto.subtle)) {
			reply("error");
			return;
		}
		var salt = ss.slice(dot + 1), state = browserState();
		var text = clientID + " " + e.origin + " " + state + " " + salt;
		crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)).then(function (d) {
			// Signed out (no state) is always "changed": no session state was
			// issued against an empty one, so any page could compute that one
			// to learn whether its visitor is signed in. The digest is made
			// all the same, so the answer comes as late either way.
			reply(state !== "" && hex(d) + "." + salt === ss ? "unchanged" : "changed");
		}, function () { reply("error"); });
	});
})();
</script></body></html>
`))

// ServeCheckSession is GET /connect/checksession: the check-session
// iframe, which any relying party's page may frame.
func (e *Endpoint) ServeCheckSession(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		if e.cfg.Failed != nil {
			e.cfg.Failed(CheckSessionName, "invalid_request")
		}
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	nonce := base64.RawURLEncoding.EncodeToString(b)
	var page strings.Builder
	if err := checkSessionPage.Execute(&page, struct{ Nonce, Cookie string }{nonce, e.cfg.Sessions.StateCookieName()}); err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	// Framed by relying parties of any origin, by design; it holds no
	// secret and answers only its parent.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+nonce+"'; frame-ancestors *; base-uri 'none'; form-action 'none'")
	if e.cfg.Pages.HSTS != "" {
		h.Set("Strict-Transport-Security", e.cfg.Pages.HSTS)
	}
	_, _ = w.Write([]byte(page.String()))
}
