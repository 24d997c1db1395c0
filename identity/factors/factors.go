package factors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/identity/keys"
	"github.com/gatehouse/gatehouse/identity/mfa"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/users"
)

// ErrNoFactor is a check of a factor the user has not enrolled.
var ErrNoFactor = errors.New("the user has no such second factor")

// Config configures a Service.
type Config struct {
	// Store keeps the factors. Required.
	Store store.MFA
	// Checker is the brute-force defence codes are checked under, the
	// password checks'. Required.
	Checker *users.Checker
	// Issuer names the service in authenticator apps (the otpauth URI's
	// issuer). Required; it may not contain a colon.
	Issuer string
	// KEK is the key encryption key that seals TOTP secrets at rest (the
	// signing keys'); nil stores them in the clear, as it stores signing
	// keys then.
	KEK []byte
	// Audit receives factor events (never a secret or a code). Default:
	// no-op.
	Audit *zap.Logger
	// Record receives the tamper-evident audit records of factor changes
	// and checks. Default: none.
	Record users.Auditor
	// Revoke, if set, ends a user's sessions and tokens (as a password
	// change does) after Reset removed their factors: a session or a
	// refresh token that passed the removed factor keeps no scope it
	// gave.
	Revoke func(ctx context.Context, subject string) error
	// Now is the clock. Default time.Now.
	Now func() time.Time

	// Passkeys keeps the users' passkeys; nil: no passkeys (the methods
	// of passkeys answer ErrPasskeysOff).
	Passkeys store.Passkeys
	// Users finds the user a usernameless passkey sign-in names.
	// Required with Passkeys.
	Users SubjectUsers
	// Spent records the challenges of passkey sign-ins answered, so that
	// each is answered once on every instance (the brute-force defence's
	// counters). Default: none, and a response may be sent again while
	// its ceremony lasts when its authenticator keeps no sign count.
	Spent store.Counters
	// IssuerURL is the identity server's issuer: passkeys are registered
	// for its origin (scheme, host, port) and, unless RPID says
	// otherwise, its host as the relying party id. Passkeys are off when
	// its host is an IP address, or when it is http on another host than
	// localhost: browsers allow neither.
	IssuerURL string
	// RPID is the relying party id passkeys are registered for: the
	// issuer's host (the default) or a domain it is under, so that a
	// passkey also works for the other hosts of that domain. Changing it
	// leaves every passkey registered before unusable.
	RPID string
	// RPName is the name of the service authenticators show. Default:
	// Issuer.
	RPName string
	// CeremonyKey (32 bytes) seals the state of a passkey ceremony
	// between its two requests, for the browser to carry; every instance
	// needs the same. Required with Passkeys.
	CeremonyKey []byte
}

// Service enrols and checks second factors. It is safe for concurrent use.
type Service struct {
	cfg Config
	pk  passkeyState
}

// New checks cfg and returns the service.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Checker == nil || cfg.Issuer == "" {
		return nil, errors.New("second factors need a store, a checker and an issuer name")
	}
	if _, err := mfa.KeyURI(cfg.Issuer, "check", make([]byte, mfa.SecretBytes)); err != nil {
		return nil, fmt.Errorf("second factors: TOTP issuer %q: %w", cfg.Issuer, err)
	}
	if cfg.KEK != nil && len(cfg.KEK) != keys.EncryptionKeySize {
		return nil, errors.New("second factors: the key encryption key must be 32 bytes")
	}
	if cfg.Audit == nil {
		cfg.Audit = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	pk, err := newPasskeys(cfg)
	if err != nil {
		return nil, err
	}
	return &Service{cfg: cfg, pk: pk}, nil
}

// Status is what second factors a user has.
type Status struct {
	// TOTP: a TOTP factor is enrolled, since TOTPSince.
	TOTP      bool
	TOTPSince time.Time
	// RecoveryCodes is how many unspent recovery codes the user has.
	RecoveryCodes int
	// Passkeys is how many passkeys the user has.
	Passkeys int
	// passkeysOn: the server can check passkeys (PasskeysOff is "").
	passkeysOn bool
}

// Any reports whether the user has a factor this server can check: a
// passkey counts only while passkeys are on, so that a user whose only
// factor is a passkey is not sent to a step-up they cannot pass.
func (st Status) Any() bool { return st.TOTP || (st.passkeysOn && st.Passkeys > 0) }

