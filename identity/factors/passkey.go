package factors

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/users"
)

// Passkeys (WebAuthn Level 3 credentials): go-webauthn runs the
// ceremonies' checks (the challenge, the origin, the RP ID hash, the user
// presence flag, the signature); this package keeps the ceremony state
// between its two requests, sealed for the browser to carry
// (passkey_state.go), and the rules of its own: a passkey signs in only
// its owner, a sign count must grow, a challenge is spent once, and
// failures count as a wrong code does.

// Bounds and lifetimes of the passkey ceremonies.
const (
	// CeremonyLifetime is how long a ceremony's state stays valid: the
	// time the browser gives the user, too.
	CeremonyLifetime = 5 * time.Minute
	// MaxCeremonyState bounds a sealed state a form may send back.
	MaxCeremonyState = 48 << 10
	// MaxPasskeyResponse bounds the JSON of a PublicKeyCredential a
	// browser sends back.
	MaxPasskeyResponse = 64 << 10
	// CeremonyKeySize is the size of Config.CeremonyKey.
	CeremonyKeySize = 32
)

var (
	// ErrPasskeysOff: passkeys are not configured (no store, no key, or
	// an issuer URL no relying party can be derived from).
	ErrPasskeysOff = errors.New("passkeys are not available")
	// ErrCeremony: a ceremony's state is missing, tampered with, of
	// another kind or user, or expired; or the browser's response is
	// malformed. Not counted by the brute-force defence: nobody's key was
	// tried.
	ErrCeremony = errors.New("the passkey ceremony is invalid or expired")
	// ErrPasskeyName: a passkey's name is too long or not printable text.
	ErrPasskeyName = fmt.Errorf("a passkey's name is 1 to %d bytes of printable text", store.MaxPasskeyName)
)

// SubjectUsers finds users by subject (store.Users has it).
type SubjectUsers interface {
	UserBySubject(ctx context.Context, subject string) (store.User, error)
}

// Ceremony kinds, bound into the sealed state.
const (
	ceremonyRegister = "register"
	ceremonyLogin    = "login"
)

// usernameless is the subject a discoverable login's state is bound to.
const usernameless = "\x00usernameless"

// BeginPasskeyRegistration starts the registration of a passkey for
// user: the options for navigator.credentials.create (JSON, its
// "publicKey" member the PublicKeyCredentialCreationOptionsJSON), which
// exclude the user's passkeys, and the ceremony's sealed state, for
// FinishPasskeyRegistration. store.ErrTooManyPasskeys when the user has
// store.MaxPasskeys.
func (s *Service) BeginPasskeyRegistration(ctx context.Context, user store.User) ([]byte, string, error) {
	if s.pk.wa == nil {
		return nil, "", ErrPasskeysOff
	}
	u, keys, err := s.webauthnUser(ctx, user)
	if err != nil {
		return nil, "", err
	}
	if len(keys) >= store.MaxPasskeys {
		return nil, "", fmt.Errorf("%w (at most %d)", store.ErrTooManyPasskeys, store.MaxPasskeys)
	}
	creation, session, err := s.pk.wa.BeginRegistration(u,
		webauthn.WithExclusions(webauthn.Credentials(u.creds).CredentialDescriptors()),
		webauthn.WithResidentKeyRequirement(protocol.ResidentKeyRequirementPreferred))
	if err != nil {
		return nil, "", fmt.Errorf("beginning a passkey registration: %w", err)
	}
	return s.sealCeremony(creation, session, ceremonyRegister, user.Subject)
}

// FinishPasskeyRegistration checks the browser's response (the JSON of
// the PublicKeyCredential) to the ceremony of state, begun for user, and
// stores the new passkey under name. ErrCeremony for a state or response
// that does not open or parse; an error wrapping protocol's for one
// go-webauthn refuses; store.ErrAlreadyExists for a passkey registered
// already; ErrPasskeyName.
func (s *Service) FinishPasskeyRegistration(ctx context.Context, user store.User, state string, response []byte, name string) (store.Passkey, error) {
	if s.pk.wa == nil {
		return store.Passkey{}, ErrPasskeysOff
	}
	name, err := passkeyName(name)
	if err != nil {
		return store.Passkey{}, err
	}
	session, err := s.openCeremony(state, ceremonyRegister, user.Subject)
	if err != nil {
		return store.Passkey{}, err
	}
	parsed, err := parseCreation(response)
	if err != nil {
		return store.Passkey{}, err
	}
	u, _, err := s.webauthnUser(ctx, user)
	if err != nil {
		return store.Passkey{}, err
	}
	cred, err := s.pk.wa.CreateCredential(u, session, parsed)
	if err != nil {
		s.refused(user, "registration", err)
		return store.Passkey{}, fmt.Errorf("%w: %w", ErrCeremony, err)
	}
	p := store.Passkey{
		ID: cred.ID, Subject: user.Subject, Name: name, PublicKey: cred.PublicKey,
		SignCount: cred.Authenticator.SignCount, AAGUID: cred.Authenticator.AAGUID,
		BackupEligible: cred.Flags.BackupEligible, BackupState: cred.Flags.BackupState,
		Created: s.cfg.Now().UTC(),
	}
	for _, t := range cred.Transport {
		if len(p.Transports) < 8 && t != "" && len(t) <= 32 {
			p.Transports = append(p.Transports, string(t))
		}
	}
	if bytes.Equal(p.AAGUID, make([]byte, 16)) {
		p.AAGUID = nil
	}
	if err := s.cfg.Passkeys.AddPasskey(ctx, p); err != nil {
		return store.Passkey{}, err
	}
	s.changed(user, "passkey added")
	s.cfg.Audit.Info("passkey added", zap.String("sub", user.Subject), zap.String("passkey", passkeyID(p.ID)))
	return p, nil
}

