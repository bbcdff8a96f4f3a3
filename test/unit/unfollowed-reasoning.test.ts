/** Which reasoning items the Responses door leaves out: those the OpenAI API would refuse. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { dropUnfollowedReasoning } from '../../src/doors/responses/orphans.js'

const rs = (id: string) => ({ type: 'reasoning', id, encrypted_content: 'x' })
const call = { type: 'function_call', call_id: 'c', name: 'shell', arguments: '{}' }
const output = { type: 'function_call_output', call_id: 'c', output: 'ok' }
const answer = { type: 'message', role: 'assistant', content: [] }
const user = { type: 'message', role: 'user', content: [] }

const ids = (perItem: any[][]) => perItem.map((list) => list.map((i) => i.id ?? i.type))

test('a reasoning item before the item it preceded stays; one before another reasoning, a user message or an output goes', () => {
  const perItem: any[][] = [
    [rs('a')],
    [call],
    [output],
    [rs('b')],
    [rs('c')],
    [answer],
    [rs('d')],
    [user],
    [rs('e')],
    [output],
  ]
  dropUnfollowedReasoning(perItem)
  assert.deepEqual(ids(perItem), [
    ['a'],
    ['function_call'],
    ['function_call_output'],
    [],
    ['c'],
    ['message'],
    [],
    ['message'],
    [],
    ['function_call_output'],
  ])
})

test('a restored exchange is whole; a reasoning item that ends the request is left', () => {
  const restored: any[][] = [
    [rs('a'), { ...call, name: 'recall' }, output, rs('b')],
    [answer],
    [rs('z')],
  ]
  dropUnfollowedReasoning(restored)
  assert.deepEqual(ids(restored), [
    ['a', 'function_call', 'function_call_output', 'b'],
    ['message'],
    ['z'],
  ])
})
