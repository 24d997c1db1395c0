// RP-initiated logout with openid-client v6: buildEndSessionUrl from
// discovery's end_session_endpoint, with a registered post-logout URI and
// state (the browser without a session is sent straight back, with state),
// and an unregistered one (refused, never redirected: no open redirect).
// integration/identity_node_test.go runs it with GATEHOUSE_ISSUER.
//
// DEMO-ONLY client: demo-web of Caddyfile.example.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { appendFileSync } from 'node:fs'
import * as client from 'openid-client'

const issuer = process.env.GATEHOUSE_ISSUER
assert.ok(issuer, 'GATEHOUSE_ISSUER must be set')
const insecure = { execute: [client.allowInsecureRequests] }
const tokensFile = process.env.GATEHOUSE_TOKENS_FILE

function record(...values) {
  if (!tokensFile) return
  for (const v of values) if (v) appendFileSync(tokensFile, v + '\n')
}

test('buildEndSessionUrl: registered post_logout_redirect_uri, state echoed', async () => {
  const config = await client.discovery(new URL(issuer), 'demo-web', 'demo-web-secret', undefined, insecure)
  const meta = config.serverMetadata()
  assert.equal(meta.end_session_endpoint, `${issuer}/connect/endsession`)
  assert.equal(meta.frontchannel_logout_supported, true)
  assert.equal(meta.backchannel_logout_supported, true)
  const url = client.buildEndSessionUrl(config, {
    post_logout_redirect_uri: `${issuer}/demo/`,
    state: 'node-state',
  })
  assert.equal(url.searchParams.get('client_id'), 'demo-web')
  const res = await fetch(url, { redirect: 'manual' })
  assert.equal(res.status, 302)
  const back = new URL(res.headers.get('location'))
  assert.equal(back.origin + back.pathname, `${issuer}/demo/`)
  assert.equal(back.searchParams.get('state'), 'node-state')
})

test('buildEndSessionUrl: an unregistered post_logout_redirect_uri is refused', async () => {
  const config = await client.discovery(new URL(issuer), 'demo-web', 'demo-web-secret', undefined, insecure)
  const url = client.buildEndSessionUrl(config, { post_logout_redirect_uri: 'https://evil.example/', state: 's' })
  const res = await fetch(url, { redirect: 'manual' })
  assert.equal(res.status, 400)
  assert.equal(res.headers.get('location'), null)
})

test('buildEndSessionUrl with an id_token_hint: accepted, then a forged one refused', async () => {
  const config = await client.discovery(new URL(issuer), 'demo-app', undefined, client.None(), insecure)
  const tokens = await client.genericGrantRequest(config, 'password', { username: 'demo', password: 'demo', scope: 'openid profile' })
  record(tokens.access_token, tokens.id_token)
  assert.ok(tokens.id_token, 'an ID token')
  const ok = await fetch(client.buildEndSessionUrl(config, { id_token_hint: tokens.id_token }), { redirect: 'manual' })
  assert.equal(ok.status, 200, 'the hint is accepted; without a session, the logged-out page')
  assert.match(await ok.text(), /You are signed out/)
  const [h, p] = tokens.id_token.split('.')
  const forged = `${h}.${p}.${Buffer.from('not the signature').toString('base64url')}`
  const bad = await fetch(client.buildEndSessionUrl(config, { id_token_hint: forged }), { redirect: 'manual' })
  assert.equal(bad.status, 400, 'a forged hint is refused')
})
