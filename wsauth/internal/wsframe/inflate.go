package wsframe

import (
	"errors"
	"io"
	"sync"

	"github.com/klauspost/compress/flate"
)

// Decompression of the messages a peer compressed as permessage-deflate
// has them (RFC 7692 §7.2.2): each message alone (the peer keeps no
// context from one message to the next), its payload with the empty
// stored block's tail the sender removed put back, by a reader from a
// pool, reset for it.

// ErrOverLimit is the refusal of a message longer than its limit
// (AppendAll, Inflate): a decompression bomb, or merely too large.
var ErrOverLimit = errors.New("message over the limit")

// ErrInflate is Inflate's refusal of a payload that is not a deflate
// stream.
var ErrInflate = errors.New("invalid compressed message")

// inflateTail ends every payload: the tail RFC 7692 §7.2.2 has the
// receiver append, then an empty final block, so that the reader ends
// without an unexpected EOF (as gorilla's reader does).
const inflateTail = "\x00\x00\xff\xff\x01\x00\x00\xff\xff"

// twoPart reads a payload and then inflateTail, without copying either;
// it is a flate.Reader (a ByteReader), so that the flate reader adds no
// buffer of its own.
type twoPart struct {
	p    []byte
	tail int // bytes of inflateTail read
}

func (r *twoPart) Read(b []byte) (int, error) {
	if len(r.p) > 0 {
		n := copy(b, r.p)
		r.p = r.p[n:]
		return n, nil
	}
	if r.tail == len(inflateTail) {
		return 0, io.EOF
	}
	n := copy(b, inflateTail[r.tail:])
	r.tail += n
	return n, nil
}

func (r *twoPart) ReadByte() (byte, error) {
	if len(r.p) > 0 {
		c := r.p[0]
		r.p = r.p[1:]
		return c, nil
	}
	if r.tail == len(inflateTail) {
		return 0, io.EOF
	}
	r.tail++
	return inflateTail[r.tail-1], nil
}

// inflater is a pooled decompressor and its source.
type inflater struct {
	src twoPart
	r   io.ReadCloser // a flate.Resetter
}

var inflaters = sync.Pool{New: func() any {
	f := &inflater{}
	f.r = flate.NewReader(&f.src)
	return f
}}

// Inflate appends to dst the message whose permessage-deflate payload is
// z (RFC 7692 §7.2.2), decompressed, at most limit bytes of it: a message
// that decompresses to more fails with ErrOverLimit once limit+1 bytes
// are out (AppendAll), whatever z claims, and z that is not a deflate
// stream with ErrInflate. z is only read.
func Inflate(dst, z []byte, limit int64) ([]byte, error) {
	f := inflaters.Get().(*inflater)
	defer func() {
		f.src = twoPart{} // the pool keeps no reference to z
		inflaters.Put(f)
	}()
	f.src = twoPart{p: z}
	if err := f.r.(flate.Resetter).Reset(&f.src, nil); err != nil {
		return dst, ErrInflate
	}
	dst, err := AppendAll(dst, f.r, limit)
	if err != nil && err != ErrOverLimit {
		err = ErrInflate
	}
	return dst, err
}

// AppendAll appends to dst what r holds, to its end: limit bytes at most,
// else it fails with ErrOverLimit once it has read one more, whatever r
// would give (a message decompressed as it is read may be far longer
// than its frames). r's other errors are returned as they are.
func AppendAll(dst []byte, r io.Reader, limit int64) ([]byte, error) {
	start := len(dst)
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		room := dst[len(dst):cap(dst)]
		if over := int64(len(dst)-start+len(room)) - (limit + 1); over > 0 {
			room = room[:int64(len(room))-over]
		}
		n, err := r.Read(room)
		dst = dst[:len(dst)+n]
		if int64(len(dst)-start) > limit {
			return dst, ErrOverLimit
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}
