// ES256 and EdDSA ID tokens with openid-client v6 and jose, against the
// demo with a client per algorithm (integration/identity_signing_algs_test.go
// writes that config and runs this file with `node --test`), passing:
//
//	GATEHOUSE_ISSUER       the issuer URL, e.g. http://localhost:8080
//	GATEHOUSE_TOKENS_FILE  optional: a file every issued token is appended
//	                       to, one a line, so the Go side can check that
//	                       none of them reached the server's log
//
// openid-client checks that an ID token's alg is the client's
// id_token_signed_response_alg when one is set; jose verifies its signature with the
// published JWKS (WebCrypto's ECDSA P-256 and Ed25519 in Node 20).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { appendFileSync } from 'node:fs'
import * as client from 'openid-client'
import { createRemoteJWKSet, jwtVerify } from 'jose'

const issuer = process.env.GATEHOUSE_ISSUER
assert.ok(issuer, 'GATEHOUSE_ISSUER must be set')
const tokensFile = process.env.GATEHOUSE_TOKENS_FILE
const demoSubject = '5d1c6f2e-8a4b-4c1e-9f3a-2b7d8e6c4a10'
const insecure = { execute: [client.allowInsecureRequests] }

function record(tokens) {
  if (!tokensFile) return
  for (const name of ['access_token', 'refresh_token', 'id_token']) {
    if (tokens[name]) appendFileSync(tokensFile, tokens[name] + '\n')
  }
}

for (const alg of ['ES256', 'EdDSA']) {
  test(`${alg} ID token`, async () => {
    const clientId = `demo-${alg.toLowerCase()}`
    const config = await client.discovery(new URL(issuer), clientId,
      { id_token_signed_response_alg: alg }, client.None(), insecure)
    assert.deepEqual(config.serverMetadata().id_token_signing_alg_values_supported, ['RS256', 'ES256', 'EdDSA'])
    const tokens = await client.genericGrantRequest(config, 'password', {
      username: 'demo', password: 'demo', scope: 'openid profile Service/Market',
    })
    record(tokens)
    const claims = tokens.claims()
    assert.ok(claims, 'an ID token is expected')
    assert.equal(claims.sub, demoSubject)

    const jwks = createRemoteJWKSet(new URL(config.serverMetadata().jwks_uri))
    const { payload, protectedHeader } = await jwtVerify(tokens.id_token, jwks, {
      issuer, audience: clientId, algorithms: [alg],
    })
    assert.equal(protectedHeader.alg, alg)
    assert.equal(payload.sub, demoSubject)
    const access = await jwtVerify(tokens.access_token, jwks, { issuer, algorithms: [alg], typ: 'at+jwt' })
    assert.equal(access.protectedHeader.alg, alg)

    // A relying party registered for another algorithm refuses it.
    const other = alg === 'ES256' ? 'EdDSA' : 'ES256'
    const wrong = await client.discovery(new URL(issuer), clientId,
      { id_token_signed_response_alg: other }, client.None(), insecure)
    await assert.rejects(client.genericGrantRequest(wrong, 'password', {
      username: 'demo', password: 'demo', scope: 'openid',
    }), (err) => {
      assert.match(String(err.cause?.message ?? err.message), /alg/)
      return true
    })
  })
}
