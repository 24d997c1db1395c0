package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/identity/keys"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/internal/contain"
)

// auditWriteFailures counts the audit records (and checkpoints) the log
// did not take, and the checkpoints the store did not.
var auditWriteFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "gatehouse_audit_write_failures_total",
	Help: "Audit writes that failed, by target: log (a record or checkpoint lost from the chain) or store (a checkpoint the store did not keep).",
}, []string{"target"})

// auditRuns holds the process's audit writer, so that it survives a reload
// as the store does: Caddy provisions the new configuration before it
// cleans up the old one, both hold the same run, and its records go to
// the log of the configuration provisioned last. A reload that changes
// what the run was started with (the store, the instance, the audit
// block) starts a new run, which names the old run's last checkpoint;
// the old one closes with its final checkpoint when the old configuration
// is cleaned up.
var auditRuns = caddy.NewUsagePool()

// auditRun is one run of the audit chain and what it holds.
type auditRun struct {
	w        *audit.Writer
	sink     *switchSink
	snap     *snapshotter // the daily entitlement snapshot (audit_snapshot.go)
	storeKey string
	cancel   context.CancelFunc
	loops    sync.WaitGroup
	log      *zap.Logger
}

// Destruct writes the run's final checkpoint, stops its loops and
// releases its store.
func (r *auditRun) Destruct() error {
	r.cancel()
	r.loops.Wait()
	err := r.w.Close()
	if err != nil {
		err = fmt.Errorf("closing the audit run: %w", err)
	}
	return errors.Join(err, releaseStore(r.storeKey))
}

// switchSink is the run's sink: a zap core of Caddy's logging that each
// configuration provisioned replaces with its own.
type switchSink struct{ core atomic.Pointer[zapcore.Core] }

func (s *switchSink) zap() audit.ZapSink {
	return audit.ZapSink{Core: *s.core.Load(), LoggerName: AuditLoggerName}
}

// WriteRecord implements audit.Sink.
func (s *switchSink) WriteRecord(r *audit.Record) error { return s.zap().WriteRecord(r) }

// WriteRecords implements audit.BatchSink.
func (s *switchSink) WriteRecords(rs []*audit.Record) error { return s.zap().WriteRecords(rs) }

// Sync implements audit.Syncer.
func (s *switchSink) Sync() error { return s.zap().Sync() }

var (
	_ audit.BatchSink = (*switchSink)(nil)
	_ audit.Syncer    = (*switchSink)(nil)
)

// chainModule names the audit logger for Caddy's logging, which picks a
// logger's logs by module id.
type chainModule struct{}

func (chainModule) CaddyModule() caddy.ModuleInfo { return caddy.ModuleInfo{ID: AuditLoggerName} }

// startAudit checks the logging configuration and acquires the process's
// audit run, starting it when none with the same settings runs, and
// points its sink at this configuration's log.
func (a *App) startAudit(ctx caddy.Context) error {
	if err := checkAuditLogging(ctx); err != nil {
		return err
	}
	if validating {
		return nil // a validation writes nothing
	}
	if err := RegisterOnce(ctx.GetMetricsRegistry(), auditWriteFailures); err != nil {
		return err
	}
	instance, err := a.Audit.instance()
	if err != nil {
		return err
	}
	pol, err := a.auditKeyPolicy()
	if err != nil {
		return err
	}
	au := a.Audit
	poolKey := fmt.Sprintf("%s|%s|%v|%s|%v|%x|%v", a.storeKey, instance, au.interval(), au.OnFailure, pol.Period, pol.EncryptionKey, au.flushDelay())
	core := ctx.Logger(chainModule{}).Core()
	v, _, err := auditRuns.LoadOrNew(poolKey, func() (caddy.Destructor, error) {
		return a.newAuditRun(ctx, instance, pol, core)
	})
	if err != nil {
		return err
	}
	run := v.(*auditRun)
	run.sink.core.Store(&core) // this configuration's log from now on
	pairs := a.clientPairs()
	run.snap.clients.Store(&pairs) // and its clients' pairs
	a.auditKey, a.audit, a.auditSnap = poolKey, run.w, run.snap
	return nil
}

