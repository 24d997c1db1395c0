package identity

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/account"
	"github.com/gatehouse/gatehouse/identity/authorize"
	"github.com/gatehouse/gatehouse/identity/logout"
	"github.com/gatehouse/gatehouse/identity/session"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/web"
)

// Paths of the browser flows' forms, under the issuer (not in discovery:
// the authorization endpoint's pages post to them).
const (
	PathLogin   = "/connect/login"
	PathConsent = "/connect/consent"
	// PathFactor is where the second-factor form posts.
	PathFactor = "/connect/login/factor"
	// PathAccount is the user's security page: second factors.
	PathAccount = "/connect/account"
)

// browserSecretName names the server secret the browser flows derive their
// keys from (anti-forgery tokens, sealed requests); sealed like the
// signing keys, shared by every instance.
const browserSecretName = "browser-flows-v1"

// browserStore is the store's browser roles, or nil when the backend does
// not implement them (store.BrowserStore is apart from store.Store, so a
// backend may come without it).
func browserStore(st store.Store) store.BrowserStore {
	bs, _ := st.(store.BrowserStore)
	return bs
}

// routeBrowser adds the authorization endpoint and its forms when the
// store keeps what they need; otherwise they answer 501, and the log says
// why.
func (s *Server) routeBrowser(ctx context.Context, prefix string) error {
	bs := browserStore(s.store)
	if bs == nil {
		s.log.Warn("the store does not implement the browser flows' roles (store.BrowserStore): "+
			"the authorization endpoint and the authorization_code grant are not available",
			zap.String("store", fmt.Sprintf("%T", s.store)))
		s.endpoints[prefix+PathAuthorize] = s.notAvailable("authorization")
		s.endpoints[prefix+PathEndSession] = s.notAvailable(logout.EndSessionName)
		s.endpoints[prefix+PathCheckSession] = s.notAvailable(logout.CheckSessionName)
		return s.routeDevice(prefix, nil, nil, nil, nil)
	}
	secret, err := loadSecret(ctx, s.store, browserSecretName, s.cfg.Keys.EncryptionKey)
	if err != nil {
		return fmt.Errorf("loading the browser flows' secret: %w", err)
	}
	sessions, err := session.New(session.Config{
		Store: bs, Issuer: s.cfg.Issuer, IdleTimeout: s.cfg.SessionIdleTimeout, Lifetime: s.cfg.SessionLifetime, Now: s.cfg.Now,
		Ended: func(ctx context.Context, subject string, authTime time.Time) (bool, error) {
			return s.store.AccessTokenRevoked(ctx, "", "", subject, authTime)
		},
	})
	if err != nil {
		return err
	}
	guard, err := session.NewGuard(derive(secret, "csrf"), s.cfg.Issuer)
	if err != nil {
		return err
	}
	pages, err := web.New("", s.pageHSTS())
	if err != nil {
		return err
	}
	ep, err := authorize.New(authorize.Config{
		Keys:   s.keys.Source(s.cfg.Now),
		Issuer: s.cfg.Issuer, LoginPath: prefix + PathLogin, ConsentPath: prefix + PathConsent,
		FactorPath: prefix + PathFactor, Factors: s.factors,
		Clients: s.clients, Tokens: s.tokens, Store: browserBacked{s.store, bs}, Sessions: sessions, Guard: guard,
		Passwords: s.passwords, Pages: pages, SealKey: derive(secret, "pending request"), ClientIP: s.cfg.ClientIP,
		Failed: s.countFailed, Issued: s.countIssued, Logger: s.log, Audit: s.audit, Now: s.cfg.Now,
	})
	if err != nil {
		return err
	}
	s.endpoints[prefix+PathAuthorize] = ep
	s.endpoints[prefix+PathLogin] = http.HandlerFunc(ep.ServeLogin)
	s.endpoints[prefix+PathConsent] = http.HandlerFunc(ep.ServeConsent)
	s.endpoints[prefix+PathFactor] = http.HandlerFunc(ep.ServeFactor)
	acct, err := account.New(account.Config{
		Path: prefix + PathAccount, Sessions: sessions, Guard: guard, Passwords: s.passwords, Factors: s.factors,
		Users: s.store, Pages: pages, SealKey: derive(secret, "account enrolment"), ClientIP: s.cfg.ClientIP,
		Logger: s.log, Audit: s.audit, Now: s.cfg.Now,
	})
	if err != nil {
		return err
	}
	s.endpoints[prefix+PathAccount] = acct

	s.notifier = logout.NewNotifier(logout.NotifierConfig{Client: s.cfg.BackchannelClient, Logger: s.log})
	out, err := logout.New(logout.Config{
		Issuer: s.cfg.Issuer, Path: prefix + PathEndSession, Clients: s.clients, Sessions: sessions, Guard: guard,
		Pages: pages, Keys: s.keys.Source(s.cfg.Now), Tokens: s.tokens, Families: bs, Users: s.store,
		Notifier: s.notifier, Revoked: s.verifier.RevokedHere, Failed: s.countFailed, Logger: s.log, Audit: s.audit,
	})
	if err != nil {
		return err
	}
	s.endpoints[prefix+PathEndSession] = out
	s.endpoints[prefix+PathCheckSession] = http.HandlerFunc(out.ServeCheckSession)
	return s.routeDevice(prefix, secret, sessions, guard, pages)
}

// browserBacked is a store with its browser roles.
type browserBacked struct {
	store.Store
	store.BrowserStore
}

// pageHSTS is the Strict-Transport-Security of the pages: the configured
// value over https only (browsers ignore it over http anyway).
func (s *Server) pageHSTS() string {
	if issuerScheme(s.cfg.Issuer) == "https" {
		return s.cfg.HSTS
	}
	return ""
}

// derive is a 32-byte key for purpose, derived from a server secret.
func derive(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("gatehouse browser key v1\x00" + purpose))
	return m.Sum(nil)
}
