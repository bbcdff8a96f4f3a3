import assert from 'node:assert/strict'
import { test } from 'node:test'
import { upstreamError } from '../../src/pipeline/door.js'

test("an upstream's error as each server writes it: its type, code and message", () => {
  // OpenAI.
  assert.deepEqual(
    upstreamError({
      error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' },
    }),
    { type: 'requests', code: 'rate_limit_exceeded', message: 'Rate limit reached' },
  )
  // Anthropic.
  assert.deepEqual(
    upstreamError({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
    { type: 'overloaded_error', code: undefined, message: 'Overloaded' },
  )
  // llama.cpp, vLLM and OpenRouter: the status as a number.
  assert.deepEqual(
    upstreamError({
      error: {
        code: 400,
        message: 'the request exceeds the available context size',
        type: 'exceed_context_size_error',
      },
    }),
    {
      type: 'exceed_context_size_error',
      code: '400',
      message: 'the request exceeds the available context size',
    },
  )
  // vLLM before 0.10: the body is the error.
  assert.deepEqual(
    upstreamError({
      object: 'error',
      message: "This model's maximum context length is 4096 tokens.",
      type: 'BadRequestError',
      param: null,
      code: 400,
    }),
    {
      type: 'BadRequestError',
      code: '400',
      message: "This model's maximum context length is 4096 tokens.",
    },
  )
  assert.equal(upstreamError({ choices: [] }), undefined)
  assert.equal(upstreamError('Bad Gateway'), undefined)
})
