package marketdata

// SecurityUpdates returns n of the demo market's Security update messages,
// as a subscriber to every Security topic receives them step after step
// (each step one update per security, in the demo's order), the market
// seeded with seed: the same seed and n give the same messages. Benchmarks
// use them as a realistic payload (bench/wsbench).
func SecurityUpdates(seed uint64, n int) [][]byte {
	m := newMarket(seed)
	out := make([][]byte, 0, n)
	for len(out) < n {
		for _, s := range m.securities {
			m.walk(s)
			m.book(s)
		}
		for _, s := range m.securities {
			if len(out) == n {
				break
			}
			out = append(out, s.appendUpdate(make([]byte, 0, 320)))
		}
	}
	return out
}
