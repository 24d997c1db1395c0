package wsframe

import "encoding/binary"

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