// Status returns subject's factors.
func (s *Service) Status(ctx context.Context, subject string) (Status, error) {
	var st Status
	f, err := s.cfg.Store.TOTP(ctx, subject)
	switch {
	case err == nil:
		st.TOTP, st.TOTPSince = true, f.Created
	case !errors.Is(err, store.ErrNotFound):
		return Status{}, err
	}
	codes, err := s.cfg.Store.RecoveryCodes(ctx, subject)
	if err != nil {
		return Status{}, err
	}
	st.RecoveryCodes = len(codes)
	if s.cfg.Passkeys != nil {
		keys, err := s.cfg.Passkeys.Passkeys(ctx, subject)
		if err != nil {
			return Status{}, err
		}
		st.Passkeys = len(keys)
	}
	st.passkeysOn = s.PasskeysOff() == ""
	return st, nil
}

// Enrolment is a TOTP secret offered to a user, not stored until the
// user proves, with a first code, that their app holds it.
type Enrolment struct {
	Secret []byte
	// Key is the secret as a person types it into an app (base32).
	Key string
	// URI is the otpauth URI a QR code carries.
	URI string
}

// NewEnrolment is a new secret for account (the name the app shows).
func (s *Service) NewEnrolment(account string) (Enrolment, error) {
	secret, err := mfa.NewSecret()
	if err != nil {
		return Enrolment{}, fmt.Errorf("reading randomness: %w", err)
	}
	return s.Enrolment(account, secret)
}

// Enrolment is the enrolment of secret for account.
func (s *Service) Enrolment(account string, secret []byte) (Enrolment, error) {
	uri, err := mfa.KeyURI(s.cfg.Issuer, account, secret)
	if err != nil {
		return Enrolment{}, err
	}
	return Enrolment{Secret: secret, Key: mfa.EncodeSecret(secret), URI: uri}, nil
}

// LooksLikeTOTP reports whether code has the form of a TOTP code (six
// digits); anything else can only be a recovery code, whose form differs.
func LooksLikeTOTP(code string) bool {
	if len(code) != mfa.Digits {
		return false
	}
	for i := 0; i < len(code); i++ {
		if code[i] < '0' || code[i] > '9' {
			return false
		}
	}
	return true
}

// sealName binds a sealed secret to its user: a sealed secret copied to
// another user's row does not open.
func sealName(subject string) string { return "totp:" + subject }

// ConfirmTOTP enrols secret as user's TOTP factor if code is one of its
// codes now, replacing any factor the user had; the step of code counts
// as used. A wrong code is a failure of the brute-force defence
// (users.ErrBadCredentials).
func (s *Service) ConfirmTOTP(ctx context.Context, user store.User, secret []byte, code, source string) error {
	if len(secret) != mfa.SecretBytes {
		return errors.New("enrolling TOTP: secret of the wrong size")
	}
	err := s.cfg.Checker.CheckFactor(ctx, user, source, func(ctx context.Context) (bool, error) {
		step, err := mfa.Check(secret, code, s.cfg.Now(), 0)
		if err != nil {
			return false, nil
		}
		sealed, err := keys.SealSecret(s.cfg.KEK, secret, sealName(user.Subject))
		if err != nil {
			return false, err
		}
		return true, s.cfg.Store.PutTOTP(ctx, store.TOTPFactor{
			Subject: user.Subject, Secret: sealed, LastStep: step, Created: s.cfg.Now()})
	})
	if err != nil {
		return err
	}
	s.changed(user, "totp enrolled")
	return nil
}

// CheckTOTP checks a one-time code of user's TOTP factor: right, and of a
// later step than any code it accepted before, on any instance. ErrNoFactor
// when the user has none; users.ErrBadCredentials for a wrong or replayed
// code (counted by the brute-force defence) or a locked pair.
func (s *Service) CheckTOTP(ctx context.Context, user store.User, code, source string) error {
	// A user without a factor is told so before the brute-force defence,
	// with nothing counted.
	switch _, err := s.cfg.Store.TOTP(ctx, user.Subject); {
	case errors.Is(err, store.ErrNotFound):
		return ErrNoFactor
	case err != nil:
		return err
	}
	err := s.cfg.Checker.CheckFactor(ctx, user, source, func(ctx context.Context) (bool, error) {
		// The factor checked is read here, once the check is admitted: a
		// check may wait (a throttle, the pair's lock), and a factor
		// enrolled again or reset meanwhile must not let a code of the
		// one it replaced through.
		f, err := s.cfg.Store.TOTP(ctx, user.Subject)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return false, ErrNoFactor
		case err != nil:
			return false, err
		}
		secret, err := keys.OpenSecret(s.cfg.KEK, f.Secret, sealName(user.Subject))
		if err != nil {
			return false, fmt.Errorf("opening the TOTP secret of %q: %w", user.Subject, err)
		}
		step, err := mfa.Check(secret, code, s.cfg.Now(), f.LastStep)
		if err != nil {
			return false, nil
		}
		// The store's compare-and-set: of two requests with one code, on
		// one instance or two, one advances the step; and only while the
		// factor is the one the code was checked against (not one
		// enrolled again, or reset and enrolled, since the read above).
		return s.cfg.Store.AdvanceTOTP(ctx, user.Subject, f.Secret, step)
	})
	s.checked(user, oauth.AMROneTimePassword, "totp", err)
	return err
}

