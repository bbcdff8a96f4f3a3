/**
 * A recall exchange on /v1/responses is found again where the client's answer stands: by its
 * first item's key (reasoning by its encrypted content), or by that item's id, as exchanges were
 * recorded before this release; and its items match whether the client sends them with their ids
 * (Codex) or without (the AI SDK).
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { responsesDoor } from '../../src/doors/responses/index.js'
import {
  hiddenKeys,
  hiddenValues,
  placeAnswers,
  placeKey,
  restoreAnswers,
} from '../../src/session/answers.js'
import { keys } from '../../src/session/records.js'

const user = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'go' }] }
const thought = (n: number) => ({
  type: 'reasoning',
  id: `rs_${n}`,
  summary: [{ type: 'summary_text', text: `Step ${n}.` }],
  encrypted_content: `gAAAA-${n}`,
})
const call = (id: string, name: string) => ({
  type: 'function_call',
  id: `fc_${id}`,
  call_id: `call_${id}`,
  name,
  arguments: '{}',
})
const output = (id: string) => ({ type: 'function_call_output', call_id: `call_${id}`, output: id })
/** What the upstream had: the recall round, then the answer the client got. */
const exchange = [thought(1), call('r', 'recall'), output('r'), thought(3), call('2', 'shell')]
/** What the client got of it (each round's reasoning, the visible call). */
const visible = [thought(1), thought(3), call('2', 'shell')]

/** The client's items put through the door's placing and restoring, with `stored` as the store. */
function restore(client: Record<string, unknown>[], stored: Map<string, string>) {
  const { placed } = placeAnswers(responsesDoor, client, 0, '')
  const values = hiddenKeys(placed).map((key) => stored.get(key))
  const found = hiddenValues(placed, values)
  return restoreAnswers(responsesDoor, client, client, placed, found).items.flat()
}

test('an exchange recorded before this release (its reasoning by id) is put back for Codex', () => {
  const place = { index: 1, previous: responsesDoor.itemDigest(user) }
  const old = placeKey(place, 'id\u0000rs_1')
  const record = {
    visible: ['id\u0000rs_1', 'id\u0000rs_3', 'call\u0000function_call\u0000call_2'],
    items: exchange,
  }
  const stored = new Map([[keys.hidden(old), JSON.stringify(record)]])
  const client = [user, ...visible, output('2')]
  assert.deepEqual(restore(client, stored), [user, ...exchange, output('2')])
})

test('an exchange recorded now is put back whether the client keeps the ids or drops them', () => {
  const place = { index: 1, previous: responsesDoor.itemDigest(user) }
  const head = responsesDoor.answerDigest(thought(1))!.text
  const record = {
    visible: visible.map((item) => responsesDoor.answerDigest(item)!.text),
    aliases: visible.map((item) => responsesDoor.alias!(item) ?? null),
    items: exchange,
  }
  const stored = new Map([[keys.hidden(placeKey(place, head)), JSON.stringify(record)]])
  const withoutIds = visible.map(({ id: _id, ...rest }) => rest)
  for (const sent of [visible, withoutIds])
    assert.deepEqual(restore([user, ...sent, output('2')], stored), [
      user,
      ...exchange,
      output('2'),
    ])
})
