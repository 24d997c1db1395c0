package iqengine_test

// The statement sent upstream: bounded in size whatever the request, and
// naming only what the policy lets through under any common reading of
// its quotes. A test that failed on the code it was written against says
// how; "(It held when written.)" marks a defence an attack found holding.

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gatehouse/gatehouse/queryproxy/iql"
)

// TestStatementNotAmplified: a structured request's statement is not
// many times its body: the numbers' growth written out is bounded
// (iql.Limits.MaxBytes), so 1,000 numbers 1e4095 are refused and the
// upstream receives nothing.
//
// Before its fix: a structured select's JSON number "1e4095" (6 bytes) was
// written out as 4096 digits in the canonical IQL; IN lists of them made a
// 7 KB request body a 4 MB statement POSTed upstream (10 such lists, within
// max_values 10000: 41 MB), far beyond max_statement_size (64 KiB).
func TestStatementNotAmplified(t *testing.T) {
	var got atomic.Int64
	up := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		got.Store(n)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"Columns":{"Code":{"Index":0,"Type":"String"}},"Rows":[]}`)
	})
	srv := serviceOver(t, up, nil, nil)
	var b strings.Builder
	b.WriteString(`[{"ColumnName":"LastPrice","Operator":"IN","Value":[`)
	for i := range 1000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("1e4095")
	}
	b.WriteString(`]}]`)
	status, body := post(t, srv, "/query/Security/select?columns=Code", "application/json", b.String())
	t.Logf("request body %d bytes -> status %d, upstream received %d bytes", b.Len(), status, got.Load())
	if got.Load() > int64(iql.DefaultMaxBytes) {
		t.Fatalf("a %d-byte request was forwarded as a %d-byte statement (bound %d): %.200s", b.Len(), got.Load(), iql.DefaultMaxBytes, body)
	}
}

// TestMultiRowInsertWrittenOut: the bound on numbers' growth written out
// is a structured insert's as a whole, however many rows: 600 rows of
// sixteen 1e4095 are refused (413) having allocated little (it was per row:
// 78 MB, and 39 MB of bind arguments on a SQL engine).
func TestMultiRowInsertWrittenOut(t *testing.T) {
	up := hostile(t, answerWith(`{"RowsAffected":1}`))
	srv := serviceOver(t, up, nil, nil)
	var b strings.Builder
	b.WriteString("[")
	for r := range 600 {
		if r > 0 {
			b.WriteByte(',')
		}
		b.WriteString("{")
		for c := range 16 {
			if c > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"C%d":1e4095`, c)
		}
		b.WriteString("}")
	}
	b.WriteString("]")
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	status, body := post(t, srv, "/query/Order/insert", "application/json", b.String())
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("body %d bytes -> %d %.120s; allocated %d MB", b.Len(), status, body, alloc>>20)
	if status != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d %s, want 413", status, body)
	}
	if alloc > 16<<20 {
		t.Errorf("a %d-byte structured insert allocated %d MB of written-out values (bound 64 KiB per statement)", b.Len(), alloc>>20)
	}
}