// UseRecoveryCode spends one of user's recovery codes: each works once,
// on every instance. users.ErrBadCredentials for a wrong or spent code
// (counted by the brute-force defence) or a locked pair.
func (s *Service) UseRecoveryCode(ctx context.Context, user store.User, code, source string) error {
	err := s.cfg.Checker.CheckFactor(ctx, user, source, func(ctx context.Context) (bool, error) {
		h := mfa.RecoveryHash(code)
		if h == nil {
			return false, nil
		}
		return s.cfg.Store.SpendRecoveryCode(ctx, user.Subject, h)
	})
	s.checked(user, oauth.AMROneTimePassword, "recovery code", err)
	return err
}

// NewRecoveryCodes replaces subject's recovery codes with a new set and
// returns it, for the user to keep: only their hashes are stored.
func (s *Service) NewRecoveryCodes(ctx context.Context, user store.User) ([]string, error) {
	codes, hashes, err := mfa.NewRecoveryCodes()
	if err != nil {
		return nil, err
	}
	if err := s.cfg.Store.ReplaceRecoveryCodes(ctx, user.Subject, hashes, s.cfg.Now()); err != nil {
		return nil, err
	}
	s.changed(user, "recovery codes generated")
	return codes, nil
}

// Reset removes subject's TOTP factor and its recovery codes, in one
// store transaction, then ends its sessions and tokens (Config.Revoke).
// Its passkeys stay.
func (s *Service) Reset(ctx context.Context, user store.User) error {
	if err := s.cfg.Store.ResetMFA(ctx, user.Subject); err != nil {
		return err
	}
	s.changed(user, "second factors removed")
	if s.cfg.Revoke != nil {
		if err := s.cfg.Revoke(ctx, user.Subject); err != nil {
			return fmt.Errorf("ending the sessions of %q after removing its factors: %w", user.Subject, err)
		}
	}
	return nil
}

// changed records a change of user's factors.
func (s *Service) changed(user store.User, change string) {
	s.cfg.Audit.Info("second factor changed", zap.String("sub", user.Subject), zap.String("username", user.Username),
		zap.String("change", change))
	if s.cfg.Record == nil {
		return
	}
	if err := s.cfg.Record.Append(audit.KindUserChange, audit.String(audit.AttrSubject, user.Subject),
		audit.String("username", user.Username), audit.String("change", change)); errors.Is(err, audit.ErrAttr) {
		s.cfg.Audit.Error("second factor audit record refused", zap.Error(err))
	}
}

// checked records a factor check that passed (a failure is the
// checker's to record, as a password's is).
func (s *Service) checked(user store.User, method, factor string, err error) {
	if err != nil {
		return
	}
	s.cfg.Audit.Info("second factor passed", zap.String("sub", user.Subject), zap.String("factor", factor))
	if s.cfg.Record == nil {
		return
	}
	if err := s.cfg.Record.Append(audit.KindAuthentication, audit.String(audit.AttrSubject, user.Subject),
		audit.String("method", method), audit.String("factor", factor),
		audit.String(audit.AttrOutcome, "ok")); errors.Is(err, audit.ErrAttr) {
		s.cfg.Audit.Error("second factor audit record refused", zap.Error(err))
	}
}

// Seed enrols secret as user's TOTP factor if the user has none, and
// reports whether it did: the users file's totp_secret, seeded at every
// start and reload. A factor the user has (enrolled through the page, or
// seeded before) is kept; one removed by Reset is seeded again. The
// factor's last step is 0, so any code of the window is accepted once.
// Between the look and the write, an enrolment through the page would be
// replaced: the store has no insert-if-absent, and a start racing a
// user's enrolment is the operator's own doing.
func (s *Service) Seed(ctx context.Context, user store.User, secret []byte) (bool, error) {
	if len(secret) < users.MinTOTPSecretBytes {
		return false, fmt.Errorf("seeding TOTP: a secret of %d bytes, fewer than %d", len(secret), users.MinTOTPSecretBytes)
	}
	switch _, err := s.cfg.Store.TOTP(ctx, user.Subject); {
	case err == nil:
		return false, nil
	case !errors.Is(err, store.ErrNotFound):
		return false, err
	}
	sealed, err := keys.SealSecret(s.cfg.KEK, secret, sealName(user.Subject))
	if err != nil {
		return false, err
	}
	if err := s.cfg.Store.PutTOTP(ctx, store.TOTPFactor{
		Subject: user.Subject, Secret: sealed, Created: s.cfg.Now()}); err != nil {
		return false, err
	}
	s.changed(user, "totp seeded from the users file")
	return true, nil
}
