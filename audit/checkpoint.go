package audit

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/golang-jwt/jwt/v5"
)

// CheckpointType is the "typ" header of a checkpoint JWS. No token
// verifier accepts it (they pin at+jwt, or JWT for ID tokens), so a
// checkpoint can never pass for a token.
const CheckpointType = "gatehouse-audit+jwt"

// Algorithms are the JWS algorithms a checkpoint may use, each bound to
// its key type (RSA, P-256, Ed25519).
var Algorithms = []string{"RS256", "ES256", "EdDSA"}

// Signer signs checkpoints with an audit key: its own key id, never a
// token-signing key's. The identity server's implementation opens a
// sealed store key; KeySigner wraps a key in memory.
type Signer interface {
	// KeyID is the "kid" header.
	KeyID() string
	// Algorithm is the "alg" header, one of Algorithms.
	Algorithm() string
	// Sign returns the JWS signature of signingInput (the encoded header,
	// a dot and the encoded payload).
	Sign(signingInput string) ([]byte, error)
}

// KeySigner is a Signer over an RSA (RS256), P-256 (ES256) or Ed25519
// (EdDSA) private key.
type KeySigner struct {
	kid    string
	key    crypto.Signer
	method jwt.SigningMethod
}

// NewKeySigner returns a signer for key under kid.
func NewKeySigner(kid string, key crypto.Signer) (*KeySigner, error) {
	if kid == "" {
		return nil, errors.New("audit key needs a key id")
	}
	var m jwt.SigningMethod
	switch k := key.(type) {
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return nil, fmt.Errorf("audit key %q: RSA key under 2048 bits", kid)
		}
		m = jwt.SigningMethodRS256
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("audit key %q: ECDSA key not on P-256", kid)
		}
		m = jwt.SigningMethodES256
	case ed25519.PrivateKey:
		m = jwt.SigningMethodEdDSA
	default:
		return nil, fmt.Errorf("audit key %q: unsupported key type %T", kid, key)
	}
	return &KeySigner{kid: kid, key: key, method: m}, nil
}

// KeyID implements Signer.
func (s *KeySigner) KeyID() string { return s.kid }

// Algorithm implements Signer.
func (s *KeySigner) Algorithm() string { return s.method.Alg() }

// Sign implements Signer.
func (s *KeySigner) Sign(signingInput string) ([]byte, error) {
	return s.method.Sign(signingInput, s.key)
}

// Public is the verification key, for the caller's key set.
func (s *KeySigner) Public() crypto.PublicKey { return s.key.Public() }

// Checkpoint is what a checkpoint JWS signs and what the store keeps of
// it: the checkpoint record's own seq and hash, its time, and its chain.
type Checkpoint struct {
	Instance string
	Run      string
	Seq      uint64
	Hash     [32]byte
	Time     time.Time
	KeyID    string
	// Final says the run closed with it: a record after it was inserted.
	Final bool
	// JWS is the checkpoint's compact JWS, as the record carries it (the
	// writer sets it; VerifyCheckpoint and Verify do not need it).
	JWS string
}

// checkpointClaims is the JWS payload.
type checkpointClaims struct {
	Instance string `json:"instance"`
	Run      string `json:"run"`
	Seq      uint64 `json:"seq"`
	Hash     string `json:"hash"`
	Time     string `json:"time"`
	Final    bool   `json:"final,omitzero"`
}

var b64 = base64.RawURLEncoding.Strict()

// signCheckpoint returns the compact JWS over the checkpoint record r
// (whose Hash is set).
func signCheckpoint(s Signer, r *Record, final bool) (string, error) {
	header, err := json.Marshal(struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
		Typ string `json:"typ"`
	}{s.Algorithm(), s.KeyID(), CheckpointType})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(checkpointClaims{r.Instance, r.Run, r.Seq,
		hex.EncodeToString(r.Hash[:]), r.Time.UTC().Format(TimeLayout), final})
	if err != nil {
		return "", err
	}
	input := b64.EncodeToString(header) + "." + b64.EncodeToString(payload)
	sig, err := s.Sign(input)
	if err != nil {
		return "", fmt.Errorf("signing checkpoint with audit key %q: %w", s.KeyID(), err)
	}
	return input + "." + b64.EncodeToString(sig), nil
}

// VerifyCheckpoint checks the JWS of the checkpoint record r against keys
// (by kid): the typ, an algorithm of Algorithms matching its key's type,
// the signature, and claims that name r exactly (instance, run, seq,
// hash, time). It returns what the JWS signs. Errors wrap ErrCheckpoint.
func VerifyCheckpoint(r *Record, keys map[string]crypto.PublicKey) (Checkpoint, error) {
	kid, final, err := verifyCheckpoint(r, keys)
	if err != nil {
		return Checkpoint{}, err
	}
	return Checkpoint{Instance: r.Instance, Run: r.Run, Seq: r.Seq, Hash: r.Hash, Time: r.Time, KeyID: kid, Final: final}, nil
}

func verifyCheckpoint(r *Record, keys map[string]crypto.PublicKey) (kid string, final bool, _ error) {
	fail := func(format string, args ...any) (string, bool, error) {
		return "", false, fmt.Errorf("%w: "+format, append([]any{ErrCheckpoint}, args...)...)
	}
	if r.Kind != KindCheckpoint {
		return fail("a %.32q record is not a checkpoint", r.Kind)
	}
	parts := strings.Split(r.JWS, ".")
	if len(parts) != 3 {
		return fail("not a compact JWS")
	}
	var h struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
		Typ string `json:"typ"`
	}
	if err := decodeSegment(parts[0], &h); err != nil {
		return fail("header: %v", err)
	}
	if h.Typ != CheckpointType {
		return fail("typ %.40q", h.Typ)
	}
	if !slices.Contains(Algorithms, h.Alg) {
		return fail("alg %.16q", h.Alg)
	}
	key, ok := keys[h.Kid]
	if !ok {
		return fail("unknown audit key %.64q", h.Kid)
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil {
		return fail("signature: %v", err)
	}
	if err := jwt.GetSigningMethod(h.Alg).Verify(parts[0]+"."+parts[1], sig, key); err != nil {
		return fail("audit key %.64q: %v", h.Kid, err)
	}
	var c checkpointClaims
	if err := decodeSegment(parts[1], &c); err != nil {
		return fail("claims: %v", err)
	}
	want := checkpointClaims{r.Instance, r.Run, r.Seq, hex.EncodeToString(r.Hash[:]), r.Time.UTC().Format(TimeLayout), c.Final}
	if c != want {
		return fail("it signs another record (seq %d)", c.Seq)
	}
	return h.Kid, c.Final, nil
}

// decodeSegment decodes one base64url JWS segment as a JSON object with
// exactly the members of v.
func decodeSegment(seg string, v any) error {
	b, err := b64.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v, json.RejectUnknownMembers(true))
}
