// The code flow with openid-client v6: buildAuthorizationUrl with PKCE
// (S256), state and nonce; the login page driven with fetch and its
// cookies, as a browser would post it; authorizationCodeGrant checking the
// callback's state and iss (RFC 9207), the PKCE verifier and the ID token's
// nonce. integration/identity_node_test.go runs it with GATEHOUSE_ISSUER
// and GATEHOUSE_TOKENS_FILE (see oidc.test.mjs).
//
// DEMO-ONLY credentials: demo/demo and demo-app of Caddyfile.example.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { appendFileSync } from 'node:fs'
import * as client from 'openid-client'

const issuer = process.env.GATEHOUSE_ISSUER
assert.ok(issuer, 'GATEHOUSE_ISSUER must be set')
const tokensFile = process.env.GATEHOUSE_TOKENS_FILE
const demoSubject = '5d1c6f2e-8a4b-4c1e-9f3a-2b7d8e6c4a10'
const redirectUri = 'http://127.0.0.1:45678/callback' // a loopback port of its own: RFC 8252 §7.3
const insecure = { execute: [client.allowInsecureRequests] }

function record(...values) {
  if (!tokensFile) return
  for (const v of values) if (v) appendFileSync(tokensFile, v + '\n')
}

// hiddenFields reads the hidden inputs of a page's form.
function hiddenFields(html) {
  const fields = new URLSearchParams()
  const unescape = (s) => s.replace(/&#43;/g, '+').replace(/&#34;/g, '"').replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')
  // The first form's: the login page's passkey form follows it.
  const first = html.split('</form>')[0]
  for (const m of first.matchAll(/<input type="hidden" name="([a-z_]+)" value="([^"]*)">/g)) {
    fields.set(m[1], unescape(m[2]))
  }
  return fields
}

// cookiesOf is the Cookie header for the cookies a response sets.
function cookiesOf(res, jar) {
  for (const c of res.headers.getSetCookie()) {
    const [pair] = c.split(';')
    const [name] = pair.split('=')
    jar.set(name, pair)
  }
  return [...jar.values()].join('; ')
}

// login opens the authorization URL and submits the login form, returning
// the redirect back to the client.
async function login(authorizationUrl, username, password) {
  const jar = new Map()
  const page = await fetch(authorizationUrl, { redirect: 'manual' })
  assert.equal(page.status, 200, 'the login page')
  const cookie = cookiesOf(page, jar)
  const form = hiddenFields(await page.text())
  assert.ok(form.get('csrf_token') && form.get('request'), 'the login form carries its token and request')
  form.set('username', username)
  form.set('password', password)
  const res = await fetch(`${issuer}/connect/login`, {
    method: 'POST',
    redirect: 'manual',
    body: form,
    headers: { Cookie: cookie, Origin: issuer, 'Content-Type': 'application/x-www-form-urlencoded' },
  })
  assert.equal(res.status, 303, 'the login form redirects back to the client')
  return new URL(res.headers.get('location'))
}

test('code flow with PKCE: buildAuthorizationUrl, authorizationCodeGrant', async () => {
  const config = await client.discovery(new URL(issuer), 'demo-app', undefined, client.None(), insecure)
  assert.equal(config.serverMetadata().authorization_response_iss_parameter_supported, true)
  const verifier = client.randomPKCECodeVerifier()
  const state = client.randomState()
  const nonce = client.randomNonce()
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'openid profile email offline_access',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  })
  const callback = await login(url, 'demo', 'demo')
  assert.equal(callback.origin + callback.pathname, redirectUri)
  record(callback.searchParams.get('code'))

  const tokens = await client.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: verifier,
    expectedState: state,
    expectedNonce: nonce,
    idTokenExpected: true,
  })
  record(tokens.access_token, tokens.refresh_token, tokens.id_token)
  const claims = tokens.claims()
  assert.equal(claims.sub, demoSubject)
  assert.equal(claims.aud, 'demo-app')
  assert.equal(claims.nonce, nonce)
  assert.ok(claims.sid && claims.auth_time && claims.at_hash)
  assert.ok(tokens.refresh_token, 'offline_access gives a refresh token')

  const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub)
  assert.equal(info.email, 'demo@example.com')

  // The code was used: a second grant is refused.
  await assert.rejects(
    client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce }),
    (err) => err.error === 'invalid_grant' || err.cause?.error === 'invalid_grant',
  )
})
