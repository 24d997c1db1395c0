package wsframe

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// BatchBytes bounds a batch: frames are written once this much is
// pending. A frame larger than it is written alone.
const BatchBytes = 64 << 10

// batchBufs are the batches' buffers, held only while frames are pending:
// an idle connection holds none.
var batchBufs = sync.Pool{New: func() any { b := make([]byte, 0, BatchBytes+MaxHeader); return &b }}

// GetBatch takes a batch buffer from the pool: empty, with room for
// BatchBytes of frames and a header. Whoever frames messages into it hands
// it to AppendFrames or WriteFrames, or gives it back (PutBatch).
func GetBatch() *[]byte { return batchBufs.Get().(*[]byte) }

// PutBatch gives bp, a batch buffer, back to the pool, emptied.
func PutBatch(bp *[]byte) {
	*bp = (*bp)[:0]
	batchBufs.Put(bp)
}

// AppendFrame adds a data frame (typ websocket.TextMessage or
// BinaryMessage) holding data to the batch, writing the batch first when
// the frame would overflow it; a frame larger than a batch is written at
// once. data is copied: the caller may reuse it on return. After a close
// frame it returns websocket.ErrCloseSent.
func (c *Conn) AppendFrame(typ int, data []byte) error {
	return c.appendFrame(FinalBit|byte(typ), data)
}

// appendFrame is AppendFrame of a frame whose first byte is first (FIN,
// the RSV bits, the opcode).
func (c *Conn) appendFrame(first byte, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	if c.closeSent {
		return websocket.ErrCloseSent
	}
	n := MaxHeader + len(data)
	alone := n > BatchBytes // unmasked: not copied; masked: a chunk at a time
	direct := alone && !c.client
	if len(c.pending) > 0 && (alone || len(c.pending)+n > cap(c.pending)) {
		// The batch goes first: a frame written alone must not overtake it.
		if err := c.flushLocked(); err != nil {
			return err
		}
	}
	if direct {
		// Alone, and not copied: the header and data in one writev.
		var hdr [MaxHeader]byte
		h := AppendHeader(hdr[:0], first, len(data), nil)
		bufs := net.Buffers{h, data}
		if err := c.deadlineLocked(c.flushDeadlineLocked()); err != nil {
			return err
		}
		_, err := bufs.WriteTo(c.nc)
		c.writing.Store(false)
		if err != nil {
			c.err = err
			return err
		}
		return nil
	}
	if alone {
		return c.writeMaskedLocked(first, data)
	}
	if c.pending == nil {
		c.pbuf = batchBufs.Get().(*[]byte)
		c.pending = *c.pbuf
	}
	if c.client {
		var key [4]byte
		binary.LittleEndian.PutUint32(key[:], rand.Uint32())
		c.pending = AppendHeader(c.pending, first, len(data), key[:])
		c.pending = AppendMasked(c.pending, data, key)
	} else {
		c.pending = AppendHeader(c.pending, first, len(data), nil)
		c.pending = append(c.pending, data...)
	}
	if len(c.pending) >= BatchBytes {
		return c.flushLocked()
	}
	return nil
}

// AppendFrames adds b, whole frames, to the batch, writing the batch
// first when b would overflow it. b is held in bp, a batch buffer
// (GetBatch), which the Conn takes over (it is given back to the pool, or
// kept as the batch's own).
func (c *Conn) AppendFrames(b []byte, bp *[]byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	give := func() {
		*bp = b[:0]
		batchBufs.Put(bp)
	}
	if c.err != nil {
		give()
		return c.err
	}
	if c.closeSent {
		give()
		return websocket.ErrCloseSent
	}
	if len(c.pending) > 0 && len(c.pending)+len(b) > cap(c.pending) {
		if err := c.flushLocked(); err != nil {
			give()
			return err
		}
	}
	if len(c.pending) == 0 {
		c.releaseLocked()
		c.pending, c.pbuf = b, bp
	} else {
		c.pending = append(c.pending, b...)
		give()
	}
	if len(c.pending) >= BatchBytes {
		return c.flushLocked()
	}
	return nil
}

// WriteFrames writes b, whole frames, after the batch so far, at once,
// within timeout. b is held in bp, a batch buffer (GetBatch), which goes
// back to the pool.
func (c *Conn) WriteFrames(b []byte, bp *[]byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() {
		*bp = b[:0]
		batchBufs.Put(bp)
	}()
	switch {
	case c.err != nil:
		return c.err
	case c.closeSent:
		return websocket.ErrCloseSent
	case len(c.pending) > 0:
		c.pending = append(c.pending, b...)
		return c.flushLocked()
	}
	return c.writeLocked(b, c.flushDeadlineLocked())
}

// Flush writes the batch, within timeout.
func (c *Conn) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flushLocked()
}

// flushLocked writes the batch, within timeout. c.mu held.
func (c *Conn) flushLocked() error {
	if len(c.pending) == 0 {
		return nil
	}
	err := c.writeLocked(c.pending, c.flushDeadlineLocked())
	c.releaseLocked()
	return err
}

// writeLocked writes b within dl. c.mu held.
func (c *Conn) writeLocked(b []byte, dl time.Time) error {
	if err := c.deadlineLocked(dl); err != nil {
		return err
	}
	_, err := c.nc.Write(b)
	c.writing.Store(false)
	if err != nil {
		c.err = err
		return err
	}
	return nil
}

// deadlineLocked starts a write (writing), sets the socket's write
// deadline to dl unless it is set already, and fails if the connection was
// aborted: checked after the deadline is set, so that either the check
// sees Abort's mark, or Abort sees the write under way and its past
// deadline comes after dl. The caller clears writing once the write
// returns. c.mu held.
func (c *Conn) deadlineLocked(dl time.Time) error {
	c.writing.Store(true)
	if !c.hasDl || !dl.Equal(c.applied) {
		if err := c.nc.SetWriteDeadline(dl); err != nil {
			c.writing.Store(false)
			c.err = err
			return err
		}
		c.applied, c.hasDl = dl, true
	}
	if c.aborted.Load() {
		c.writing.Store(false)
		c.err = errAborted
		return errAborted
	}
	return nil
}

// flushDeadlineLocked is the deadline of a flush starting now: timeout
// from now, or the one already set when it is at most an eighth of
// timeout earlier (a deadline costs a timer update; a flush per message
// would pay it per message). c.mu held.
func (c *Conn) flushDeadlineLocked() time.Time {
	now := time.Now()
	if c.hasDl && !c.applied.IsZero() && c.applied.Sub(now) >= c.timeout-c.timeout/8 {
		return c.applied
	}
	return now.Add(c.timeout)
}

// releaseLocked gives the batch's buffer back, once written. c.mu held.
func (c *Conn) releaseLocked() {
	if c.pending == nil {
		return
	}
	if cap(c.pending) <= BatchBytes+MaxHeader {
		*c.pbuf = c.pending[:0]
		batchBufs.Put(c.pbuf)
	}
	c.pending, c.pbuf = nil, nil
}
