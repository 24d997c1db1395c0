// Package verify is Gatehouse's one access-token check, shared by route
// protection, userinfo, the message service and the query service: a
// verified-token cache, then the signature against a configured key set
// (the in-process identity server's, or a remote issuer's JWKS), pinned
// algorithms, typ, issuer, audience, exp/nbf with a small leeway, and
// optionally revocations, giving an Identity or an *Error typed by reason.
//
// Keys come only from the configured key set, never from a token's own
// jku, jwk, x5u or x5c header: a token carrying one is refused. A token's
// alg must fit the type of the key its kid names (RS and PS: RSA; ES256:
// P-256; EdDSA: Ed25519) and, where the key set declares one
// (DeclaredKeys: the server's keys, a JWKS entry's "alg"), the key's own
// algorithm; ES256 signatures of an issuer that signs with low s only
// (the server's) are refused with a high s, so the twin (r, n−s) of a
// token is not another valid token. A remote issuer's twin is the same
// claims: the same verdict, revocations being by jti, family and subject.
//
// Revocations are read into memory every RevocationRefresh and, when the
// store notifies them (store.RevocationNotifier), as soon as any instance
// commits one; RevocationsChanged tells a holder of long-lived sessions
// that they grew, so it can check its tokens again at once. A change of a
// subject's market-data entitlements is a revocation of its own kind: a
// token it covers is refused as ReasonEntitlementsChanged, and the Error
// carries the identity narrowed to the pairs the subject still holds, for
// a long-lived session to go on with (see Verify).
//
// On top of the check it owns route protection and the identity headers:
// Verifier.Authorize reads the bearer token of a request (RFC 6750 §2.1)
// and checks a Requirement's scopes, giving an Identity or a *Refusal that
// writes itself as RFC 6750 §3 says; a HeaderPolicy strips the client's
// copies of identity headers in every spelling and sets them from
// templates the caller expands.
//
// Goroutines: a Verifier, a RemoteKeySet and a HeaderPolicy are safe for
// concurrent use once built; an Identity is shared through the cache and
// read-only; a Requirement is a value not to be changed while in use; a
// Refusal belongs to the goroutine that got it. Verifier.Run and
// RemoteKeySet.Run each take one goroutine of their own, until their
// context ends; a RemoteKeySet fetches on a goroutine of its own, on the
// context it was made with, and its Run waits for that fetch before it
// returns.
//
// Of identity it imports package store only (the revocations' roles). It
// must not depend on Caddy or on the identity server itself;
// the server is one KeySource among others, and Caddy's placeholders reach
// a HeaderPolicy only as the caller's expand function.
package verify
