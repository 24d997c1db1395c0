package wshandler

import (
	"context"
	"sync"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
)

// What a reload did to the sessions, in one log line: the new
// configuration's handlers count the sessions they kept (and those of
// them a narrower configuration changed) as they take their Gateways;
// the old configuration's, as their Cleanup drains a Gateway no handler
// took, the sessions they close; the last of the old configuration's
// handlers to clean up logs the sum. The metric counts as it goes.
var tally struct {
	sync.Mutex
	kept, changed, closed int
	counted               bool                    // a reload counted something since the last line
	handlers              map[context.Context]int // the live handlers, by their configuration's context
	log                   *zap.Logger             // the newest handler's
}

// tallyJoin counts h, of the configuration whose context is cfg, as live.
func tallyJoin(cfg context.Context, log *zap.Logger) {
	tally.Lock()
	defer tally.Unlock()
	if tally.handlers == nil {
		tally.handlers = map[context.Context]int{}
	}
	tally.handlers[cfg]++
	tally.log = log
}

// reloadOutcome counts what a reload did to one handler's sessions.
func reloadOutcome(kept, changed, closed int) {
	reloadSessions.WithLabelValues("kept").Add(float64(kept))
	reloadSessions.WithLabelValues("changed").Add(float64(changed))
	reloadSessions.WithLabelValues("closed").Add(float64(closed))
	tally.Lock()
	defer tally.Unlock()
	tally.kept += kept
	tally.changed += changed
	tally.closed += closed
	tally.counted = true
}

// tallyLeave counts a handler of the configuration whose context is cfg
// as cleaned up; the last one logs what the reload did, unless the
// process exits (the drain says so then).
func tallyLeave(cfg context.Context) {
	tally.Lock()
	defer tally.Unlock()
	if tally.handlers[cfg]--; tally.handlers[cfg] > 0 {
		return
	}
	delete(tally.handlers, cfg)
	if !tally.counted || caddy.Exiting() {
		return
	}
	tally.log.Info("ws reload", zap.Int("kept", tally.kept), zap.Int("changed", tally.changed), zap.Int("closed", tally.closed))
	tally.kept, tally.changed, tally.closed, tally.counted = 0, 0, 0, false
}
