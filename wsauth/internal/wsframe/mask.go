package wsframe

import (
	"encoding/binary"
	"math/rand/v2"
)

// AppendMasked appends data masked with key (RFC 6455 §5.3: byte i of the
// payload is xored with key[i mod 4]), eight bytes at a time.
func AppendMasked(b, data []byte, key [4]byte) []byte {
	start := len(b)
	b = append(b, data...)
	p := b[start:]
	k := uint64(binary.LittleEndian.Uint32(key[:]))
	k |= k << 32
	i := 0
	for ; i+8 <= len(p); i += 8 {
		binary.LittleEndian.PutUint64(p[i:], binary.LittleEndian.Uint64(p[i:])^k)
	}
	for ; i < len(p); i++ {
		p[i] ^= key[i&3]
	}
	return b
}

// writeMaskedLocked writes a masked frame (its first byte first) larger than a batch (the
// pending batch went first), masking it a batch's room at a time into a
// batch buffer: a masked copy of the whole frame would be garbage of its
// size. c.mu held.
func (c *Conn) writeMaskedLocked(first byte, data []byte) error {
	var key [4]byte
	binary.LittleEndian.PutUint32(key[:], rand.Uint32())
	bp := batchBufs.Get().(*[]byte)
	defer func() {
		*bp = (*bp)[:0]
		batchBufs.Put(bp)
	}()
	if err := c.deadlineLocked(c.flushDeadlineLocked()); err != nil {
		return err
	}
	defer c.writing.Store(false)
	b := AppendHeader((*bp)[:0], first, len(data), key[:])
	for off := 0; off < len(data); {
		k := min(len(data)-off, BatchBytes-len(b))
		// The key goes on where the last chunk left it (RFC 6455 §5.3:
		// byte i of the payload is masked with key[i mod 4]).
		var rk [4]byte
		for j := range rk {
			rk[j] = key[(off+j)&3]
		}
		b = AppendMasked(b, data[off:off+k], rk)
		off += k
		if _, err := c.nc.Write(b); err != nil {
			c.err = err
			return err
		}
		b = b[:0]
	}
	return nil
}
