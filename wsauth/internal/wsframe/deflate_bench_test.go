package wsframe

import (
	stdflate "compress/flate"
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

// BenchmarkInflate is the cost of decompressing one message alone
// (Inflate), what the gateway pays per compressed backend message it
// passes through, against BenchmarkDeflate's cost of compressing it: a
// market-data update compressed at DeflateLevel and as gorilla's writer
// compresses it (the standard library's flate at level 1), and letters
// stored (a compressor that gives them up).
func BenchmarkInflate(b *testing.B) {
	var zq []byte
	Deflate([]byte(quote), func(z []byte) { zq = append([]byte(nil), z...) })
	for _, bc := range []struct {
		name string
		n    int
		z    []byte
	}{
		{"quote-253B", len(quote), zq},
		{"quote-253B-gorilla", len(quote), compressed(b, []byte(quote), stdflate.BestSpeed, false)},
		{"letters-256B-stored", 256, compressed(b, letters(256), stdflate.NoCompression, false)},
		{"letters-8KiB-stored", 8 << 10, compressed(b, letters(8<<10), stdflate.NoCompression, false)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(bc.n))
			buf := make([]byte, 0, bc.n)
			for b.Loop() {
				var err error
				if buf, err = Inflate(buf[:0], bc.z, int64(bc.n)); err != nil || len(buf) != bc.n {
					b.Fatal(err)
				}
			}
		})
	}
}
