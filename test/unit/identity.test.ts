import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { test } from 'node:test'
import { sha256Hex, TEXT_SLICE } from '../../src/context/index.js'
import { shortHash, tenantOf, withQueryCredentials } from '../../src/session/identity.js'
import { toolMessageKey, toolMessageKeyPaced } from '../../src/session/fingerprints.js'
import type { ChatMessage } from '../../src/wire/chat.js'

const tenant = (headers: Record<string, string>) => tenantOf(new Headers(headers))

test('a tenant is every credential header with its name; Authorization alone as it always was', () => {
  // Sessions stored before keep their tenant: an Authorization header alone hashes its value.
  const alone = tenant({ authorization: 'Bearer k' })
  assert.equal(alone, 't' + shortHash('Bearer k'))
  const all = [
    alone,
    tenant({ 'x-api-key': 'Bearer k' }),
    tenant({ authorization: 'Bearer k', 'x-api-key': 'a' }),
    tenant({ authorization: 'Bearer k', 'x-api-key': 'b' }),
    tenant({ authorization: 'Bearer k', 'api-key': 'a' }),
    tenant({}),
  ]
  assert.equal(new Set(all).size, all.length, all.join(' '))
  assert.equal(tenant({}), 'anonymous')
})

test('a key in any other header that goes upstream makes a tenant too (Gemini, LiteLLM, Portkey)', () => {
  const all = [
    tenant({}),
    tenant({ 'x-goog-api-key': 'a' }),
    tenant({ 'x-goog-api-key': 'b' }),
    tenant({ 'x-litellm-api-key': 'a' }),
    tenant({ 'x-portkey-api-key': 'a' }),
    tenant({ 'x-auth-token': 'a' }),
    tenant({ authorization: 'Bearer k', 'x-goog-api-key': 'a' }),
  ]
  assert.equal(new Set(all).size, all.length, all.join(' '))
  // Headers that carry no key, and the proxy's own shared secret, leave the tenant as it was.
  assert.equal(tenant({ 'x-session-id': 's', 'x-lembas-auth': 'shared' }), 'anonymous')
  assert.equal(tenant({ 'x-api-key': 'k', 'x-stainless-lang': 'js' }), tenant({ 'x-api-key': 'k' }))
  assert.equal(tenant({ authorization: 'Bearer k', 'x-title': 't' }), 't' + shortHash('Bearer k'))
})

test('a bare x-token, x-auth, x-key or x-apikey makes a tenant; so does a key in the URL', () => {
  const all = [
    tenant({}),
    tenant({ 'x-token': 'a' }),
    tenant({ 'x-token': 'b' }),
    tenant({ 'x-auth': 'a' }),
    tenant({ 'x-key': 'a' }),
    tenant({ 'x-apikey': 'a' }),
  ]
  assert.equal(new Set(all).size, all.length, all.join(' '))
  const ofUrl = (search: string, headers: Record<string, string> = {}) =>
    tenantOf(withQueryCredentials(new Headers(headers), search))
  const urls = [
    ofUrl(''),
    ofUrl('?key=KA'),
    ofUrl('?key=KB'),
    ofUrl('?api_key=KA'),
    ofUrl('?access_token=KA'),
    ofUrl('?key=KA', { authorization: 'Bearer k' }),
  ]
  assert.equal(new Set(urls).size, urls.length, urls.join(' '))
  // Other parameters (Claude Code's ?beta=true) and an empty key leave the tenant as it was.
  assert.equal(
    ofUrl('?beta=true', { authorization: 'Bearer k' }),
    tenant({ authorization: 'Bearer k' }),
  )
  assert.equal(ofUrl('?key='), 'anonymous')
  const headers = new Headers({ authorization: 'Bearer k' })
  assert.equal(withQueryCredentials(headers, '?beta=true'), headers, 'no copy when there is none')
})

test("a tool message's key is the one earlier versions stored its rendering under", () => {
  // Records are found by this key after an upgrade: a new derivation would re-render (and
  // re-number) every result of every session, breaking each one's prompt cache once.
  const cases = [
    {
      message: { role: 'tool', tool_call_id: 'call_1', content: 'héllo → wörld\n' },
      key: 'RRKM3t8yE4HikGMTMg02NW',
    },
    {
      message: {
        role: 'tool',
        tool_call_id: 'toolu_01',
        content: [{ type: 'text', text: 'a "quoted" line' }],
      },
      key: '3JZTtNK0RuX95smV3B600I',
    },
  ] as const
  for (const { message, key } of cases) {
    assert.equal(toolMessageKey(message as ChatMessage), key)
    // The definition: the call id and the content's JSON, hashed as one text.
    const joined = (message.tool_call_id ?? '') + '\u0000' + JSON.stringify(message.content)
    assert.equal(toolMessageKey(message as ChatMessage), shortHash(joined))
  }
})

test('a result of megabytes gets the same key, hashed a slice at a time with pauses', async () => {
  const slice = 1 << 16
  const pair = '\u{1F600}' // one character, two UTF-16 units
  // A pair across each slice boundary, a lone surrogate on one, quotes, escapes, controls.
  const unit = 'line "q" \\ \t é→ \u0001 ' + pair
  let text = unit.repeat(Math.ceil((3 << 20) / unit.length))
  text = text.slice(0, slice - 1) + pair + text.slice(slice + 1)
  text = text.slice(0, 2 * slice - 1) + '\ud800' + text.slice(2 * slice)
  text = text.slice(0, 3 * slice - 1) + '\udc00x' + text.slice(3 * slice + 1)
  for (const content of [text, text.slice(1), text.slice(0, (1 << 20) + 3)]) {
    const message = { role: 'tool', tool_call_id: 'call_big', content } as ChatMessage
    let pauses = 0
    const key = await toolMessageKeyPaced(message, () => {
      pauses++
      return undefined
    })
    assert.equal(key, toolMessageKey(message))
    assert.ok(pauses > 10, `hashed in slices: ${pauses}`)
  }
})

test('a long text is digested in slices as if whole: pairs across slices, lone halves', () => {
  const slice = TEXT_SLICE
  let text = 'ascii, é→ and \u{1F600} '.repeat(Math.ceil((4 * slice) / 20))
  text = text.slice(0, slice - 1) + '\u{1F600}' + text.slice(slice + 1) // a pair across a cut
  text = text.slice(0, 2 * slice - 1) + '\ud800' + text.slice(2 * slice) // a lone high half
  text = text.slice(0, 3 * slice) + '\udc00' + text.slice(3 * slice + 1) // a lone low half
  for (const sample of [text, text.slice(0, slice + 1), text.slice(7)]) {
    const whole = createHash('sha256').update(sample)
    const hex = whole.copy().digest('hex')
    assert.equal(sha256Hex(sample), hex)
    assert.equal(shortHash(sample), whole.digest('base64url').slice(0, 22))
  }
})
