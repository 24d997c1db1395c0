// Black-box test of the Gatehouse demo with openid-client v6, a third-party
// OAuth 2.0 / OpenID Connect client. integration/node_test.go starts a
// gatehouse and runs this file with `node --test`, passing:
//
//	GATEHOUSE_ISSUER       the issuer URL, e.g. http://localhost:8080
//	GATEHOUSE_TOKENS_FILE  optional: a file every issued token is appended
//	                       to, one a line, so the Go side can check that
//	                       none of them reached the server's log
//
// DEMO-ONLY credentials: demo/demo and demo-service/demo-secret are the
// public demo users and clients of Caddyfile.example.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { appendFileSync } from 'node:fs'
import * as client from 'openid-client'

const issuer = process.env.GATEHOUSE_ISSUER
assert.ok(issuer, 'GATEHOUSE_ISSUER must be set')
const tokensFile = process.env.GATEHOUSE_TOKENS_FILE

const demoSubject = '5d1c6f2e-8a4b-4c1e-9f3a-2b7d8e6c4a10'
const demoScopes = ['openid', 'profile', 'email', 'offline_access', 'Service/Market', 'Service/News']

// The demo is plain http on loopback: openid-client refuses that unless told.
const insecure = { execute: [client.allowInsecureRequests] }

function record(tokens) {
  if (!tokensFile) return
  for (const name of ['access_token', 'refresh_token', 'id_token']) {
    if (tokens[name]) appendFileSync(tokensFile, tokens[name] + '\n')
  }
}

function sortedScopes(s) {
  return s.split(' ').sort()
}

async function demoApp() {
  return client.discovery(new URL(issuer), 'demo-app', undefined, client.None(), insecure)
}

test('discovery', async () => {
  const config = await demoApp()
  const md = config.serverMetadata()
  assert.equal(md.issuer, issuer)
  assert.equal(md.token_endpoint, `${issuer}/connect/token`)
  assert.equal(md.jwks_uri, `${issuer}/.well-known/openid-configuration/jwks`)
  assert.ok(md.grant_types_supported.includes('password'))
  assert.deepEqual(md.id_token_signing_alg_values_supported, ['RS256'])
})

test('password grant, then refresh', async () => {
  const config = await demoApp()

  const tokens = await client.genericGrantRequest(config, 'password', {
    username: 'demo',
    password: 'demo',
  })
  record(tokens)
  assert.equal(tokens.token_type, 'bearer') // openid-client lower-cases it
  assert.equal(tokens.expires_in, 3600)
  assert.equal(typeof tokens.access_token, 'string')
  assert.equal(typeof tokens.refresh_token, 'string')
  assert.deepEqual(sortedScopes(tokens.scope), [...demoScopes].sort())

  const idClaims = tokens.claims()
  assert.ok(idClaims, 'an id_token is expected: openid was granted')
  assert.equal(idClaims.iss, issuer)
  assert.equal(idClaims.sub, demoSubject)
  assert.equal(idClaims.aud, 'demo-app')
  assert.equal(idClaims.preferred_username, 'demo')
  assert.ok(idClaims.exp > idClaims.iat)

  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token)
  record(refreshed)
  assert.equal(refreshed.token_type, 'bearer')
  assert.equal(refreshed.expires_in, 3600)
  assert.equal(typeof refreshed.access_token, 'string')
  assert.notEqual(refreshed.access_token, tokens.access_token)
  assert.equal(typeof refreshed.refresh_token, 'string')
  assert.notEqual(refreshed.refresh_token, tokens.refresh_token)
  assert.deepEqual(sortedScopes(refreshed.scope), [...demoScopes].sort())
  const refreshedClaims = refreshed.claims()
  if (refreshedClaims) {
    assert.equal(refreshedClaims.sub, demoSubject)
    assert.equal(refreshedClaims.aud, 'demo-app')
  }
})

test('wrong password is invalid_grant', async () => {
  const config = await demoApp()
  await assert.rejects(
    client.genericGrantRequest(config, 'password', { username: 'demo', password: 'not-the-password' }),
    (err) => {
      assert.ok(err instanceof client.ResponseBodyError, `unexpected error: ${err}`)
      assert.equal(err.error, 'invalid_grant')
      assert.equal(err.status, 400)
      return true
    },
  )
})

for (const [name, auth] of [
  ['client_secret_post', client.ClientSecretPost('demo-secret')],
  ['client_secret_basic', client.ClientSecretBasic('demo-secret')],
]) {
  test(`client credentials, ${name}`, async () => {
    const config = await client.discovery(new URL(issuer), 'demo-service', undefined, auth, insecure)
    const tokens = await client.clientCredentialsGrant(config)
    record(tokens)
    assert.equal(tokens.token_type, 'bearer')
    assert.equal(tokens.expires_in, 3600)
    assert.equal(tokens.scope, 'Service/Market')
    assert.equal(typeof tokens.access_token, 'string')
    assert.equal(tokens.refresh_token, undefined)
    assert.equal(tokens.claims(), undefined)
  })
}
