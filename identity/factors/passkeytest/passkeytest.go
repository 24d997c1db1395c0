// Package passkeytest is a software authenticator for tests: it answers
// the options of navigator.credentials.create and get as a browser with
// a platform authenticator would (WebAuthn Level 3 §6, attestation
// "none", ES256 keys), and can break each part a relying party checks
// (the origin, the RP ID hash, the flags, the sign count, the
// signature), so that a test sees each check refuse.
//
// Its row in the import table: it imports nothing from identity.
package passkeytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
)

// Authenticator flags (WebAuthn Level 3 §6.1).
const (
	FlagUP = 1 << 0 // user present
	FlagUV = 1 << 2 // user verified
	FlagBE = 1 << 3 // backup eligible
	FlagBS = 1 << 4 // backup state
	FlagAT = 1 << 6 // attested credential data
)

// Credential is a key the authenticator made.
type Credential struct {
	ID         []byte
	Key        *ecdsa.PrivateKey
	UserHandle []byte
	RPID       string
	// Flags are the backup flags (FlagBE, FlagBS) it signs with.
	Flags byte
	// Count is the sign count of its last signature; Counting: whether
	// it keeps one (a passkey that does not sends 0 every time).
	Count    uint32
	Counting bool
}

// Authenticator is a browser and its authenticator at Origin.
type Authenticator struct {
	// Origin is the origin the browser puts in the client data.
	Origin string
}

// Options change what the authenticator answers.
type Options struct {
	// UV: the authenticator verified the user (a PIN, a biometric).
	UV bool
	// Flags are added to the flags (FlagBE, FlagBS); at Create, the
	// credential keeps those for its signatures.
	Flags byte
	// DropFlags are taken from the flags of a signature.
	DropFlags byte
	// NoUP leaves out the user-presence flag.
	NoUP bool
	// Counting: the credential made keeps a sign count (from 1).
	Counting bool
	// Count, when set, is the sign count sent instead of the next one.
	Count *uint32
	// Origin, when set, is the origin in the client data instead of
	// the authenticator's.
	Origin string
	// RPID, when set, is the RP ID hashed into the authenticator data
	// instead of the options'.
	RPID string
	// Challenge, when set, is the challenge answered instead of the
	// options'.
	Challenge string
	// UserHandle, when set, is the user handle sent instead of the
	// credential's.
	UserHandle []byte
	// TamperSignature flips a bit of the signature.
	TamperSignature bool
	// Type, when set, is the client data's type instead of
	// webauthn.create or webauthn.get.
	Type string
}

type creationOptions struct {
	PublicKey struct {
		Challenge string `json:"challenge"`
		RP        struct {
			ID string `json:"id"`
		} `json:"rp"`
		User struct {
			ID string `json:"id"`
		} `json:"user"`
		Exclude []struct {
			ID string `json:"id"`
		} `json:"excludeCredentials"`
	} `json:"publicKey"`
}

type requestOptions struct {
	PublicKey struct {
		Challenge string `json:"challenge"`
		RPID      string `json:"rpId"`
		Allow     []struct {
			ID string `json:"id"`
		} `json:"allowCredentials"`
	} `json:"publicKey"`
}

var b64 = base64.RawURLEncoding

