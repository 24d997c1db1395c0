package verify

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// revocationSet is an immutable snapshot of revoked token ids.
type revocationSet struct {
	jtis map[string]struct{}
}

func (v *Verifier) isRevoked(jti string) bool {
	set := v.revoked.Load()
	if set == nil || jti == "" {
		return false
	}
	_, ok := set.jtis[jti]
	return ok
}

// refreshRevocations re-reads the revocation list. On failure the last
// list keeps applying, and the verifier reports itself stale.
func (v *Verifier) refreshRevocations(ctx context.Context) error {
	now := v.cfg.Now()
	list, err := v.cfg.Revocations.Revocations(ctx, now)
	if err != nil {
		if !v.stale.Swap(true) {
			v.cfg.Logger.Warn("revocation list unavailable: the last list keeps applying", zap.Error(err))
		}
		v.stats.revocationErrors.Add(1)
		return err
	}
	set := &revocationSet{jtis: make(map[string]struct{}, len(list))}
	for _, r := range list {
		set.jtis[r.JTI] = struct{}{}
	}
	v.revoked.Store(set)
	if v.stale.Swap(false) {
		v.cfg.Logger.Info("revocation list available again", zap.Int("revoked", len(list)))
	}
	return nil
}

// RefreshRevocations re-reads the revocation list now, e.g. right after
// this instance revoked a token.
func (v *Verifier) RefreshRevocations(ctx context.Context) error {
	if v.cfg.Revocations == nil {
		return nil
	}
	return v.refreshRevocations(ctx)
}

// Run keeps the revocation list fresh until ctx ends. Without revocations
// configured it returns at once.
func (v *Verifier) Run(ctx context.Context) {
	if v.cfg.Revocations == nil {
		return
	}
	t := time.NewTicker(v.cfg.RevocationRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rctx, cancel := context.WithTimeout(ctx, v.cfg.RevocationRefresh)
			_ = v.refreshRevocations(rctx)
			cancel()
		}
	}
}

// RevocationsStale reports whether the last refresh of the revocation list
// failed (the previous list is still applied).
func (v *Verifier) RevocationsStale() bool { return v.stale.Load() }
