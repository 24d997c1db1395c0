// Package marketblast is wsbench's market-data payload: blast messages
// made of the demo market's Security updates (examples/marketdata), which
// the benchmark's backend sends and wsbench sizes, compressed and not.
package marketblast

import (
	"bytes"
	"fmt"

	"github.com/klauspost/compress/flate"

	"github.com/gatehouse/gatehouse/examples/marketdata"
)

// Count is how many distinct messages a blast sends in turn.
const Count = 1024

// stamp is the Sent stamp's placeholder: 19 digits, as every unix ns time
// until 2286.
const stamp = "1000000000000000000"

// Templates are the blast messages for topic, the demo market's first
// Count Security updates (seed 1): each update's Data with Sent and the
// update's topic first,
//
//	{"Controller":"Market","Topic":<topic>,"Action":"Sub","Data":{"Sent":<19 digits>,"Of":"Security!BHP.ASX","High":45.12,...}}
//
// and the offset of their Sent stamp, the same in each.
func Templates(topic string) ([][]byte, int) {
	head := fmt.Sprintf(`{"Controller":"Market","Topic":%q,"Action":"Sub","Data":{"Sent":`, topic)
	var out [][]byte
	for _, u := range marketdata.SecurityUpdates(1, Count) {
		// {"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Sub","Data":{"High":...}}
		_, rest, _ := bytes.Cut(u, []byte(`"Topic":`))
		of, data, _ := bytes.Cut(rest, []byte(`,"Action":"Sub","Data":{`))
		b := make([]byte, 0, len(head)+len(stamp)+len(u))
		b = append(b, head...)
		b = append(b, stamp...)
		b = append(b, `,"Of":`...)
		b = append(b, of...)
		b = append(b, ',')
		b = append(b, data...)
		out = append(out, b)
	}
	return out, len(head)
}

// FrameBytes is the mean size of msgs' frames as a server sends them
// (unmasked), uncompressed (plain) and, each message compressed alone at
// flate level as permessage-deflate frames it (the flush's 4-byte tail
// removed), compressed.
func FrameBytes(msgs [][]byte, level int) (plain, compressed float64, err error) {
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, level)
	if err != nil {
		return 0, 0, err
	}
	var p, z int
	for _, m := range msgs {
		buf.Reset()
		w.Reset(&buf)
		_, _ = w.Write(m)
		_ = w.Flush()
		p += header(len(m)) + len(m)
		n := buf.Len() - 4
		z += header(n) + n
	}
	return float64(p) / float64(len(msgs)), float64(z) / float64(len(msgs)), nil
}

// header is the length of an unmasked frame header for n bytes.
func header(n int) int {
	switch {
	case n < 126:
		return 2
	case n < 1<<16:
		return 4
	}
	return 10
}
