package wsframe

import (
	"testing"
)

// BenchmarkDeflate is the cost of compressing one message alone
// (Deflate, at DeflateLevel), on a market-data update and on letters and
// digits, with the share it leaves (compressed/size; 1: not compressed).
func BenchmarkDeflate(b *testing.B) {
	for _, bc := range []struct {
		name string
		data []byte
	}{
		{"quote-253B", []byte(quote)},
		{"letters-256B", letters(256)},
		{"letters-8KiB", letters(8 << 10)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.data)))
			z := 0
			for b.Loop() {
				z = Deflate(bc.data, func([]byte) {})
			}
			if z == 0 {
				z = len(bc.data)
			}
			b.ReportMetric(float64(z)/float64(len(bc.data)), "share")
		})
	}
}
