//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// Reloads under the soak: every -reload-every (a minute by default) the
// gateway's configuration is loaded again through its admin endpoint, the
// same Caddyfile forced (Caddy skips a config it runs already otherwise),
// as an operator's `gatehouse reload --force` does. The gateway's Backend
// and Transport are unchanged, so every session is kept: a session closed
// by a reload (1012 at the client, gatehouse_ws_reload_sessions_total
// {outcome="closed"} at the gateway) is a failure of the run.

// reloadTimeout bounds one reload: the new configuration's provisioning
// (the identity server, its store) and the old one's cleanup.
const reloadTimeout = time.Minute

// reload loads the gateway's Caddyfile again through its admin endpoint.
func (in *instance) reload() error {
	body, err := os.ReadFile(in.gwCfg)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, in.admin+"/load", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "text/caddyfile")
	req.Header.Set("Cache-Control", "must-revalidate") // the same config: load it anyway
	resp, err := (&http.Client{Timeout: reloadTimeout}).Do(req)
	if err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("reload: %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// reloadOutcomes is the gateway's gatehouse_ws_reload_sessions_total by
// outcome (kept, changed, closed).
func (m *monitor) reloadOutcomes() map[string]float64 {
	out := map[string]float64{}
	m.metricsEach(func(name string, v float64) {
		if o, ok := strings.CutPrefix(name, `gatehouse_ws_reload_sessions_total{outcome="`); ok {
			out[strings.TrimSuffix(o, `"}`)] = v
		}
	})
	return out
}

// reloadReport prints what the reloads did: their number, and the sessions
// they kept and closed as the gateway counted them and as the clients saw
// them (closedByReload, 1012). Any closed is a failure of the run.
func (r *runState) reloadReport(m *monitor, before map[string]float64) {
	after := m.reloadOutcomes()
	fmt.Printf("config reloads: %d (failed: %d); sessions kept %.0f, changed %.0f, closed %.0f (gatehouse_ws_reload_sessions_total); closed with 1012 at the clients: %d\n",
		r.reloads.Load(), r.reloadFailures.Load(), after["kept"]-before["kept"], after["changed"]-before["changed"],
		after["closed"]-before["closed"], r.closedByReload.Load())
	fmt.Printf("token renewals asked again after a failure: %d\n", r.tokenRetries.Load())
	if after["closed"] > before["closed"] || r.closedByReload.Load() > 0 || r.reloadFailures.Load() > 0 {
		fmt.Println("FAIL: reloads closed sessions, or failed")
	}
}
