package verify_test

import (
	"errors"
	"testing"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/identity/verify/verifytest"
)

// TestVerifierRefusesAuditCheckpoints: an audit checkpoint is never an
// access token, even signed with the issuer's own key under its kid: the
// verifier's pinned typ (at+jwt) refuses the checkpoint's
// gatehouse-audit+jwt, and refuses it too when the checkpoint's header is
// put on a token's good claims. It failed when: the fixture accepted
// gatehouse-audit+jwt among its Types (the checkpoint was refused only for
// its missing exp, and the token's claims under its typ passed).
func TestVerifierRefusesAuditCheckpoints(t *testing.T) {
	f := newFixture(t)
	signer, err := audit.NewKeySigner(f.issuer.Kid, f.issuer.Private)
	if err != nil {
		t.Fatal(err)
	}
	var checkpoint string
	w, err := audit.NewWriter(audit.Options{Instance: "gw", Signer: signer, Now: f.issuer.Now,
		Sink: sinkFunc(func(r *audit.Record) error { checkpoint = r.JWS; return nil })})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil || checkpoint == "" {
		t.Fatalf("no checkpoint: %v", err)
	}
	header := f.issuer.Header()
	header["typ"] = audit.CheckpointType
	withTokenClaims := verifytest.Sign(header, f.issuer.Claims("alice", "Service/Admin"), f.issuer.Private)
	for name, tok := range map[string]string{"a checkpoint": checkpoint, "a token's claims under the checkpoint's typ": withTokenClaims} {
		_, err := f.v.Verify(t.Context(), tok)
		if verr, ok := errors.AsType[*verify.Error](err); !ok || verr.Reason != verify.ReasonType {
			t.Errorf("%s: %v, want %s", name, err, verify.ReasonType)
		}
	}
}

type sinkFunc func(*audit.Record) error

func (s sinkFunc) WriteRecord(r *audit.Record) error { return s(r) }