// newAuditRun starts a run: the audit keys, the previous run's last
// checkpoint from the store, the writer and its loops.
func (a *App) newAuditRun(ctx context.Context, instance string, pol keys.AuditPolicy, core zapcore.Core) (*auditRun, error) {
	log := caddy.Log().Named("gatehouse.audit")
	st := a.store
	ak, err := keys.NewAuditKeys(st, pol, log)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := ak.Sync(sctx, time.Now()); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	var prev *audit.Checkpoint
	switch last, err := st.LastAuditCheckpoint(sctx, instance); {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return nil, fmt.Errorf("audit: %w", err)
	default:
		if len(last.Hash) != 32 {
			return nil, fmt.Errorf("audit: the store's last checkpoint of %q has a hash of %d bytes", instance, len(last.Hash))
		}
		prev = &audit.Checkpoint{Instance: last.Instance, Run: last.Run, Seq: last.Seq, Hash: [32]byte(last.Hash),
			Time: last.Time, KeyID: last.KeyID, Final: last.Final, JWS: last.JWS}
	}
	// The run holds the store too, so that it outlives the app that
	// started it.
	if _, _, err := stores.LoadOrNew(a.storeKey, func() (caddy.Destructor, error) {
		return nil, fmt.Errorf("store %s is not open", a.storeKey)
	}); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	r := &auditRun{sink: new(switchSink), storeKey: a.storeKey, cancel: stop, log: log,
		snap: &snapshotter{st: st, now: time.Now}}
	pairs := a.clientPairs()
	r.snap.clients.Store(&pairs)
	r.sink.core.Store(&core)
	r.w, err = audit.NewWriter(audit.Options{
		Instance:           instance,
		Sink:               r.sink,
		Signer:             ak,
		Previous:           prev,
		CheckpointInterval: a.Audit.interval(),
		FlushDelay:         a.Audit.flushDelay(),
		Logger:             log,
		RefuseWhenFailing:  a.Audit.OnFailure == AuditRefuse,
		OnCheckpoint:       func(c audit.Checkpoint) { storeCheckpoint(st, log, c) },
		OnWriteFailure: func(err error, n uint64) {
			auditWriteFailures.WithLabelValues("log").Inc()
			log.Error("writing an audit record", zap.Error(err), zap.Uint64("failures", n))
		},
	})
	if err != nil {
		stop()
		return nil, errors.Join(fmt.Errorf("audit: %w", err), releaseStore(a.storeKey))
	}
	log.Info("audit run started", zap.String("instance", instance), zap.String("run", r.w.Run()),
		zap.String("audit_kid", ak.KeyID()), zap.Bool("previous_checkpoint", prev != nil))
	drainer := &changeDrainer{st: st, claimant: instance + "/" + r.w.Run(), now: time.Now}
	r.loops.Add(4)
	contain.Go(log, "audit.changes", func() {
		defer r.loops.Done()
		contain.Loop(runCtx, log, "audit.changes", func(ctx context.Context) { drainer.run(ctx, r.w, log) })
	}, nil)
	contain.Go(log, "audit.checkpoints", func() {
		defer r.loops.Done()
		contain.Loop(runCtx, log, "audit.checkpoints", r.w.RunCheckpoints)
	}, nil)
	contain.Go(log, "audit.snapshot", func() {
		defer r.loops.Done()
		contain.Loop(runCtx, log, "audit.snapshot", func(ctx context.Context) { r.snap.run(ctx, r.w, log) })
	}, nil)
	contain.Go(log, "audit.keys", func() {
		defer r.loops.Done()
		contain.Loop(runCtx, log, "audit.keys", func(ctx context.Context) { ak.Run(ctx, time.Now) })
	}, nil)
	return r, nil
}

// storeCheckpoint keeps a checkpoint in the store. The writer calls it
// with its lock held, so it is bounded in time; a failure is counted and
// logged (the checkpoint stays in the log).
func storeCheckpoint(st store.Audit, log *zap.Logger, c audit.Checkpoint) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := st.AddAuditCheckpoint(ctx, store.AuditCheckpoint{Instance: c.Instance, Run: c.Run, Seq: c.Seq,
		Hash: c.Hash[:], Time: c.Time, KeyID: c.KeyID, Final: c.Final, JWS: c.JWS})
	if err != nil {
		auditWriteFailures.WithLabelValues("store").Inc()
		log.Error("storing an audit checkpoint", zap.Error(err), zap.String("run", c.Run), zap.Uint64("seq", c.Seq))
	}
}

// releaseAudit gives back the app's hold on the audit run; the last
// release closes it.
func (a *App) releaseAudit() error {
	if a.auditKey == "" {
		return nil
	}
	_, err := auditRuns.Delete(a.auditKey)
	a.auditKey, a.audit, a.auditSnap = "", nil, nil
	if err != nil {
		return fmt.Errorf("releasing the audit run: %w", err)
	}
	return nil
}

// AuditWriter returns the process's audit writer, which every handler
// appends its records to; nil when the audit is off, before Provision and
// after Cleanup. Handlers check Refusing before they admit a new session,
// login or token.
func (a *App) AuditWriter() *audit.Writer {
	if a == nil {
		return nil
	}
	return a.audit
}
