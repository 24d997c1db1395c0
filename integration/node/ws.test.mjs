// Black-box test of the Gatehouse demo's message service with npm's ws, a
// third-party WebSocket client. integration/ws_node_test.go starts a
// gatehouse and runs this file with `node --test`, passing:
//
//	GATEHOUSE_ISSUER       the issuer URL, e.g. http://localhost:8080
//	GATEHOUSE_TOKENS_FILE  a file every issued token is appended to, one a
//	                       line, so the Go side can check that none of them
//	                       reached the server's log
//
// It takes a token for demo/demo (DEMO-ONLY public credentials) with the
// password grant, opens /ws?version=1.1 with it in the Authorization header
// and the ServiceJson sub-protocol, sends Zenith/ServerInfo and prints the
// reply on a line of its own, prefixed "ServerInfo reply: ".
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { appendFileSync } from 'node:fs'
import WebSocket from 'ws'

const issuer = process.env.GATEHOUSE_ISSUER
assert.ok(issuer, 'GATEHOUSE_ISSUER must be set')
const tokensFile = process.env.GATEHOUSE_TOKENS_FILE

const timeoutMs = 10000

async function demoToken() {
  const disc = await fetch(new URL('/.well-known/openid-configuration', issuer), { signal: AbortSignal.timeout(timeoutMs) })
  assert.equal(disc.status, 200)
  const { token_endpoint: tokenEndpoint } = await disc.json()
  const resp = await fetch(tokenEndpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'password',
      client_id: 'demo-app',
      username: 'demo',
      password: 'demo',
      scope: 'openid Service/Market',
    }),
    signal: AbortSignal.timeout(timeoutMs),
  })
  const body = await resp.json()
  assert.equal(resp.status, 200, JSON.stringify(body.error ?? body))
  if (tokensFile) appendFileSync(tokensFile, body.access_token + '\n')
  return body.access_token
}

test('ServerInfo over /ws with the token in the Authorization header', async () => {
  const token = await demoToken()
  const url = issuer.replace(/^http/, 'ws') + '/ws?version=1.1'
  const ws = new WebSocket(url, 'ServiceJson', {
    headers: { Authorization: 'Bearer ' + token },
    handshakeTimeout: timeoutMs,
  })
  try {
    const reply = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no reply within ' + timeoutMs + 'ms')), timeoutMs)
      ws.on('error', (err) => { clearTimeout(timer); reject(err) })
      ws.on('close', (code) => { clearTimeout(timer); reject(new Error('closed with ' + code)) })
      ws.on('open', () => {
        assert.equal(ws.protocol, 'ServiceJson')
        ws.send(JSON.stringify({ Controller: 'Zenith', Topic: 'ServerInfo', TransactionID: 1 }))
      })
      ws.on('message', (data, isBinary) => {
        assert.equal(isBinary, false)
        const msg = JSON.parse(data.toString('utf8'))
        if (msg.TransactionID === 1) { clearTimeout(timer); resolve(msg) }
      })
    })
    console.log('ServerInfo reply: ' + JSON.stringify(reply))
    assert.equal(reply.Controller, 'Zenith')
    assert.equal(reply.Topic, 'ServerInfo')
    assert.notEqual(reply.Action, 'Error')
  } finally {
    ws.close(1000)
  }
})
