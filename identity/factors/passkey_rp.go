package factors

import (
	"context"
	"crypto/cipher"
	"crypto/sha256"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/gatehouse/gatehouse/identity/store"
)

// The relying party: its id and origin from the issuer, and users and
// their passkeys as go-webauthn sees them.

// passkeyState is what a Service keeps for passkeys.
type passkeyState struct {
	wa   *webauthn.WebAuthn // nil: passkeys are off
	aead cipher.AEAD        // seals ceremony states
	off  string             // why passkeys are off
}

// newPasskeys is the passkey state of cfg: off, with the reason, when cfg
// configures no passkeys or names an issuer URL no relying party can be
// derived from; an error when it configures them wrong.
func newPasskeys(cfg Config) (passkeyState, error) {
	wa, off, err := newRelyingParty(cfg)
	if err != nil || wa == nil {
		return passkeyState{off: off}, err
	}
	aead, err := newCeremonyAEAD(cfg.CeremonyKey)
	if err != nil {
		return passkeyState{}, fmt.Errorf("passkeys: %w", err)
	}
	return passkeyState{wa: wa, aead: aead}, nil
}

// newRelyingParty is the WebAuthn relying party of cfg, or nil and the
// reason passkeys are off.
func newRelyingParty(cfg Config) (*webauthn.WebAuthn, string, error) {
	switch {
	case cfg.Passkeys == nil || cfg.Users == nil:
		return nil, "no passkey store", nil
	case cfg.CeremonyKey == nil:
		return nil, "no ceremony key", nil
	case cfg.IssuerURL == "":
		return nil, "no issuer URL", nil
	case len(cfg.CeremonyKey) != CeremonyKeySize:
		return nil, "", fmt.Errorf("passkeys: the ceremony key must be %d bytes", CeremonyKeySize)
	}
	u, err := url.Parse(cfg.IssuerURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" {
		return nil, "", fmt.Errorf("passkeys: issuer URL %q is not an http(s) URL", cfg.IssuerURL)
	}
	host := strings.ToLower(u.Hostname())
	if net.ParseIP(host) != nil {
		return nil, "the issuer's host is an IP address, which WebAuthn does not allow as a relying party", nil
	}
	if u.Scheme == "http" && host != "localhost" && !strings.HasSuffix(host, ".localhost") {
		return nil, "the issuer is not https (browsers allow WebAuthn over http on localhost only)", nil
	}
	rpID := cfg.RPID
	if rpID == "" {
		rpID = host
	}
	if rpID != host && !strings.HasSuffix(host, "."+rpID) {
		return nil, "", fmt.Errorf("passkeys: relying party id %q is not the issuer's host %q or a suffix of it", rpID, host)
	}
	name := cfg.RPName
	if name == "" {
		name = cfg.Issuer
	}
	origin := u.Scheme + "://" + strings.ToLower(u.Host)
	wa, err := webauthn.New(&webauthn.Config{
		RPID: rpID, RPDisplayName: name, RPOrigins: []string{origin},
		AttestationPreference: protocol.PreferNoAttestation,
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey: protocol.ResidentKeyRequirementPreferred, UserVerification: protocol.VerificationPreferred,
		},
		Timeouts: webauthn.TimeoutsConfig{
			Login:        webauthn.TimeoutConfig{Timeout: CeremonyLifetime, TimeoutUVD: CeremonyLifetime},
			Registration: webauthn.TimeoutConfig{Timeout: CeremonyLifetime, TimeoutUVD: CeremonyLifetime},
		},
	})
	if err != nil {
		return nil, "", fmt.Errorf("passkeys: %w", err)
	}
	return wa, "", nil
}

// PasskeysOff is "" when passkeys are available, else why they are not.
func (s *Service) PasskeysOff() string { return s.pk.off }

// userHandle is the WebAuthn user handle of subject (the user.id an
// authenticator keeps with a discoverable credential): a hash, so that it
// is 32 bytes whatever the subject, and says nothing of the user.
func userHandle(subject string) []byte {
	h := sha256.Sum256([]byte("gatehouse passkey user v1\x00" + subject))
	return h[:]
}

// waUser is a user as go-webauthn sees one.
type waUser struct {
	user  store.User
	creds []webauthn.Credential
}

func (u waUser) WebAuthnID() []byte                         { return userHandle(u.user.Subject) }
func (u waUser) WebAuthnName() string                       { return u.user.Username }
func (u waUser) WebAuthnCredentials() []webauthn.Credential { return u.creds }
func (u waUser) WebAuthnDisplayName() string {
	if u.user.DisplayName != "" {
		return u.user.DisplayName
	}
	return u.user.Username
}

// credential is p as go-webauthn checks an assertion against it.
func credential(p store.Passkey) webauthn.Credential {
	flags := protocol.FlagUserPresent
	if p.BackupEligible {
		flags |= protocol.FlagBackupEligible
	}
	if p.BackupState {
		flags |= protocol.FlagBackupState
	}
	ts := make([]protocol.AuthenticatorTransport, len(p.Transports))
	for i, t := range p.Transports {
		ts[i] = protocol.AuthenticatorTransport(t)
	}
	return webauthn.Credential{
		ID: p.ID, PublicKey: p.PublicKey, Transport: ts, Flags: webauthn.NewCredentialFlags(flags),
		Authenticator: webauthn.Authenticator{AAGUID: p.AAGUID, SignCount: p.SignCount},
	}
}

// webauthnUser is user with their passkeys.
func (s *Service) webauthnUser(ctx context.Context, user store.User) (waUser, []store.Passkey, error) {
	keys, err := s.cfg.Passkeys.Passkeys(ctx, user.Subject)
	if err != nil {
		return waUser{}, nil, err
	}
	u := waUser{user: user, creds: make([]webauthn.Credential, len(keys))}
	for i, p := range keys {
		u.creds[i] = credential(p)
	}
	return u, keys, nil
}