// BeginPasskeyLogin starts a sign-in with a passkey: of user's passkeys
// (a second factor after a password), or with nil, of any discoverable
// passkey (usernameless). It returns the options for
// navigator.credentials.get (JSON, its "publicKey" member the
// PublicKeyCredentialRequestOptionsJSON) and the ceremony's sealed state.
// ErrNoFactor when user has no passkey.
func (s *Service) BeginPasskeyLogin(ctx context.Context, user *store.User) ([]byte, string, error) {
	if s.pk.wa == nil {
		return nil, "", ErrPasskeysOff
	}
	if user == nil {
		assertion, session, err := s.pk.wa.BeginDiscoverableLogin()
		if err != nil {
			return nil, "", fmt.Errorf("beginning a passkey sign-in: %w", err)
		}
		return s.sealCeremony(assertion, session, ceremonyLogin, usernameless)
	}
	u, _, err := s.webauthnUser(ctx, *user)
	if err != nil {
		return nil, "", err
	}
	if len(u.creds) == 0 {
		return nil, "", ErrNoFactor
	}
	assertion, session, err := s.pk.wa.BeginLogin(u)
	if err != nil {
		return nil, "", fmt.Errorf("beginning a passkey sign-in: %w", err)
	}
	return s.sealCeremony(assertion, session, ceremonyLogin, user.Subject)
}

// FinishPasskeyLogin checks the browser's response (the JSON of the
// PublicKeyCredential) to the sign-in ceremony of state, begun for user
// (nil: usernameless), and returns the user signed in and the methods
// passed: hwk, and with the authenticator's user verification (a PIN, a
// biometric) user and mfa, two factors. Refused: a passkey of another
// user than the ceremony's, of a disabled user, one go-webauthn refuses
// (origin, RP ID, challenge, signature, flags), a sign count that did not
// grow, a challenge answered before; each is users.ErrBadCredentials,
// counted by the brute-force defence against the passkey's owner (or the
// ceremony's user). ErrCeremony for a state or response that does not
// open or parse, or an unknown passkey.
func (s *Service) FinishPasskeyLogin(ctx context.Context, user *store.User, state string, response []byte, source string) (store.User, []string, error) {
	if s.pk.wa == nil {
		return store.User{}, nil, ErrPasskeysOff
	}
	bound := usernameless
	if user != nil {
		bound = user.Subject
	}
	session, err := s.openCeremony(state, ceremonyLogin, bound)
	if err != nil {
		return store.User{}, nil, err
	}
	parsed, err := parseAssertion(response)
	if err != nil {
		return store.User{}, nil, err
	}
	key, err := s.cfg.Passkeys.PasskeyByID(ctx, parsed.RawID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		s.cfg.Audit.Info("passkey refused", zap.String("reason", "unknown passkey"), zap.String("passkey", passkeyID(parsed.RawID)))
		return store.User{}, nil, fmt.Errorf("%w: an unknown passkey", ErrCeremony)
	case err != nil:
		return store.User{}, nil, err
	}
	var owner store.User
	if user != nil {
		owner = *user
	} else if owner, err = s.cfg.Users.UserBySubject(ctx, key.Subject); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return store.User{}, nil, fmt.Errorf("%w: the passkey's user is gone", ErrCeremony)
		}
		return store.User{}, nil, err
	}
	if owner.Disabled {
		return store.User{}, nil, fmt.Errorf("%w (disabled)", users.ErrBadCredentials)
	}
	var amr []string
	err = s.cfg.Checker.CheckFactor(ctx, owner, source, func(ctx context.Context) (bool, error) {
		if key.Subject != owner.Subject {
			s.refused(owner, "another user's passkey", nil)
			return false, nil
		}
		u, _, err := s.webauthnUser(ctx, owner)
		if err != nil {
			return false, err
		}
		if user != nil {
			_, err = s.pk.wa.ValidateLogin(u, session, parsed)
		} else {
			_, _, err = s.pk.wa.ValidatePasskeyLogin(func(_, _ []byte) (webauthn.User, error) { return u, nil }, session, parsed)
		}
		if err != nil {
			s.refused(owner, "assertion", err)
			return false, nil
		}
		// A challenge is answered once, on any instance: an authenticator
		// without a counter (most passkeys) would let a response be sent
		// again while its state lasts.
		if s.cfg.Spent != nil {
			_, fresh, err := s.cfg.Spent.Admit(ctx, "passkey challenge "+session.Challenge, s.cfg.Now(),
				CeremonyLifetime, 1, 2*CeremonyLifetime)
			if err != nil {
				return false, err
			}
			if !fresh {
				s.refused(owner, "a challenge answered before", nil)
				return false, nil
			}
		}
		count := parsed.Response.AuthenticatorData.Counter
		ok, err := s.cfg.Passkeys.UsePasskey(ctx, key.ID, count, s.cfg.Now().UTC())
		if err != nil || !ok {
			if err == nil {
				s.cfg.Audit.Warn("passkey sign count did not grow: a cloned authenticator, or a replay",
					zap.String("sub", owner.Subject), zap.String("passkey", passkeyID(key.ID)),
					zap.Uint32("stored", key.SignCount), zap.Uint32("sent", count))
			}
			return false, err
		}
		amr = []string{oauth.AMRHardwareKey}
		if parsed.Response.AuthenticatorData.Flags.HasUserVerified() {
			amr = oauth.WithFactor(amr, oauth.AMRUserVerified)
		}
		return true, nil
	})
	s.checked(owner, oauth.AMRHardwareKey, "passkey", err)
	if err != nil {
		return store.User{}, nil, err
	}
	return owner, amr, nil
}

