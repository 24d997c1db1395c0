// Black-box test of the Gatehouse token services with openid-client v6:
// userinfo (OpenID Connect Core §5.3), introspection (RFC 7662) and
// revocation (RFC 7009). integration/node_test.go starts a gatehouse with
// Caddyfile.example and runs this file with `node --test`, passing:
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
import { appendFileSync, readFileSync } from 'node:fs'
import * as client from 'openid-client'

const issuer = process.env.GATEHOUSE_ISSUER
assert.ok(issuer, 'GATEHOUSE_ISSUER must be set')
const tokensFile = process.env.GATEHOUSE_TOKENS_FILE

// The demo user as examples/users.json defines it.
const usersFile = new URL('../../examples/users.json', import.meta.url)
const demoUser = JSON.parse(readFileSync(usersFile, 'utf8')).users.find((u) => u.username === 'demo')
assert.ok(demoUser?.subject, 'examples/users.json has no subject for demo')
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

// demoApp is the public client (client_id only); demoService the
// confidential one that may introspect.
const demoApp = () => client.discovery(new URL(issuer), 'demo-app', undefined, client.None(), insecure)
const demoService = () =>
  client.discovery(new URL(issuer), 'demo-service', undefined, client.ClientSecretBasic('demo-secret'), insecure)

async function login(app) {
  const tokens = await client.genericGrantRequest(app, 'password', { username: 'demo', password: 'demo' })
  record(tokens)
  assert.equal(typeof tokens.access_token, 'string')
  assert.equal(typeof tokens.refresh_token, 'string')
  return tokens
}

// assertInactive checks that introspection calls the token inactive, with
// nothing else in the answer (RFC 7662 §2.2).
async function assertInactive(svc, token, what) {
  const res = await client.tokenIntrospection(svc, token)
  assert.deepEqual(res, { active: false }, `introspection of ${what}`)
}

// assertUserinfoRefused checks that userinfo answers the access token with
// 401 and a Bearer invalid_token challenge (RFC 6750 §3).
async function assertUserinfoRefused(app, accessToken) {
  await assert.rejects(client.fetchUserInfo(app, accessToken, demoUser.subject), (err) => {
    assert.ok(err instanceof client.WWWAuthenticateChallengeError, `unexpected error: ${err}`)
    assert.equal(err.status, 401)
    const bearer = err.cause.find((c) => c.scheme === 'bearer')
    assert.ok(bearer, `no Bearer challenge in ${JSON.stringify(err.cause)}`)
    assert.equal(bearer.parameters.realm, 'gatehouse')
    assert.equal(bearer.parameters.error, 'invalid_token')
    return true
  })
}

test('discovery names the token services', async () => {
  const md = (await demoApp()).serverMetadata()
  assert.equal(md.userinfo_endpoint, `${issuer}/connect/userinfo`)
  assert.equal(md.introspection_endpoint, `${issuer}/connect/introspect`)
  assert.equal(md.revocation_endpoint, `${issuer}/connect/revocation`)
})

test('userinfo returns the demo user', async () => {
  const app = await demoApp()
  const tokens = await login(app)
  const info = await client.fetchUserInfo(app, tokens.access_token, demoUser.subject)
  assert.equal(info.sub, demoUser.subject)
  assert.equal(info.name, demoUser.display_name)
  assert.equal(info.preferred_username, 'demo')
  assert.equal(info.email, demoUser.email)
  assert.equal(info.email_verified, demoUser.email_verified)
  assert.equal(info.password_hash, undefined)

  // openid-client checks the subject it was told to expect.
  await assert.rejects(client.fetchUserInfo(app, tokens.access_token, 'someone-else'))
})

test('introspection of an active access token', async () => {
  const app = await demoApp()
  const svc = await demoService()
  const tokens = await login(app)
  const res = await client.tokenIntrospection(svc, tokens.access_token)
  assert.equal(res.active, true)
  assert.equal(res.sub, demoUser.subject)
  assert.equal(res.client_id, 'demo-app')
  assert.deepEqual(sortedScopes(res.scope), [...demoScopes].sort())
  assert.equal(res.iss, issuer)
  assert.equal(res.token_type, 'access_token')
  assert.ok(res.exp > Date.now() / 1000, `exp ${res.exp} is not in the future`)
})

test('introspection of garbage is inactive', async () => {
  const svc = await demoService()
  await assertInactive(svc, 'not-a-token', 'an opaque string')
  await assertInactive(svc, 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl', 'a forged JWT')
})

test('introspection needs a client allowed to introspect', async () => {
  const app = await demoApp()
  const tokens = await login(app)
  await assert.rejects(client.tokenIntrospection(app, tokens.access_token), (err) => {
    assert.ok(err instanceof client.ResponseBodyError, `unexpected error: ${err}`)
    assert.ok(['invalid_client', 'unauthorized_client'].includes(err.error), `error ${err.error}`)
    return true
  })
})

test('revoking the refresh token revokes the grant', async () => {
  const app = await demoApp()
  const svc = await demoService()
  const tokens = await login(app)
  assert.equal((await client.tokenIntrospection(svc, tokens.access_token)).active, true)

  await client.tokenRevocation(app, tokens.refresh_token, { token_type_hint: 'refresh_token' })

  await assert.rejects(client.refreshTokenGrant(app, tokens.refresh_token), (err) => {
    assert.ok(err instanceof client.ResponseBodyError, `unexpected error: ${err}`)
    assert.equal(err.error, 'invalid_grant')
    assert.equal(err.status, 400)
    return true
  })
  await assertInactive(svc, tokens.access_token, 'an access token of the revoked grant')
  await assertUserinfoRefused(app, tokens.access_token)

  // Revoking it again, or an unknown token, is still 200 (RFC 7009 §2.2).
  await client.tokenRevocation(app, tokens.refresh_token)
  await client.tokenRevocation(app, 'not-a-token')
})

test('revoking the access token alone', async () => {
  const app = await demoApp()
  const svc = await demoService()
  const tokens = await login(app)
  assert.ok(tokens.claims(), 'an id_token is expected: openid was granted')
  await client.fetchUserInfo(app, tokens.access_token, demoUser.subject)

  await client.tokenRevocation(app, tokens.access_token, { token_type_hint: 'access_token' })

  await assertInactive(svc, tokens.access_token, 'the revoked access token')
  await assertUserinfoRefused(app, tokens.access_token)

  // Only that token (its jti): the refresh token still works and its new
  // access token is active.
  const refreshed = await client.refreshTokenGrant(app, tokens.refresh_token)
  record(refreshed)
  assert.notEqual(refreshed.access_token, tokens.access_token)
  const res = await client.tokenIntrospection(svc, refreshed.access_token)
  assert.equal(res.active, true)
  assert.equal(res.sub, demoUser.subject)
  await client.fetchUserInfo(app, refreshed.access_token, demoUser.subject)
})

test('another client cannot revoke demo-app tokens', async () => {
  const app = await demoApp()
  const svc = await demoService()
  const tokens = await login(app)
  // RFC 7009 §2.2: 200, and nothing changes.
  await client.tokenRevocation(svc, tokens.access_token)
  await client.tokenRevocation(svc, tokens.refresh_token)
  assert.equal((await client.tokenIntrospection(svc, tokens.access_token)).active, true)
  const refreshed = await client.refreshTokenGrant(app, tokens.refresh_token)
  record(refreshed)
})
