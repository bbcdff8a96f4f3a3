import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { requestHeadersForUpstream, responseHeadersForClient } from '../../src/http/headers.js'

describe('requestHeadersForUpstream', () => {
  test('forwards the allowlist and custom x- headers, lower-cased', () => {
    const forwarded = requestHeadersForUpstream({
      Authorization: 'Bearer sk-test',
      'api-key': 'azure-key',
      'X-Api-Key': 'anthropic-key',
      'Content-Type': 'application/json',
      accept: 'text/event-stream',
      'user-agent': 'qwen-code/1.0',
      'openai-organization': 'org-1',
      'openai-project': 'proj-1',
      'openai-beta': 'assistants=v2',
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'tools-2024',
      'http-referer': 'https://example.test',
      'x-title': 'my agent',
      'x-stainless-lang': 'js',
      'x-session-id': 'abc',
      'chatgpt-account-id': 'acct-1',
      originator: 'codex_exec',
      'session-id': 's-1',
      'thread-id': 't-1',
      version: '0.171.0',
    })
    assert.deepEqual(forwarded, {
      authorization: 'Bearer sk-test',
      'api-key': 'azure-key',
      'x-api-key': 'anthropic-key',
      'content-type': 'application/json',
      accept: 'text/event-stream',
      'user-agent': 'qwen-code/1.0',
      'openai-organization': 'org-1',
      'openai-project': 'proj-1',
      'openai-beta': 'assistants=v2',
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'tools-2024',
      'http-referer': 'https://example.test',
      'x-title': 'my agent',
      'x-stainless-lang': 'js',
      'x-session-id': 'abc',
      'chatgpt-account-id': 'acct-1',
      originator: 'codex_exec',
      'session-id': 's-1',
      'thread-id': 't-1',
      version: '0.171.0',
    })
  })

  test('never forwards hop-by-hop, framing, proxy or unlisted headers', () => {
    const forwarded = requestHeadersForUpstream({
      authorization: 'Bearer k',
      connection: 'keep-alive',
      'keep-alive': 'timeout=5',
      'proxy-authorization': 'Basic cHJveHk=',
      'proxy-connection': 'keep-alive',
      te: 'trailers',
      trailer: 'x-checksum',
      'transfer-encoding': 'chunked',
      upgrade: 'websocket',
      host: 'proxy.local:3000',
      'content-length': '42',
      'accept-encoding': 'gzip',
      cookie: 'session=1',
      'x-forwarded-for': '10.0.0.1',
      'x-forwarded-proto': 'https',
      'x-real-ip': '10.0.0.1',
      'x-client-ip': '10.0.0.1',
      'x-originating-ip': '10.0.0.1',
      'x-cluster-client-ip': '10.0.0.1',
      'x-original-url': '/admin',
      'x-rewrite-url': '/admin',
      'x-http-method-override': 'DELETE',
      'x-http-method': 'DELETE',
      'x-method-override': 'DELETE',
      'openai-something-else': 'no',
    })
    assert.deepEqual(forwarded, { authorization: 'Bearer k' })
  })

  test('drops every header named in Connection, even an allowlisted one', () => {
    const forwarded = requestHeadersForUpstream({
      connection: 'close, X-Foo,  x-title ',
      'x-foo': 'secret-for-the-next-hop-only',
      'x-title': 'dropped too',
      'x-bar': 'kept',
    })
    assert.deepEqual(forwarded, { 'x-bar': 'kept' })
  })

  test('reads a web Headers object', () => {
    const incoming = new Headers({
      Authorization: 'Bearer k',
      Connection: 'x-foo',
      'X-Foo': '1',
      'Content-Length': '3',
      'X-Custom': 'yes',
    })
    assert.deepEqual(requestHeadersForUpstream(incoming), {
      authorization: 'Bearer k',
      'x-custom': 'yes',
    })
  })

  test('joins array values and skips undefined ones', () => {
    assert.deepEqual(
      requestHeadersForUpstream({
        accept: ['application/json', 'text/event-stream'],
        'x-a': undefined,
      }),
      { accept: 'application/json, text/event-stream' },
    )
  })

  test('drop removes more headers, case-insensitively', () => {
    const forwarded = requestHeadersForUpstream(
      { authorization: 'Bearer client', 'x-lembas-key': 'proxy-secret', 'x-keep': '1' },
      { drop: ['X-Lembas-Key'] },
    )
    assert.deepEqual(forwarded, { authorization: 'Bearer client', 'x-keep': '1' })
  })
})

describe('responseHeadersForClient', () => {
  const upstream = {
    'content-type': 'text/event-stream; charset=utf-8',
    'content-length': '1234',
    'content-encoding': 'gzip',
    'transfer-encoding': 'chunked',
    connection: 'keep-alive',
    'keep-alive': 'timeout=5',
    date: 'Mon, 01 Jan 2024 00:00:00 GMT',
    server: 'llama.cpp',
    'set-cookie': ['a=1', 'b=2'],
    'retry-after': '3',
    'retry-after-ms': '2500',
    'x-should-retry': 'true',
    'x-request-id': 'req_1',
    'request-id': 'req_2',
    'openai-processing-ms': '120',
    'openai-version': '2020-10-01',
    'x-ratelimit-remaining-tokens': '9000',
    'anthropic-ratelimit-requests-limit': '50',
    'cache-control': 'no-cache',
    'x-other': 'not for the client',
  }
  const passed = {
    'content-type': 'text/event-stream; charset=utf-8',
    'retry-after': '3',
    'retry-after-ms': '2500',
    'x-should-retry': 'true',
    'x-request-id': 'req_1',
    'request-id': 'req_2',
    'openai-processing-ms': '120',
    'openai-version': '2020-10-01',
    'x-ratelimit-remaining-tokens': '9000',
    'anthropic-ratelimit-requests-limit': '50',
    'cache-control': 'no-cache',
  }

  test('passes the allowlist only, never content-length or content-encoding', () => {
    assert.deepEqual(responseHeadersForClient(upstream, { passthroughEncoding: false }), passed)
  })

  test('keeps content-encoding when the body passes through undecoded', () => {
    assert.deepEqual(responseHeadersForClient(upstream, { passthroughEncoding: true }), {
      ...passed,
      'content-encoding': 'gzip',
    })
  })

  test('drops a header that Connection names', () => {
    const headers = responseHeadersForClient(
      { connection: 'x-request-id', 'x-request-id': 'hop-only', 'retry-after': '1' },
      { passthroughEncoding: false },
    )
    assert.deepEqual(headers, { 'retry-after': '1' })
  })

  test('reads a web Headers object', () => {
    const headers = new Headers({ 'Content-Type': 'application/json', 'Content-Length': '2' })
    assert.deepEqual(responseHeadersForClient(headers, { passthroughEncoding: false }), {
      'content-type': 'application/json',
    })
  })
})
