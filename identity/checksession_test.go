package identity

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// checkSessionHarness runs the check-session iframe's script in node with
// a stand-in window (its parent is the framing page of origin) and
// document.cookie, posts message from the parent, and returns the replies
// the script sent back.
const checkSessionHarness = `
const fs = require("fs");
const input = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const handlers = [];
const replies = [];
const parent = { postMessage(m, o) { replies.push({ m, o }); } };
globalThis.window = { parent, crypto: globalThis.crypto, addEventListener(t, h) { if (t === "message") handlers.push(h); } };
globalThis.document = { cookie: input.cookie };
(0, eval)(input.script);
async function main() {
	let data = input.message;
	if (input.computeAgainstEmpty) {
		// The attacker's guess: a session state computed against an empty
		// browser state (no cookie: signed out).
		const salt = "0123456789abcdef";
		const text = input.clientID + " " + input.origin + " " + "" + " " + salt;
		const d = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
		let hex = "";
		for (const b of d) hex += (b < 16 ? "0" : "") + b.toString(16);
		data = input.clientID + " " + hex + "." + salt;
	}
	for (const m of [data, ...input.after]) for (const h of handlers) h({ source: parent, origin: input.origin, data: m });
	await new Promise(r => setTimeout(r, 100));
	process.stdout.write(JSON.stringify(replies));
}
main();
`

var scriptTag = regexp.MustCompile(`(?s)<script nonce="[^"]*">(.*?)</script>`)

// runCheckSession posts to the iframe's script, from a page of origin, a
// session_state computed against the empty browser state, then a
// malformed message ("x"), and returns the script's answers in the order
// it sent them.
func runCheckSession(t *testing.T, script, cookie, origin, clientID string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is needed to run the check-session iframe's script")
	}
	dir := t.TempDir()
	in, _ := json.Marshal(map[string]any{"script": script, "cookie": cookie, "origin": origin, "clientID": clientID,
		"computeAgainstEmpty": true, "after": []string{"x"}})
	inPath, harness := filepath.Join(dir, "in.json"), filepath.Join(dir, "harness.js")
	if err := os.WriteFile(inPath, in, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(harness, []byte(checkSessionHarness), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, harness, inPath).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var replies []struct{ M, O string }
	if err := json.Unmarshal(out, &replies); err != nil || len(replies) != 2 {
		t.Fatalf("replies %s (%v), want 2", out, err)
	}
	var got []string
	for _, r := range replies {
		if r.O != origin {
			t.Fatalf("a reply went to %q, not the sender %q", r.O, origin)
		}
		got = append(got, r.M)
	}
	return strings.Join(got, ",")
}

// The check-session iframe, which any origin may frame, tells no page
// whether its visitor is signed in: without the browser-state cookie
// (signed out) it answers "changed" to any session_state, since none was
// ever issued against an empty browser state, and as late as when signed
// in (a malformed message posted after it is answered first either way).
// Before, a page that posted one it computed itself against the empty
// state read "unchanged" from a signed-out visitor and "changed" from a
// signed-in one.
func TestCheckSessionNoLoginOracle(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	b, _ := loggedIn(t, f)
	p := b.do(httptest.NewRequest(http.MethodGet, testIssuer+PathCheckSession, nil))
	m := scriptTag.FindStringSubmatch(p.body)
	if p.status != http.StatusOK || m == nil {
		t.Fatalf("check-session page: %d %s", p.status, p.body)
	}
	state := ""
	for _, c := range b.jar.Cookies(mustURL(t, testIssuer+"/")) {
		if c.Name == "gatehouse.session_state" {
			state = c.Value
		}
	}
	if state == "" {
		t.Fatal("no browser-state cookie after login")
	}
	const evil = "https://evil.example"
	signedIn := runCheckSession(t, m[1], "gatehouse.session_state="+state, evil, "spa")
	signedOut := runCheckSession(t, m[1], "", evil, "spa")
	if signedIn != "error,changed" || signedOut != "error,changed" {
		t.Fatalf("a page of %s posting a session_state of the empty browser state, then a malformed message, reads %q from a signed-in visitor and %q from a signed-out one, want error,changed from both",
			evil, signedIn, signedOut)
	}
}
