package zenith

import (
	"strconv"
	"time"
)

// AppendDateTime appends t as a Zenith DateTime: ISO 8601 basic form in
// UTC, to the second (20261121T103000Z).
func AppendDateTime(dst []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(dst, "20060102T150405Z")
}

// AppendTimeSpan appends d as a Zenith TimeSpan in its documented form
// (docs/protocol.md, "Data types"), [-][days.]hh:mm:ss.fff
// (00:59:59.000, 1.02:03:04.005), truncated to the millisecond.
func AppendTimeSpan(dst []byte, d time.Duration) []byte {
	return appendSpan(dst, d, time.Millisecond, 3)
}

// AppendTicksTimeSpan appends d as the original web client reads a
// TimeSpan (.NET's TimeSpan "c" form, its fraction always written):
// [-][days.]hh:mm:ss.fffffff (00:59:59.5000000, 1.02:03:04.0050000),
// truncated to the .NET tick, 100 ns.
func AppendTicksTimeSpan(dst []byte, d time.Duration) []byte {
	return appendSpan(dst, d, 100*time.Nanosecond, 7)
}

// appendSpan appends d as [-][days.]hh:mm:ss.f…, in whole units with
// digits fractional digits (unit is 10^-digits s).
func appendSpan(dst []byte, d, unit time.Duration, digits int) []byte {
	n := d / unit
	u := uint64(n)
	if n < 0 {
		dst = append(dst, '-')
		u = -u
	}
	perSec := uint64(time.Second / unit)
	secs, frac := u/perSec, u%perSec
	days, rest := secs/86_400, secs%86_400
	if days > 0 {
		dst = strconv.AppendUint(dst, days, 10)
		dst = append(dst, '.')
	}
	dst = append2(dst, rest/3600)
	dst = append(dst, ':')
	dst = append2(dst, rest/60%60)
	dst = append(dst, ':')
	dst = append2(dst, rest%60)
	dst = append(dst, '.')
	start := len(dst)
	for range digits {
		dst = append(dst, '0')
	}
	for i := len(dst) - 1; i >= start; i-- {
		dst[i] = byte('0' + frac%10)
		frac /= 10
	}
	return dst
}

func append2(dst []byte, n uint64) []byte {
	return append(dst, byte('0'+n/10), byte('0'+n%10))
}
