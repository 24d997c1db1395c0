// Package contain runs the goroutines Gatehouse starts so that a panic in
// one ends only its own unit of work, never the process: Caddy recovers a
// panic in a handler's own goroutine (net/http does), not in the
// goroutines a handler starts, where one panic would end every socket, the
// identity server and the query service at once.
//
// Every goroutine the product starts goes through Go (a check in this
// package's tests lists the go statements of the module and fails on any
// outside it). A panic is recovered, logged at Error with its stack,
// counted by component (SetCounter: gatehouse_panics_total), and the
// goroutine's cleanup runs: a socket is closed, a request answered, a
// loop restarted after a pause (Loop). Recover does the same in a
// goroutine that is not ours (a request's), deferred by the handler.
//
// Code that holds a lock where a panic may happen releases it in a
// deferred call, so that a recovered panic leaves no lock held.
//
// Point marks a place where a test may inject a panic; it does nothing
// unless the binary is built with the gatehouse_faults tag (fault.go).
//
// It imports nothing of Gatehouse's and no Caddy.
package contain

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// fallback logs the panics of goroutines started without a logger.
var fallback atomic.Pointer[zap.Logger]

// SetLogger sets the logger of the panics of goroutines started without
// one (the Caddy glue sets Caddy's); nil: zap.L().
func SetLogger(log *zap.Logger) { fallback.Store(log) }

// counter receives each recovered panic's component; nil counts nothing.
var counter atomic.Pointer[func(component string)]

// SetCounter has f count each recovered panic by component (the Caddy glue
// sets it once, to gatehouse_panics_total); nil stops counting.
func SetCounter(f func(component string)) {
	if f == nil {
		counter.Store(nil)
		return
	}
	counter.Store(&f)
}

// Go runs fn in a new goroutine. A panic in fn is recovered (report), and
// then cleanup runs, if not nil, to end the unit of work fn was doing (a
// socket, a loop's iteration). A panic in cleanup is recovered and
// reported as well, never passed on.
func Go(log *zap.Logger, component string, fn func(), cleanup func()) {
	go func() {
		defer Recover(log, component, cleanup)
		fn()
	}()
}

// Recover, deferred directly (defer contain.Recover(...)), recovers a
// panic of the function that deferred it, reports it, and runs cleanup.
// Without a panic it does nothing.
func Recover(log *zap.Logger, component string, cleanup func()) {
	v := recover()
	if v == nil {
		return
	}
	report(log, component, v, debug.Stack())
	if cleanup != nil {
		defer func() {
			if v := recover(); v != nil {
				report(log, component+".cleanup", v, debug.Stack())
			}
		}()
		cleanup()
	}
}

// AfterFunc is time.AfterFunc with f contained as Go has it.
func AfterFunc(log *zap.Logger, component string, d time.Duration, f func()) *time.Timer {
	return time.AfterFunc(d, func() {
		defer Recover(log, component, nil)
		f()
	})
}

// ContextAfterFunc is context.AfterFunc with f contained as Go has it.
func ContextAfterFunc(ctx context.Context, log *zap.Logger, component string, f func()) (stop func() bool) {
	return context.AfterFunc(ctx, func() {
		defer Recover(log, component, nil)
		f()
	})
}

// report logs a recovered panic at Error with its stack and counts it.
// The value is formatted with %v: a panic's value is ours, never a token.
func report(log *zap.Logger, component string, v any, stack []byte) {
	if log == nil {
		log = fallback.Load()
	}
	if log == nil {
		log = zap.L()
	}
	log.Error("panic recovered", zap.String("component", component),
		zap.String("panic", fmt.Sprint(v)), zap.ByteString("stack", stack))
	if f := counter.Load(); f != nil {
		(*f)(component)
	}
}

// Backoff bounds for Loop's restarts (variables for the tests).
var (
	firstPause = time.Second
	maxPause   = time.Minute
)

// Loop runs fn until it returns or ctx ends: a panic in fn is reported
// and fn runs again after a pause that doubles from a second up to a
// minute (and falls back to a second once fn has run a minute without
// one). It returns when fn returns, or when ctx ends during a pause. It
// runs in the calling goroutine (start it with Go).
func Loop(ctx context.Context, log *zap.Logger, component string, fn func(context.Context)) {
	pause := firstPause
	for {
		began := time.Now()
		if !runOnce(ctx, log, component, fn) {
			return
		}
		if time.Since(began) > maxPause {
			pause = firstPause
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		pause = min(2*pause, maxPause)
	}
}

// runOnce runs fn; true when it panicked (reported).
func runOnce(ctx context.Context, log *zap.Logger, component string, fn func(context.Context)) (panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			report(log, component, v, debug.Stack())
			panicked = true
		}
	}()
	fn(ctx)
	return false
}
