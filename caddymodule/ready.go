package caddymodule

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"
)

// readyWait bounds how long announceReady waits for the issuer to answer.
const readyWait = time.Minute

// announceReady waits until the identity server answers its discovery
// document at issuer, then logs that the gateway is ready and writes one
// plain line to w (the process's standard error) saying where to open it:
// a newcomer running the demo sees it among the JSON log lines. Only for an
// issuer on this machine (localhost or a loopback address): a public
// issuer's name may not resolve from inside, and production has no one
// waiting for the line. It gives up silently after readyWait or when ctx
// ends (a reload, a stop).
func announceReady(ctx context.Context, log *zap.Logger, issuer string, w io.Writer) {
	u, err := url.Parse(issuer)
	if err != nil || !loopbackHost(u.Hostname()) {
		return
	}
	open := strings.TrimSuffix(issuer, "/") + "/"
	discovery := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
	client := &http.Client{Timeout: 2 * time.Second}
	ctx, cancel := context.WithTimeout(ctx, readyWait)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, discovery, nil)
		if err != nil {
			return
		}
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				log.Info("gatehouse ready", zap.String("open", open))
				_, _ = fmt.Fprintf(w, "\nGatehouse is ready: open %s\n\n", open)
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// loopbackHost reports whether host names this machine: localhost (or a
// name under it) or a loopback address.
func loopbackHost(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
