package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	_ "modernc.org/sqlite"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/gatehouse/gatehouse"

	"github.com/gatehouse/gatehouse/examples/querydb"
	"github.com/gatehouse/gatehouse/queryproxy/iql"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

type obj = map[string]any

func run(ctx context.Context, d time.Duration, c, nrows int, pgDSN string, withAudit bool) error {
	dir, err := os.MkdirTemp("", "querybench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	dbPath := filepath.Join(dir, "query.db")
	if err := createDatabase(dbPath, nrows); err != nil {
		return err
	}
	var pgDB string
	if pgDSN != "" {
		var drop func()
		if pgDB, drop, err = createPostgres(ctx, pgDSN); err != nil {
			return err
		}
		defer drop()
	}
	gh, err := startGatehouse(dir, dbPath, nrows, pgDB, c)
	if err != nil {
		return err
	}
	defer caddy.Stop()
	direct, stopDirect, err := startDirect(dbPath, c)
	if err != nil {
		return err
	}
	defer stopDirect()
	tok, err := gh.token()
	if err != nil {
		return err
	}

	codes := []string{"BHP", "CBA", "CSL", "NAB", "WBC", "WES", "ANZ", "MQG"}
	point := func(base string, auth bool) func(client *http.Client, i int) error {
		return pointAt(base, "/query", tok, codes, auth)
	}
	fmt.Printf("querybench: %d clients, %v per figure, GOMAXPROCS %d\n\n", c, d, runtime.GOMAXPROCS(0))
	base, err := measure(c, d, point(direct, false))
	if err != nil {
		return fmt.Errorf("direct: %w", err)
	}
	stopProfile, err := startProfile()
	if err != nil {
		return err
	}
	ours, err := measure(c, d, point(gh.base, true))
	stopProfile()
	if err != nil {
		return fmt.Errorf("gatehouse: %w", err)
	}
	base2, err := measure(c, d, point(direct, false)) // again: drift shows
	if err != nil {
		return fmt.Errorf("direct: %w", err)
	}
	fmt.Printf("%-36s %12s %10s %10s\n", "point select (SQLite)", "req/s", "p50", "p99")
	fmt.Printf("%-36s %12.0f %10v %10v\n", "net/http + database/sql (before)", base.rate(), base.p(0.5), base.p(0.99))
	fmt.Printf("%-36s %12.0f %10v %10v\n", "gatehouse_query", ours.rate(), ours.p(0.5), ours.p(0.99))
	fmt.Printf("%-36s %12.0f %10v %10v\n", "net/http + database/sql (after)", base2.rate(), base2.p(0.5), base2.p(0.99))
	mean := (base.rate() + base2.rate()) / 2
	ratio := ours.rate() / mean
	fmt.Printf("ratio gatehouse / direct: %.2f (goal >= 0.80: %s)\n\n", ratio, verdict(ratio >= 0.8))

	if withAudit {
		if err := auditFigure(gh, c, d, point(gh.base, true)); err != nil {
			return err
		}
	}

	if err := venueFigure(ctx, dbPath, c, d, codes); err != nil {
		return err
	}

	if pgDB != "" {
		directPG, stopPG, err := startDirectPostgres(ctx, pgDB)
		if err != nil {
			return err
		}
		defer stopPG()
		pb, err := measure(c, d, pointAt(directPG, "/query", "", codes, false))
		if err != nil {
			return fmt.Errorf("direct pgx: %w", err)
		}
		po, err := measure(c, d, pointAt(gh.base, "/pg/query", tok, codes, true))
		if err != nil {
			return fmt.Errorf("gatehouse postgres: %w", err)
		}
		pb2, err := measure(c, d, pointAt(directPG, "/query", "", codes, false))
		if err != nil {
			return fmt.Errorf("direct pgx: %w", err)
		}
		fmt.Printf("%-36s %12s %10s %10s\n", "point select (PostgreSQL)", "req/s", "p50", "p99")
		fmt.Printf("%-36s %12.0f %10v %10v\n", "net/http + pgx (before)", pb.rate(), pb.p(0.5), pb.p(0.99))
		fmt.Printf("%-36s %12.0f %10v %10v\n", "gatehouse_query", po.rate(), po.p(0.5), po.p(0.99))
		fmt.Printf("%-36s %12.0f %10v %10v\n", "net/http + pgx (after)", pb2.rate(), pb2.p(0.5), pb2.p(0.99))
		r := po.rate() / ((pb.rate() + pb2.rate()) / 2)
		fmt.Printf("ratio gatehouse / direct: %.2f (goal >= 0.80: %s)\n\n", r, verdict(r >= 0.8))
	}
	if err := streamInChild(dir, dbPath, nrows); err != nil {
		return err
	}
	fmt.Println()
	parseGen()
	return nil
}

// pointAt is one point select at base+path: the structured select of a
// security's code, price and volume.
func pointAt(base, path, tok string, codes []string, auth bool) func(*http.Client, int) error {
	return func(client *http.Client, i int) error {
		code := codes[i%len(codes)]
		body := `[{"ColumnName":"Code","Operator":"=","Value":"` + code + `"},{"ColumnName":"Exchange","Operator":"=","Value":"ASX"}]`
		target := base + strings.TrimSuffix(path, "/query") + "/query/Security/select?columns=Code,LastPrice,Volume"
		req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if auth {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"`+code+`"`) {
			return fmt.Errorf("%d %.200s", resp.StatusCode, b)
		}
		return nil
	}
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

// createDatabase writes the demo database and a Ticks table of n rows.
func createDatabase(path string, n int) error {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec(querydb.SQL); err != nil {
		return fmt.Errorf("demo schema: %w", err)
	}
	if _, err := db.Exec(`CREATE TABLE Ticks (Id INTEGER PRIMARY KEY, Code TEXT NOT NULL, Price DECIMAL(12,4) NOT NULL, Volume INTEGER NOT NULL, At DATETIME NOT NULL)`); err != nil {
		return err
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	st, err := tx.Prepare(`INSERT INTO Ticks (Id, Code, Price, Volume, At) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	base := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	for i := range n {
		if _, err := st.Exec(i+1, []string{"BHP", "CBA", "CSL", "NAB"}[i%4], 30+float64(i%1000)/100, 100+i%5000, base.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

type gatehouse struct {
	base, secret string
	dir          string
	config       func(audit bool) obj // the Caddy config, with the audit on or off
}

// startGatehouse loads Caddy in-process: the gatehouse app with a
// client_credentials client, and gatehouse_query over the database.
func startGatehouse(dir, dbPath string, nrows int, pgDSN string, clients int) (*gatehouse, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	g := &gatehouse{base: fmt.Sprintf("http://127.0.0.1:%d", port), secret: randomHex(32), dir: dir}
	sum := sha256.Sum256([]byte(g.secret))
	handlers := []obj{
		{"handler": "gatehouse_identity"},
		// One token drives every client: the per-user bounds (the queries at
		// once and the share of the engine's connections) are lifted to them.
		{"handler": "gatehouse_query", "max_rows": nrows + 1, "max_concurrent_per_user": clients, "max_user_share": 100,
			"engine": obj{"engine": "sqlite", "path": dbPath, "max_read_conns": readConns(clients), "statement_timeout": int64(10 * time.Minute)},
			"tables": []obj{{"table": "Security", "read": []string{"Service/Market"}}, {"table": "Ticks", "read": []string{"Service/Market"}}}},
	}
	if pgDSN != "" {
		pg := pgRoute(pgDSN)
		pg["max_concurrent_per_user"] = clients
		pg["max_user_share"] = 100
		handlers = append(handlers[:1], append([]obj{pg}, handlers[1:]...)...)
	}
	g.config = func(audit bool) obj {
		cfg := obj{
			"admin":   obj{"disabled": true, "config": obj{"persist": false}},
			"storage": obj{"module": "file_system", "root": filepath.Join(dir, "caddy")},
			"logging": obj{"logs": obj{"default": obj{"level": "ERROR"}}},
			"apps": obj{
				"gatehouse": obj{
					"issuer": g.base,
					"store":  obj{"backend": "sqlite", "path": filepath.Join(dir, "gatehouse.db")},
					"clients": []obj{{"id": "bench", "secret_sha256": []string{hex.EncodeToString(sum[:])},
						"grant_types": []string{"client_credentials"}, "scopes": []string{"Service/Market"}}},
				},
				"http": obj{"servers": obj{"bench": obj{
					"listen":          []string{fmt.Sprintf("127.0.0.1:%d", port)},
					"routes":          []obj{{"handle": handlers}},
					"automatic_https": obj{"disable": true},
				}}},
			},
		}
		if audit {
			withAuditOn(cfg, g.auditLog())
		}
		return cfg
	}
	return g, g.load(false)
}

// load loads g's configuration into Caddy (again: a reload), with the
// audit on or off.
func (g *gatehouse) load(audit bool) error {
	raw, err := json.Marshal(g.config(audit))
	if err != nil {
		return err
	}
	return caddy.Load(raw, true)
}

func (g *gatehouse) token() (string, error) {
	req, _ := http.NewRequest(http.MethodPost, g.base+"/connect/token", strings.NewReader(url.Values{"grant_type": {"client_credentials"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("bench", g.secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var t struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&t); err != nil || t.AccessToken == "" {
		return "", fmt.Errorf("token: %s %v", resp.Status, err)
	}
	return t.AccessToken, nil
}

// readConns is the read connections of both SQLite paths: one per client
// at least (gatehouse answers 429 to a user's query past its share of
// them, where database/sql would queue it; one token drives every client),
// and twice the cores.
func readConns(clients int) int { return max(clients, runtime.GOMAXPROCS(0)*2) }

// startDirect serves the baseline: a minimal handler that runs the same
// parameterized point select on a read-only connection and encodes the
// same result shape with encoding/json.
func startDirect(dbPath string, clients int) (string, func(), error) {
	db, err := sql.Open("sqlite", "file:"+dbPath+"?mode=ro&_pragma=query_only(1)")
	if err != nil {
		return "", nil, err
	}
	db.SetMaxOpenConns(readConns(clients))
	st, err := db.Prepare(`SELECT "Code", "LastPrice", "Volume" FROM "Security" WHERE "Code" = ? AND "Exchange" = ?`)
	if err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var crit []struct{ ColumnName, Operator, Value string }
		if err := json.NewDecoder(r.Body).Decode(&crit); err != nil || len(crit) != 2 {
			http.Error(w, "bad", 400)
			return
		}
		rows, err := st.QueryContext(r.Context(), crit[0].Value, crit[1].Value)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		defer rows.Close()
		out := struct {
			Columns map[string]any
			Rows    [][]any
		}{Columns: map[string]any{"Code": obj{"Index": 0, "Type": "String"}, "LastPrice": obj{"Index": 1, "Type": "Decimal"}, "Volume": obj{"Index": 2, "Type": "Integer"}}}
		for rows.Next() {
			var code string
			var price float64
			var vol int64
			if err := rows.Scan(&code, &price, &vol); err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			out.Rows = append(out.Rows, []any{code, price, vol})
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(out)
	})}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), func() { srv.Close(); db.Close() }, nil
}

// result is one measured figure.
type result struct {
	ops     int
	elapsed time.Duration
	lat     []time.Duration
}

func (r result) rate() float64 { return float64(r.ops) / r.elapsed.Seconds() }

func (r result) p(q float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[min(len(r.lat)-1, int(q*float64(len(r.lat))))].Round(time.Microsecond)
}

// measure runs c workers, each with its own keep-alive connection, for d
// (after a short warm-up); any failed request fails the figure.
func measure(c int, d time.Duration, op func(*http.Client, int) error) (result, error) {
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	lats := make([][]time.Duration, c)
	clients := make([]*http.Client, c)
	for i := range c {
		clients[i] = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1, Proxy: nil}}
		for j := range 20 { // warm-up
			if err := op(clients[i], j); err != nil {
				return result{}, err
			}
		}
	}
	start := time.Now()
	deadline := start.Add(d)
	for i := range c {
		wg.Go(func() {
			for n := 0; n < 1<<24 && time.Now().Before(deadline); n++ {
				t0 := time.Now()
				if err := op(clients[i], i*7+n); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
				lats[i] = append(lats[i], time.Since(t0))
			}
		})
	}
	wg.Wait()
	if e := failed.Load(); e != nil {
		return result{}, *e
	}
	r := result{elapsed: time.Since(start)}
	for _, l := range lats {
		r.lat = append(r.lat, l...)
	}
	r.ops = len(r.lat)
	slices.Sort(r.lat)
	return r, nil
}

// streamEnv names the database a child process streams from (streamChild).
const streamEnv = "QUERYBENCH_STREAM_DB"

// streamInChild runs the streamed-result figure in a process of its own
// (this program again, streamChild), so that its peak RSS is that of a
// gatehouse serving the result and the client reading it, not of the
// load generators, baseline servers and pools of the figures before.
func streamInChild(dir, dbPath string, nrows int) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, "-rows", strconv.Itoa(nrows))
	cmd.Env = append(os.Environ(), streamEnv+"="+dbPath, "QUERYBENCH_DIR="+dir)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("streaming in a child process: %w", err)
	}
	return nil
}

// streamChild is the child's whole work: gatehouse over the database the
// parent built (SQLite only), a token, and the streamed result.
func streamChild(dbPath string, nrows int) error {
	dir, err := os.MkdirTemp(os.Getenv("QUERYBENCH_DIR"), "stream-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	gh, err := startGatehouse(dir, dbPath, nrows, "", 1)
	if err != nil {
		return err
	}
	defer caddy.Stop()
	tok, err := gh.token()
	if err != nil {
		return err
	}
	return stream(gh.base, tok, nrows)
}

// stream reads a whole-table result through gatehouse and reports its
// rate and the process's peak RSS while it streamed (Linux: the peak is
// reset first through /proc/self/clear_refs).
func stream(base, tok string, nrows int) error {
	runtime.GC()
	resetPeak := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	before := rss("VmRSS")
	req, _ := http.NewRequest(http.MethodPost, base+"/query", strings.NewReader("select * from Ticks"))
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	req.Header.Set("Authorization", "Bearer "+tok)
	client := &http.Client{Timeout: 30 * time.Minute}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var n int64
	rows := 0
	for {
		line, err := br.ReadSlice(']')
		n += int64(len(line))
		if len(line) > 0 && line[len(line)-1] == ']' {
			rows++
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
	elapsed := time.Since(start)
	rows -= 2 // the Rows array's own "]" and the column-less trailer
	if resp.StatusCode != 200 || resp.Trailer.Get("Gatehouse-Error") != "" || rows < nrows-1 {
		return fmt.Errorf("stream: %d, trailer %q, %d rows", resp.StatusCode, resp.Trailer.Get("Gatehouse-Error"), rows)
	}
	peak := rss("VmHWM")
	fmt.Printf("%-36s %d rows, %.1f MB in %v: %.1f MB/s\n", "streamed result (SQLite)", nrows, float64(n)/1e6, elapsed.Round(time.Millisecond), float64(n)/1e6/elapsed.Seconds())
	if resetPeak {
		fmt.Printf("%-36s %.1f MB (RSS before: %.1f MB; goal < 100 MB: %s)\n", "peak RSS while streaming", peak/1e6, before/1e6, verdict(peak < 100e6))
	} else {
		fmt.Printf("%-36s %.1f MB (process lifetime peak: clear_refs unavailable)\n", "peak RSS", peak/1e6)
	}
	return nil
}

// rss reads a /proc/self/status field in bytes; 0 if unknown.
func rss(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb * 1024
		}
	}
	return 0
}

// parseGen prints parse + sqlgen ns/op of a typical select.
func parseGen() {
	cat := sqlgen.Catalog{Tables: []sqlgen.Table{{Name: "Security", Columns: []sqlgen.Column{
		{Name: "Code", Type: sqlgen.String}, {Name: "Exchange", Type: sqlgen.String}, {Name: "LastPrice", Type: sqlgen.Decimal}, {Name: "Volume", Type: sqlgen.Integer}}}}}
	const stmt = `select Code, LastPrice from Security where Code IN ['BHP', 'CBA'] and Exchange = 'ASX' and LastPrice > 10 order by LastPrice desc limit 10`
	for _, d := range []sqlgen.Dialect{sqlgen.SQLite, sqlgen.PostgreSQL} {
		r := testing.Benchmark(func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s, err := iql.Parse(stmt, iql.Limits{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := sqlgen.Generate(d, cat, s, sqlgen.Options{MaxRows: 1000}); err != nil {
					b.Fatal(err)
				}
			}
		})
		fmt.Printf("%-36s %d ns/op, %d B/op, %d allocs/op\n", "parse + sqlgen ("+string(d)+")", r.NsPerOp(), r.AllocedBytesPerOp(), r.AllocsPerOp())
	}
}

// startProfile starts the CPU profile of -cpuprofile, if any.
func startProfile() (func(), error) {
	if profile == "" {
		return func() {}, nil
	}
	f, err := os.Create(profile)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
