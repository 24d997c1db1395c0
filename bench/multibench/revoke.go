//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// pushTimeout bounds the wait for the last session's end after the last
// revocation: the verifier's poll (5s), a recheck (3s) and a walk (1s),
// doubled.
const pushTimeout = 20 * time.Second

// session is a socket on the gateway, authenticated with one access
// token, subscribed to its Identify; ended is closed when the gateway
// pushes the end of its authority.
type session struct {
	conn    *websocket.Conn
	token   string
	revoked time.Time // when its token's revocation was sent
	endedAt time.Time
	ended   chan struct{}
}

// identifyPush is what the reader looks for: the gateway's Identify
// Publish without a TransactionID.
type identifyPush struct {
	Controller    string          `json:"Controller"`
	Topic         string          `json:"Topic"`
	Action        string          `json:"Action"`
	TransactionID json.RawMessage `json:"TransactionID"`
	Data          struct {
		Result string `json:"Result"`
	} `json:"Data"`
}

// openSession opens a socket on base's gateway with token on the upgrade,
// subscribes to Identify and waits for the confirmation, then reads until
// the push that ends its authority.
func openSession(base, token string) (*session, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, Subprotocols: []string{"ServiceJson"}}
	h := http.Header{"Authorization": {"Bearer " + token}}
	conn, resp, err := d.Dial("ws"+strings.TrimPrefix(base, "http")+"/ws?version=1.1", h)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("dialing the gateway: %w (%s)", err, resp.Status)
		}
		return nil, fmt.Errorf("dialing the gateway: %w", err)
	}
	s := &session{conn: conn, token: token, ended: make(chan struct{})}
	if err := conn.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Auth","Topic":"Identify","Action":"Sub","TransactionID":1}`)); err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, raw, err := conn.ReadMessage()
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("waiting for the Identify confirmation: %w", err)
		}
		var m identifyPush
		if json.Unmarshal(raw, &m) == nil && m.Topic == "Identify" && string(m.TransactionID) == "1" {
			break
		}
	}
	conn.SetReadDeadline(time.Time{})
	go s.read()
	return s, nil
}

// read waits for the Identify push that ends the session's authority.
func (s *session) read() {
	for {
		_, raw, err := s.conn.ReadMessage()
		if err != nil {
			return
		}
		var m identifyPush
		if json.Unmarshal(raw, &m) == nil && m.Controller == "Auth" && m.Topic == "Identify" &&
			m.Action == "Publish" && len(m.TransactionID) == 0 && m.Data.Result != "Success" {
			s.endedAt = time.Now()
			close(s.ended)
			return
		}
	}
}

// measureRevocations opens n sessions on the gateway of the instance
// socketOn, each with an access token of one family minted on the first
// instance, then revokes each token at the first instance's revocation
// endpoint, a random 0 to 2*spacing apart (so that the revocations fall
// at every point of the verifiers' poll), and returns, per session, the
// time from sending its revocation to the push that ended it.
func measureRevocations(ctx context.Context, c *client, d *deployment, socketOn, n int, spacing time.Duration) ([]time.Duration, error) {
	issuer := d.bases[0]
	tok, err := c.login(ctx, d, issuer)
	if err != nil {
		return nil, fmt.Errorf("login: %w", err)
	}
	sessions := make([]*session, 0, n)
	defer func() {
		for _, s := range sessions {
			s.conn.Close()
		}
	}()
	for range n {
		if tok, err = c.refresh(ctx, issuer, tok.RefreshToken); err != nil {
			return nil, fmt.Errorf("minting an access token: %w", err)
		}
		s, err := openSession(d.bases[socketOn], tok.AccessToken)
		if err != nil {
			return nil, err
		}
		sessions = append(sessions, s)
	}
	var mu sync.Mutex
	var sendErr error
	var wg sync.WaitGroup
	for _, s := range sessions {
		time.Sleep(time.Duration(rand.Int64N(int64(2 * spacing))))
		mu.Lock()
		s.revoked = time.Now()
		mu.Unlock()
		// Sent without waiting for the answer, so that a slow answer
		// does not delay the next revocation.
		wg.Go(func() {
			err := c.post(ctx, issuer, "/connect/revocation", url.Values{"token": {s.token}, "client_id": {appID}}, "", "", nil)
			if err != nil {
				mu.Lock()
				sendErr = errors.Join(sendErr, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if sendErr != nil {
		return nil, fmt.Errorf("revoking: %w", sendErr)
	}
	deadline := time.After(pushTimeout)
	latencies := make([]time.Duration, 0, n)
	for i, s := range sessions {
		select {
		case <-s.ended:
			mu.Lock()
			latencies = append(latencies, s.endedAt.Sub(s.revoked))
			mu.Unlock()
		case <-deadline:
			return nil, fmt.Errorf("session %d of %d: no end of its authority %v after the last revocation", i+1, n, pushTimeout)
		}
	}
	return latencies, nil
}
