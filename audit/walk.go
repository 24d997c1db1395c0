package audit

// walk follows one run's records in file order, accepting each that
// continues the chain, and reports the first that does not, saying what
// happened to it.
func (v *verifier) walk(c *chain) {
	for _, e := range c.entries {
		r := e.rec
		if ComputeHash(r) != r.Hash {
			v.fail(c, Edited, e, r.Seq, "its content is not what its hash %s… says", hexShort(r.Hash))
			return
		}
		last := c.last()
		switch {
		case last == nil && r.Seq == 1 && r.Kind == KindRunStart:
		case last == nil:
			v.first(c, e)
			return
		case c.final:
			v.fail(c, Inserted, e, r.Seq, "after the run's final checkpoint")
			return
		case r.Seq == last.rec.Seq+1 && r.Prev == last.rec.Hash:
		default:
			v.misfit(c, e)
			return
		}
		if r.Kind == KindCheckpoint {
			cp, err := VerifyCheckpoint(r, v.opts.Keys)
			if err != nil {
				v.fail(c, ForgedCheckpoint, e, r.Seq, "%v", err)
				return
			}
			v.rep.Checkpoints++
			c.lastCkpt, c.final = r.Seq, cp.Final
		}
		c.accepted++
	}
}

// first reports a run whose first record in the files is not its first.
func (v *verifier) first(c *chain, e *entry) {
	r := e.rec
	switch {
	case r.Seq == 1:
		v.fail(c, Inserted, e, 1, "a run's first record that is a %.32q, not a run start", r.Kind)
	case len(c.bySeq[r.Seq]) > 1:
		v.fail(c, Inserted, e, r.Seq, "seq %d is in the files twice", r.Seq)
	case len(c.bySeq[1]) > 0:
		v.fail(c, Reordered, e, r.Seq, "ahead of the run's first record")
	default:
		v.fail(c, Removed, e, 1, "the run's records before seq %d are missing", r.Seq)
	}
}

// misfit says what happened at e, which does not continue the chain
// the accepted records make.
func (v *verifier) misfit(c *chain, e *entry) {
	r, last := e.rec, c.last()
	want := last.rec.Seq + 1
	switch {
	case len(c.bySeq[r.Seq]) > 1:
		// The seq is taken twice. Of two records with the same
		// predecessor, the one something vouches for is the chain's.
		if r.Seq == last.rec.Seq && r.Prev == last.rec.Prev && r.Hash != last.rec.Hash &&
			v.vouches(c, r) && !v.vouches(c, last.rec) {
			v.fail(c, Inserted, last, last.rec.Seq, "made to fit: the next records chain to another seq %d", r.Seq)
			return
		}
		v.fail(c, Inserted, e, r.Seq, "seq %d is in the files twice", r.Seq)
	case r.Seq > want && len(c.bySeq[want]) > 0:
		v.fail(c, Reordered, e, r.Seq, "ahead of seq %d, which comes later", want)
	case r.Seq > want:
		v.fail(c, Removed, e, want, "seq %d to %d are missing", want, r.Seq-1)
	case r.Seq < want:
		v.fail(c, Reordered, e, r.Seq, "behind seq %d", last.rec.Seq)
	case v.vouches(c, r) && last.rec.Kind != KindCheckpoint:
		// r is what its successor chained to, so its predecessor (not a
		// signed checkpoint) is not the record r chained to: that one was
		// rewritten, its hash computed again.
		v.fail(c, Edited, last, last.rec.Seq, "rewritten: seq %d chained to another hash", r.Seq)
	default:
		v.fail(c, Edited, e, r.Seq, "it chains to %s…, not to seq %d", hexShort(r.Prev), last.rec.Seq)
	}
}

// vouches reports whether something besides r's own hash stands for r:
// a record of the run chains to it, the store or a next run names it, or
// it is a checkpoint that verifies.
func (v *verifier) vouches(c *chain, r *Record) bool {
	if c.linked[r.Hash] || v.vouched[r.Hash] {
		return true
	}
	if r.Kind == KindCheckpoint {
		_, err := VerifyCheckpoint(r, v.opts.Keys)
		return err == nil
	}
	return false
}
