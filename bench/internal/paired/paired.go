// Package paired is the statistics the benchmarks judge their ratios by:
// ratios measured in pairs (ours and the baseline back to back, round
// after round), summed up as their geometric mean with a 95% confidence
// interval, so that a goal within the noise of one run is judged by the
// interval over rounds.
package paired

import "math"

// Interval is the geometric mean of ratios and its 95% confidence
// interval: Student's t over their logarithms. ok needs three ratios or
// more.
func Interval(ratios []float64) (mean, lo, hi float64, ok bool) {
	n := len(ratios)
	if n < 3 {
		return 0, 0, 0, false
	}
	var sum, sq float64
	for _, r := range ratios {
		sum += math.Log(r)
	}
	m := sum / float64(n)
	for _, r := range ratios {
		d := math.Log(r) - m
		sq += d * d
	}
	half := tQuantile975(n-1) * math.Sqrt(sq/float64(n-1)/float64(n))
	return math.Exp(m), math.Exp(m - half), math.Exp(m + half), true
}

// tQuantile975 is the 97.5th percentile of Student's t distribution with
// df degrees of freedom (two-sided 95%), from the usual table; the normal
// distribution's past 30.
func tQuantile975(df int) float64 {
	table := []float64{0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df >= 1 && df < len(table) {
		return table[df]
	}
	return 1.960
}
