// The device authorization grant (RFC 8628) with openid-client v6:
// initiateDeviceAuthorization, the verification page driven with fetch and
// its cookies as a browser would (login, then Allow or Deny), and
// pollDeviceAuthorizationGrant waiting for the answer.
// integration/identity_node_test.go runs it with GATEHOUSE_ISSUER and
// GATEHOUSE_TOKENS_FILE (see oidc.test.mjs).
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
const insecure = { execute: [client.allowInsecureRequests] }

function record(...values) {
  if (!tokensFile) return
  for (const v of values) if (v) appendFileSync(tokensFile, v + '\n')
}

function hiddenFields(html) {
  const fields = new URLSearchParams()
  const unescape = (s) => s.replace(/&#43;/g, '+').replace(/&#34;/g, '"').replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')
  for (const m of html.matchAll(/<input type="hidden" name="([a-z_]+)" value="([^"]*)">/g)) {
    fields.set(m[1], unescape(m[2]))
  }
  return fields
}

// browser keeps cookies across fetches, as a browser would.
function browser() {
  const jar = new Map()
  const keep = (res) => {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';')
      jar.set(pair.split('=')[0], pair)
    }
    return res
  }
  const cookie = () => [...jar.values()].join('; ')
  return {
    get: async (url) => keep(await fetch(url, { redirect: 'manual', headers: { Cookie: cookie() } })),
    post: async (path, form) => keep(await fetch(`${issuer}${path}`, {
      method: 'POST', redirect: 'manual', body: form,
      headers: { Cookie: cookie(), Origin: issuer, 'Content-Type': 'application/x-www-form-urlencoded' },
    })),
  }
}

// answer logs in on the verification page of uri and answers decision.
async function answer(uri, decision) {
  const b = browser()
  const login = await b.get(uri)
  assert.equal(login.status, 200, 'the verification page asks for a login')
  const form = hiddenFields(await login.text())
  assert.ok(form.get('csrf_token'), 'the login form carries its token')
  form.set('username', 'demo')
  form.set('password', 'demo')
  const back = await b.post('/connect/device', form)
  assert.equal(back.status, 303, 'the login returns to the page')
  const confirm = await b.get(new URL(back.headers.get('location'), issuer))
  const html = await confirm.text()
  assert.equal(confirm.status, 200)
  assert.match(html, /Demo App/, 'the page names the client')
  const decide = hiddenFields(html)
  assert.equal(decide.get('step'), 'decide')
  decide.set('decision', decision)
  const done = await b.post('/connect/device', decide)
  assert.equal(done.status, 200, 'the decision is recorded')
}

test('device flow: initiateDeviceAuthorization, Allow, pollDeviceAuthorizationGrant', async () => {
  const config = await client.discovery(new URL(issuer), 'demo-app', undefined, client.None(), insecure)
  assert.equal(config.serverMetadata().device_authorization_endpoint, `${issuer}/connect/deviceauthorization`)
  const da = await client.initiateDeviceAuthorization(config, { scope: 'openid profile offline_access Service/Market' })
  record(da.device_code, da.user_code)
  assert.match(da.user_code, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/)
  assert.equal(da.verification_uri, `${issuer}/connect/device`)
  assert.equal(da.interval, 5)
  const polled = client.pollDeviceAuthorizationGrant(config, da)
  await answer(da.verification_uri_complete, 'allow')
  const tokens = await polled
  record(tokens.access_token, tokens.refresh_token, tokens.id_token)
  assert.equal(tokens.claims().sub, demoSubject)
  assert.equal(tokens.claims().aud, 'demo-app')
  assert.ok(tokens.refresh_token, 'offline_access gives a refresh token')
  assert.equal(tokens.scope, 'openid profile offline_access Service/Market')
  // The device code is spent.
  await assert.rejects(client.pollDeviceAuthorizationGrant(config, da),
    (err) => err.error === 'invalid_grant' || err.cause?.error === 'invalid_grant')
})

test('device flow: Deny reaches the device as access_denied', async () => {
  const config = await client.discovery(new URL(issuer), 'demo-app', undefined, client.None(), insecure)
  const da = await client.initiateDeviceAuthorization(config, { scope: 'openid Service/Market' })
  record(da.device_code, da.user_code)
  await answer(da.verification_uri_complete, 'deny')
  await assert.rejects(client.pollDeviceAuthorizationGrant(config, da),
    (err) => err.error === 'access_denied' || err.cause?.error === 'access_denied')
})