// TestStatementOfLongValues: 16 values of 1e4095 grow by 65,440 bytes
// written out, under the bound on that growth (64 KiB); the statement
// forwarded holds them and its syntax, under twice the bound.
func TestStatementOfLongValues(t *testing.T) {
	var got int64
	up := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"Columns":{"Code":{"Index":0}},"Rows":[]}`)
	})
	srv := serviceOver(t, up, nil, nil)
	vals := strings.TrimSuffix(strings.Repeat("1e4095,", 16), ",")
	status, _ := post(t, srv, "/query/Security/select?columns=Code", "application/json", `[{"ColumnName":"LastPrice","Operator":"IN","Value":[`+vals+`]}]`)
	if status != http.StatusOK || got < 64<<10 || got > 2*64<<10 {
		t.Errorf("status %d; upstream received a %d-byte statement", status, got)
	}
}

// TestPolicyHeldInForwardedStatements: names in other spellings, Unicode look-alikes,
// quoting tricks, comments, keywords, the structured endpoints and a caller
// without the table's scope never get a statement for a hidden column or a
// closed table forwarded; values never change the statement's shape.
// (It held when written.)
func TestPolicyHeldInForwardedStatements(t *testing.T) {
	var mu sync.Mutex
	var got []string
	up := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
		w.WriteHeader(400)
	})
	srv := serviceOver(t, up, nil, nil)
	for _, tt := range []struct{ tok, path, ct, body string }{
		{"t", "/query", iqlType, "select routingnote from order"},
		{"t", "/query", iqlType, "select ROUTINGNOTE from ORDER"},
		{"t", "/query", iqlType, "select Code from Order where RoutingNote begins 'a'"},
		{"t", "/query", iqlType, "select Code from Order where Code = 'x' or RoutingNote = 'a'"},
		{"t", "/query", iqlType, "select Code from Order where routingnotE in ['a']"},
		{"t", "/query", iqlType, "select \"RoutingNote\" from Order"},
		{"t", "/query", iqlType, "select Routing\u212aote from Order"},
		{"t", "/query", iqlType, "select Code from Order -- , RoutingNote"},
		{"t", "/query", iqlType, "select Code from Order /* */"},
		{"t", "/query", iqlType, "select Code from Order; select RoutingNote from Order"},
		{"t", "/query", iqlType, "insert into Order (Code, RoutingNote) values ('A', 'x')"},
		{"t", "/query/order/select?columns=Code,RoutingNote", "application/json", ""},
		{"t", "/query/order/select?column=routingnote", "application/json", ""},
		{"t", "/query/order/select", "application/json", `[{"ColumnName":"RoutingNote","Operator":"=","Value":"x"}]`},
		{"t", "/query/order/select", "application/json", `[{"columnname":"Code","operator":"=","value":"x","ColumnName":"RoutingNote"}]`},
		{"t", "/query/order/insert", "application/json", `{"Code":"A","routingnote":"x"}`},
		{"t", "/query/Order%2F..%2FSecret/select", "application/json", ""},
		{"market-only", "/query", iqlType, "select Code from Order"},
		{"market-only", "/query/Order/select?columns=Code", "application/json", ""},
		{"market-only", "/query/Order/insert", "application/json", `{"Code":"A"}`},
		{"market-only", "/query", iqlType, "insert into order (Code) values ('A')"},
	} {
		req, _ := http.NewRequest("POST", srv.URL+tt.path, strings.NewReader(tt.body))
		req.Header.Set("Authorization", "Bearer "+tt.tok)
		req.Header.Set("Content-Type", tt.ct)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 || resp.StatusCode >= 500 {
			t.Fatalf("%s %s: %d", tt.path, tt.body, resp.StatusCode)
		}
	}
	mu.Lock()
	n := len(got)
	mu.Unlock()
	if n != 0 {
		t.Fatalf("forwarded: %q", got)
	}
	// Values are re-quoted: a quote, double quote, bracket or keyword in
	// a value stays inside one literal, quoted with the quote it does not
	// hold.
	status, _ := post(t, srv, "/query", iqlType, `select Code from Security where Code = "x' OR Code = 'y" or Name IN ['a"]', "b' , '"]`)
	mu.Lock()
	last := got[len(got)-1]
	mu.Unlock()
	if status != 400 || last != `SELECT Code FROM Security WHERE Code = "x' OR Code = 'y" OR Name IN ['a"]', "b' , '"]` {
		t.Fatalf("%d %q", status, last)
	}
	reparsed, err := iql.Parse(last, iql.Limits{})
	if err != nil || iql.Format(reparsed) != last {
		t.Fatalf("the forwarded text does not read back as itself: %v", err)
	}
}

// backslashIdents lexes text the way many hand-written and SQL-family
// lexers do (MySQL, and .NET code built on C#-style escapes): strings in
// single or double quotes where a backslash escapes the next character
// (a doubled quote is an escaped quote too), "--" starting a comment to the
// end of the line. It returns the words outside strings and comments, and
// whether every string was closed.
func backslashIdents(text string) (words []string, closed bool) {
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '\'' || c == '"':
			j := i + 1
			for {
				if j >= len(text) {
					return words, false
				}
				if text[j] == '\\' {
					j += 2
					continue
				}
				if text[j] == c {
					if j+1 < len(text) && text[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			i = j + 1
		case c == '-' && strings.HasPrefix(text[i:], "--"):
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case c == '_' || 'a' <= c|0x20 && c|0x20 <= 'z':
			j := i
			for j < len(text) && (text[j] == '_' || 'a' <= text[j]|0x20 && text[j]|0x20 <= 'z' || '0' <= text[j] && text[j] <= '9') {
				j++
			}
			words = append(words, text[i:j])
			i = j
		default:
			i++
		}
	}
	return words, true
}

// TestValuesQuotedForAnyReading: the text sent upstream names only the columns
// the policy let through under any common reading of quotes: the
// upstream's string escapes are not documented (docs/protocol.md says
// only "single quotes per the grammar, double quotes in the examples"), so
// a value holding a backslash, a control character or both quotes is
// refused (400) and any other is quoted with the quote it does not hold.
//
// Before its fix: the only quoting rule was the doubled single quote, and a
// backslash, a "--" and double quotes inside a value were sent as they
// were. Read by an upstream that takes a backslash for an escape and "--"
// for a comment, as MySQL-style and many hand-written lexers do, the
// values '\' and ' ] OR RoutingNote BEGINS "a" --' in an IN list became a
// filter on the hidden column RoutingNote: a one-bit oracle (rows or no
// rows) on a column the policy hides.
func TestValuesQuotedForAnyReading(t *testing.T) {
	var got atomic.Value
	up := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(string(b))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"Columns":{"Code":{"Index":0,"Type":"String"}},"Rows":[]}`)
	})
	srv := serviceOver(t, up, nil, nil)
	for _, tt := range []struct{ path, ct, body string }{
		{"/query", iqlType, `select Code from Order where Code in ['\', ' ] OR RoutingNote BEGINS "a" --']`},
		{"/query/Order/select?columns=Code", "application/json", `[{"ColumnName":"Code","Operator":"IN","Value":["\\"," ] OR RoutingNote BEGINS \"a\" --"]}]`},
	} {
		got.Store("")
		status, body := post(t, srv, tt.path, tt.ct, tt.body)
		sent := got.Load().(string)
		t.Logf("%d %s; upstream got %s", status, strings.TrimSpace(body), sent)
		words, closed := backslashIdents(sent)
		for _, w := range words {
			if strings.EqualFold(w, "RoutingNote") && closed {
				t.Errorf("under a backslash-escaping reading the forwarded statement filters on the hidden column: %s", sent)
			}
		}
	}
}