// Create answers the options of navigator.credentials.create: a new
// credential and the JSON of the PublicKeyCredential the browser would
// send.
func (a *Authenticator) Create(t testing.TB, options []byte, o Options) (*Credential, []byte) {
	t.Helper()
	var opts creationOptions
	if err := json.Unmarshal(options, &opts); err != nil {
		t.Fatalf("passkeytest: creation options: %v", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	handle, err := b64.DecodeString(opts.PublicKey.User.ID)
	if err != nil || len(handle) == 0 {
		t.Fatalf("passkeytest: user id %q: %v", opts.PublicKey.User.ID, err)
	}
	c := &Credential{ID: make([]byte, 32), Key: key, UserHandle: handle, RPID: opts.PublicKey.RP.ID, Counting: o.Counting,
		Flags: o.Flags & (FlagBE | FlagBS)}
	rand.Read(c.ID)
	if c.Counting {
		c.Count = 1
	}
	count := c.Count
	if o.Count != nil {
		count = *o.Count
	}
	point, err := key.PublicKey.Bytes() // 0x04 | x | y
	if err != nil {
		t.Fatal(err)
	}
	cose, err := webauthncbor.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: point[1:33], -3: point[33:65]})
	if err != nil {
		t.Fatal(err)
	}
	auth := a.authData(c.RPID, o, FlagAT, count)
	auth = append(auth, make([]byte, 16)...) // AAGUID: none
	auth = binary.BigEndian.AppendUint16(auth, uint16(len(c.ID)))
	auth = append(auth, c.ID...)
	auth = append(auth, cose...)
	att, err := webauthncbor.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": auth})
	if err != nil {
		t.Fatal(err)
	}
	client := a.clientData(t, "webauthn.create", opts.PublicKey.Challenge, o)
	return c, mustJSON(t, map[string]any{
		"id": b64.EncodeToString(c.ID), "rawId": b64.EncodeToString(c.ID), "type": "public-key",
		"authenticatorAttachment": "platform", "clientExtensionResults": map[string]any{},
		"response": map[string]any{
			"clientDataJSON": b64.EncodeToString(client), "attestationObject": b64.EncodeToString(att),
			"transports": []string{"internal", "hybrid"},
		},
	})
}

// Get answers the options of navigator.credentials.get with c: the JSON
// of the PublicKeyCredential the browser would send. Its sign count
// grows by one if it keeps one.
func (a *Authenticator) Get(t testing.TB, options []byte, c *Credential, o Options) []byte {
	t.Helper()
	var opts requestOptions
	if err := json.Unmarshal(options, &opts); err != nil {
		t.Fatalf("passkeytest: request options: %v", err)
	}
	if c.Counting {
		c.Count++
	}
	count := c.Count
	if o.Count != nil {
		count = *o.Count
	}
	rpID := opts.PublicKey.RPID
	if rpID == "" {
		rpID = c.RPID
	}
	auth := a.authData(rpID, o, c.Flags, count)
	client := a.clientData(t, "webauthn.get", opts.PublicKey.Challenge, o)
	sum := sha256.Sum256(client)
	digest := sha256.Sum256(append(append([]byte{}, auth...), sum[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, c.Key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	if o.TamperSignature {
		sig[len(sig)-1] ^= 1
	}
	handle := c.UserHandle
	if o.UserHandle != nil {
		handle = o.UserHandle
	}
	return mustJSON(t, map[string]any{
		"id": b64.EncodeToString(c.ID), "rawId": b64.EncodeToString(c.ID), "type": "public-key",
		"authenticatorAttachment": "platform", "clientExtensionResults": map[string]any{},
		"response": map[string]any{
			"clientDataJSON": b64.EncodeToString(client), "authenticatorData": b64.EncodeToString(auth),
			"signature": b64.EncodeToString(sig), "userHandle": b64.EncodeToString(handle),
		},
	})
}

// authData is the authenticator data's fixed part: the RP ID hash, the
// flags, the sign count.
func (a *Authenticator) authData(rpID string, o Options, flags byte, count uint32) []byte {
	if o.RPID != "" {
		rpID = o.RPID
	}
	h := sha256.Sum256([]byte(rpID))
	flags |= o.Flags
	flags &^= o.DropFlags
	if !o.NoUP {
		flags |= FlagUP
	}
	if o.UV {
		flags |= FlagUV
	}
	return binary.BigEndian.AppendUint32(append(h[:], flags), count)
}

// clientData is the client data JSON of a ceremony.
func (a *Authenticator) clientData(t testing.TB, typ, challenge string, o Options) []byte {
	if o.Type != "" {
		typ = o.Type
	}
	if o.Challenge != "" {
		challenge = o.Challenge
	}
	origin := a.Origin
	if o.Origin != "" {
		origin = o.Origin
	}
	return mustJSON(t, map[string]any{"type": typ, "challenge": challenge, "origin": origin, "crossOrigin": false})
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(fmt.Errorf("passkeytest: %w", err))
	}
	return b
}
