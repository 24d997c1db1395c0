package zenith

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// benchMessages: a typical order message of about 200 bytes, and a 64 KiB
// one whose Data is a list of such orders.
func benchMessages() []struct {
	name string
	msg  []byte
} {
	order := `{"Account":"ACC-000123","Side":"Buy","Code":"BHP","Exchange":"ASX","Quantity":1000,"Price":37.48,"Type":"Limit"}`
	small := `{"Controller":"Trading","Topic":"PlaceOrder","Action":"Publish","TransactionID":12345,"Data":` + order + `}`
	var b strings.Builder
	b.WriteString(`{"Controller":"Trading","Topic":"PlaceOrder","Action":"Publish","TransactionID":12345,"Data":[`)
	for i := 0; b.Len() < 64<<10-len(order)-64; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strings.Replace(order, "000123", fmt.Sprintf("%06d", i), 1))
	}
	b.WriteString(`]}`)
	return []struct {
		name string
		msg  []byte
	}{{fmt.Sprintf("%dB", len(small)), []byte(small)}, {fmt.Sprintf("%dB", b.Len()), []byte(b.String())}}
}

// BenchmarkScan: Scan next to json.Unmarshal of the same bytes into
// map[string]any (the baseline) and map[string]json.RawMessage. The
// figure is Scan's ns/op over the baseline's.
func BenchmarkScan(b *testing.B) {
	for _, m := range benchMessages() {
		if _, err := Scan(m.msg); err != nil {
			b.Fatal(err)
		}
		b.Run(m.name+"/Scan", func(b *testing.B) {
			b.SetBytes(int64(len(m.msg)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Scan(m.msg); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(m.name+"/Unmarshal_map_any", func(b *testing.B) {
			b.SetBytes(int64(len(m.msg)))
			b.ReportAllocs()
			for b.Loop() {
				var v map[string]any
				if err := json.Unmarshal(m.msg, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(m.name+"/Unmarshal_map_raw", func(b *testing.B) {
			b.SetBytes(int64(len(m.msg)))
			b.ReportAllocs()
			for b.Loop() {
				var v map[string]json.RawMessage
				if err := json.Unmarshal(m.msg, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkScanVsUnmarshal gives the figure on a busy machine: it
// alternates batches of Scan and of json.Unmarshal into map[string]any on
// the same bytes, so both see the same load, and reports each one's
// fastest batch per operation and their ratio (scan/map below 1 means Scan
// is faster). A second baseline, map[string]json.RawMessage (top level
// only, as lenient as encoding/json is), gives scan/raw.
func BenchmarkScanVsUnmarshal(b *testing.B) {
	for _, m := range benchMessages() {
		b.Run(m.name, func(b *testing.B) {
			batch := max(1, 16<<10/len(m.msg))
			best := func(cur *time.Duration, f func()) {
				start := time.Now()
				for range batch {
					f()
				}
				if d := time.Since(start); *cur == 0 || d < *cur {
					*cur = d
				}
			}
			var scan, base, raw time.Duration
			for b.Loop() {
				best(&scan, func() {
					if _, err := Scan(m.msg); err != nil {
						b.Fatal(err)
					}
				})
				best(&base, func() {
					var v map[string]any
					if err := json.Unmarshal(m.msg, &v); err != nil {
						b.Fatal(err)
					}
				})
				best(&raw, func() {
					var v map[string]json.RawMessage
					if err := json.Unmarshal(m.msg, &v); err != nil {
						b.Fatal(err)
					}
				})
			}
			b.ReportMetric(float64(scan.Nanoseconds())/float64(batch), "scan-ns/msg")
			b.ReportMetric(float64(base.Nanoseconds())/float64(batch), "map-ns/msg")
			b.ReportMetric(float64(raw.Nanoseconds())/float64(batch), "raw-ns/msg")
			b.ReportMetric(float64(scan)/float64(base), "scan/map")
			b.ReportMetric(float64(scan)/float64(raw), "scan/raw")
		})
	}
}
