package wshandler

import (
	"context"
	"errors"
	"net"

	"github.com/gatehouse/gatehouse/identity"
	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/wsauth"
)

// verifierAdapter is the app's verifier as the gateway's Verifier.
type verifierAdapter struct{ v *verify.Verifier }

func (a verifierAdapter) VerifyAccessToken(ctx context.Context, token string) (wsauth.Identity, error) {
	id, err := socketIdentity(a.v.Verify(ctx, token))
	if err != nil {
		if ve, ok := errors.AsType[*verify.Error](err); ok && ve.Reason != verify.ReasonKeysUnavailable {
			return wsauth.Identity{}, &wsauth.Refusal{Reason: string(ve.Reason), Cause: err}
		}
		return wsauth.Identity{}, err
	}
	return wsIdentity(id, token), nil
}

// ownerAdapter answers AuthOwner with the identity server's password
// grant (client authentication, the grant check and the brute-force
// defence included), then verifies the access token it issued.
type ownerAdapter struct {
	srv *identity.Server
	v   *verify.Verifier
}

func (a ownerAdapter) CheckOwner(ctx context.Context, cred wsauth.OwnerCredentials) (wsauth.Identity, error) {
	source := cred.RemoteAddr
	if host, _, err := net.SplitHostPort(source); err == nil {
		source = host
	}
	resp, perr := a.srv.PasswordGrant(ctx, cred.ClientID, cred.ClientSecret, cred.Username, cred.Password, "", source)
	if perr != nil {
		if perr.Code == "server_error" || perr.Code == "temporarily_unavailable" {
			return wsauth.Identity{}, perr
		}
		return wsauth.Identity{}, &wsauth.Refusal{Reason: perr.Code}
	}
	return verifierAdapter{v: a.v}.VerifyAccessToken(ctx, resp.AccessToken)
}

// codeAdapter answers AuthCode with the identity server's code exchange
// (client authentication, the grant check, redirect URI, PKCE, one use),
// then verifies the access token it issued.
type codeAdapter struct {
	srv *identity.Server
	v   *verify.Verifier
}

func (a codeAdapter) ExchangeCode(ctx context.Context, cred wsauth.CodeCredentials) (wsauth.Identity, error) {
	resp, perr := a.srv.CodeGrant(ctx, cred.ClientID, cred.ClientSecret, cred.Code, cred.RedirectURI, cred.CodeVerifier)
	if perr != nil {
		if perr.Code == "server_error" || perr.Code == "temporarily_unavailable" {
			return wsauth.Identity{}, perr
		}
		return wsauth.Identity{}, &wsauth.Refusal{Reason: perr.Code}
	}
	return verifierAdapter{v: a.v}.VerifyAccessToken(ctx, resp.AccessToken)
}

// nopVerifier stands in for the verifier in Validate, which builds no
// gateway.
type nopVerifier struct{}

func (nopVerifier) VerifyAccessToken(context.Context, string) (wsauth.Identity, error) {
	return wsauth.Identity{}, wsauth.ErrRefused
}
