package queryhandler

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"

	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/gatehouse/gatehouse/caddymodule/sqlitestore"
)

// demoSecretSHA256 is the SHA-256 of "demo-secret".
const demoSecretSHA256 = "cd577fe2561ebff23505db0bb006300c7cdecbd46bc0e03c449afafaca2c25bf"

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// load runs a Caddyfile in-process until the test ends: the gatehouse
// app with a client_credentials client, and the site block given.
func load(t *testing.T, port int, site string) error {
	t.Helper()
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	cf := fmt.Sprintf(`{
	admin off
	persist_config off
	log {
		level ERROR
	}
	gatehouse {
		issuer http://127.0.0.1:%d
		store sqlite %s
		client demo-service {
			secret_sha256 %s
			grant_types client_credentials
			scopes Service/Market
			entitlements ASX:quotes
		}
	}
}

http://127.0.0.1:%d {
	bind 127.0.0.1
	gatehouse_identity
%s
}
`, port, filepath.Join(t.TempDir(), "g.db"), demoSecretSHA256, port, site)
	cfg, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cf), nil)
	if err != nil {
		t.Fatalf("adapt: %v\n%s", err, cf)
	}
	if err := caddy.Load(cfg, true); err != nil {
		return err
	}
	t.Cleanup(func() { caddy.Stop() })
	return nil
}

func token(t *testing.T, base string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/connect/token", strings.NewReader(url.Values{"grant_type": {"client_credentials"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("demo-service", "demo-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token: %s %v", resp.Status, err)
	}
	return tok.AccessToken
}

// TestIQEngineThroughCaddy: the glue builds the iq engine, authenticates
// with the app's verifier (401 without a token) and passes the caller's
// own token and Request-Id to the upstream with canonical IQL.
func TestIQEngineThroughCaddy(t *testing.T) {
	var mu sync.Mutex
	var got []*http.Request
	var bodies []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"Columns":{"Code":{"Index":0,"Type":"String"}},"Rows":[["BHP"]]}`)
	}))
	defer up.Close()
	port := freePort(t)
	if err := load(t, port, fmt.Sprintf(`	gatehouse_query {
		engine iq %s {
			table Security Code:String Exchange:String
		}
		table Security {
			read Service/Market
		}
	}`, up.URL)); err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	tok := token(t, base)
	post := func(auth string) (int, string) {
		req, _ := http.NewRequest("POST", base+"/query", strings.NewReader(`select code from security where exchange = "ASX"`))
		req.Header.Set("Content-Type", "text/plain; charset=utf-8")
		req.Header.Set("Request-Id", "r-1")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		c := &http.Client{Timeout: 10 * time.Second}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, _ := post(""); status != 401 {
		t.Fatalf("no token: %d", status)
	}
	status, body := post("Bearer " + tok)
	if status != 200 || body != `{"Columns":{"Code":{"Index":0,"Type":"String"}},"Rows":[["BHP"]]}` {
		t.Fatalf("%d %s", status, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0].Header.Get("Authorization") != "Bearer "+tok || got[0].Header.Get("Request-Id") != "r-1" ||
		bodies[0] != `SELECT Code FROM Security WHERE Exchange = 'ASX'` {
		t.Fatalf("upstream got %d requests: %v %q", len(got), got, bodies)
	}
}

// TestPolicyMustFitTheDatabase: a table policy naming a table or column the
// database lacks fails at start, not on the first request.
func TestPolicyMustFitTheDatabase(t *testing.T) {
	port := freePort(t)
	err := load(t, port, fmt.Sprintf(`	gatehouse_query {
		engine sqlite %s {
			init_file ../../examples/querydb/demo.sql
		}
		table Securities {
			read Service/Market
		}
		table Account {
			read Service/Trading
			owner UserId
		}
	}`, filepath.Join(t.TempDir(), "q.db")))
	if err == nil || !strings.Contains(err.Error(), `"Securities": not in the database`) || !strings.Contains(err.Error(), `owner column "UserId"`) {
		t.Fatalf("%v", err)
	}
}

// TestIQEngineRefusesOwner: a forwarding engine's upstream filters a
// user's rows by the token itself, so an owner column in a table policy
// would be applied by nobody: the config is refused at load, not served
// with every user's rows (from an attack on the configuration).
func TestIQEngineRefusesOwner(t *testing.T) {
	err := load(t, freePort(t), `	gatehouse_query {
		engine iq http://127.0.0.1:1 {
			table Orders Id:Integer Account:String
		}
		table Orders {
			read Service/Market
			owner Account
		}
	}`)
	if err == nil || !strings.Contains(err.Error(), `owner "Account"`) {
		t.Errorf("an owner column on the iq engine: %v", err)
	}
}

// TestVenueTableThroughCaddy: the glue hands the token's entitlements to
// the policy: a token holding ASX:quotes reads the ASX rows of a venue
// table and no other venue's, and the rows of a table without a venue
// column as before; a venue table without its list of venues fails at
// load. It failed when the glue left the caller's entitlements out.
func TestVenueTableThroughCaddy(t *testing.T) {
	if err := load(t, freePort(t), `	gatehouse_query {
		table Security {
			read Service/Market
			venue_column Exchange
		}
	}`); err == nil || !strings.Contains(err.Error(), "needs the venues") {
		t.Fatalf("a venue table without venues: %v", err)
	}
	port := freePort(t)
	if err := load(t, port, fmt.Sprintf(`	gatehouse_query {
		engine sqlite %s {
			init_file ../../examples/querydb/demo.sql
		}
		venues ASX NZX
		table Security {
			read Service/Market
			venue_column Exchange
		}
		table Market {
			read Service/Market
		}
	}`, filepath.Join(t.TempDir(), "q.db"))); err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	tok := token(t, base)
	for stmt, want := range map[string]string{
		`select Code from Security where Code = 'BHP' or Code = 'AIR'`: `{"Columns":{"Code":{"Index":0,"Type":"String"}},"Rows":[["BHP"]]}`,
		`select Code from Security where Exchange <> 'ASX'`:            `{"Columns":{"Code":{"Index":0,"Type":"String"}},"Rows":[]}`,
		`select Code from Market where Code = 'NZX'`:                   `{"Columns":{"Code":{"Index":0,"Type":"String"}},"Rows":[["NZX"]]}`,
	} {
		req, _ := http.NewRequest("POST", base+"/query", strings.NewReader(stmt))
		req.Header.Set("Content-Type", "text/plain; charset=utf-8")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.TrimSpace(string(b)) != want {
			t.Errorf("%s: %d %s, want %s", stmt, resp.StatusCode, b, want)
		}
	}
}