// Passkeys lists subject's passkeys, oldest first.
func (s *Service) Passkeys(ctx context.Context, subject string) ([]store.Passkey, error) {
	if s.cfg.Passkeys == nil {
		return nil, nil
	}
	return s.cfg.Passkeys.Passkeys(ctx, subject)
}

// RenamePasskey names user's passkey id. store.ErrNotFound if the user
// has no such passkey; ErrPasskeyName.
func (s *Service) RenamePasskey(ctx context.Context, user store.User, id []byte, name string) error {
	if s.cfg.Passkeys == nil {
		return ErrPasskeysOff
	}
	name, err := passkeyName(name)
	if err != nil {
		return err
	}
	if err := s.cfg.Passkeys.RenamePasskey(ctx, user.Subject, id, name); err != nil {
		return err
	}
	s.changed(user, "passkey renamed")
	return nil
}

// RemovePasskey removes user's passkey id. store.ErrNotFound if the user
// has no such passkey.
func (s *Service) RemovePasskey(ctx context.Context, user store.User, id []byte) error {
	if s.cfg.Passkeys == nil {
		return ErrPasskeysOff
	}
	if err := s.cfg.Passkeys.DeletePasskey(ctx, user.Subject, id); err != nil {
		return err
	}
	s.changed(user, "passkey removed")
	s.cfg.Audit.Info("passkey removed", zap.String("sub", user.Subject), zap.String("passkey", passkeyID(id)))
	// As for the app: sessions and tokens that passed the removed passkey
	// (one lost or stolen) end with it.
	if s.cfg.Revoke != nil {
		if err := s.cfg.Revoke(ctx, user.Subject); err != nil {
			return fmt.Errorf("ending the sessions of %q after removing a passkey: %w", user.Subject, err)
		}
	}
	return nil
}

// PasskeyID is how pages and logs name a passkey: its credential id,
// base64url.
func passkeyID(id []byte) string {
	if len(id) > 64 {
		id = id[:64]
	}
	return base64.RawURLEncoding.EncodeToString(id)
}

// passkeyName is name trimmed, or "Passkey" for none; ErrPasskeyName when
// it is too long or holds what is not printable text.
func passkeyName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "Passkey", nil
	}
	if len(name) > store.MaxPasskeyName || !utf8.ValidString(name) {
		return "", ErrPasskeyName
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return "", ErrPasskeyName
		}
	}
	return name, nil
}

// parseCreation parses a registration response, bounded.
func parseCreation(response []byte) (*protocol.ParsedCredentialCreationData, error) {
	if len(response) == 0 || len(response) > MaxPasskeyResponse {
		return nil, fmt.Errorf("%w: a response of %d bytes", ErrCeremony, len(response))
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(response)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCeremony, err)
	}
	return parsed, nil
}

// parseAssertion parses a sign-in response, bounded.
func parseAssertion(response []byte) (*protocol.ParsedCredentialAssertionData, error) {
	if len(response) == 0 || len(response) > MaxPasskeyResponse {
		return nil, fmt.Errorf("%w: a response of %d bytes", ErrCeremony, len(response))
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(response)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCeremony, err)
	}
	return parsed, nil
}

// refused logs a passkey refused for user, with why (go-webauthn's
// error says which check failed; it holds no key material).
func (s *Service) refused(user store.User, reason string, err error) {
	fields := []zap.Field{zap.String("sub", user.Subject), zap.String("reason", reason)}
	if err != nil {
		fields = append(fields, zap.Error(err))
		if pe, ok := errors.AsType[*protocol.Error](err); ok && pe.DevInfo != "" {
			fields = append(fields, zap.String("detail", pe.DevInfo))
		}
	}
	s.cfg.Audit.Info("passkey refused", fields...)
}
