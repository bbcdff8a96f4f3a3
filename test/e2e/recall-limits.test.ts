/**
 * What one recall round answers is bounded (loop.json `proxy.recall.max_calls`, `round_chars`):
 * the window bounds an answer in lines only, so a model (a prompt injection) that recalled a
 * 4 MB one-line result 100 times in a round made a 419 MB upstream request, and at 150 the proxy
 * failed with a 500. And an id the store cannot keep (a lone surrogate) is answered, not a 400.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { fill, formatId } from '../../src/context/index.js'
import { DOORS } from '../helpers/doors.js'
import type { RecordedRequest } from '../helpers/fake-upstream.js'
import { chatCompletion } from '../helpers/fake-upstream.js'
import { toolTexts } from '../helpers/model.js'
import { chatWithResults, loop, postChat, proxyOnFake } from '../helpers/proxy.js'

const { max_calls: maxCalls, round_chars: roundChars } = loop.proxy.recall
const id = (n: number) => formatId(n, loop.context.ids.digits)
const tooMany = (target: string) =>
  fill(loop.proxy.recall.too_many_answer, { max: maxCalls, target })
const cutNote = (next: number) => fill(loop.proxy.recall.cut_note, { next, max: roundChars })

/** The model's answer on chat: a recall call with each of these arguments. */
function recalls(args: readonly Record<string, unknown>[]) {
  const toolCalls = args.map((a, i) => ({
    id: `r${i}`,
    name: 'recall',
    arguments: JSON.stringify(a),
  }))
  return { json: chatCompletion({ toolCalls }) }
}

describe('a round answers at most max_calls recalls', () => {
  const fixture = proxyOnFake()

  for (const door of DOORS)
    for (const stream of [false, true])
      test(`${door.name}${stream ? ', streaming' : ''}: the calls past it get a short refusal each and claim no id`, async () => {
        const calls = maxCalls + 4
        let round: RecordedRequest | undefined
        fixture.upstream.setScript((request, index) => {
          if (index === 0)
            return door.respond(request, { calls: [{ id: 'c1', name: 'Bash', args: {} }] }, 0)
          if (index === 1) {
            const asked = Array.from({ length: calls }, (_, i) => ({
              id: `r${i}`,
              name: 'recall',
              args: { id: '#0001' },
            }))
            return door.respond(request, { calls: asked }, 1)
          }
          if (index === 2) round = request
          if (index === 3)
            return door.respond(request, { calls: [{ id: 'c2', name: 'Bash', args: {} }] }, 3)
          return door.respond(request, { text: 'Done.' }, index)
        })
        fixture.upstream.requests.length = 0
        const client = door.client({ stream })
        client.user('list the files')
        const first = await client.send(fixture.proxy.url)
        client.results(first.calls, ['a.ts\nb.ts'])
        const answer = await client.send(fixture.proxy.url)
        assert.equal(answer.status, 200, answer.raw)
        assert.equal(answer.text, 'Done.')
        const texts = door.results(round!).slice(-calls)
        assert.equal(texts.length, calls, 'every call has its result')
        const answered = Array.from(
          { length: maxCalls },
          (_, i) => `[${id(2 + i)} recall #0001 lines 1-2 of 2]\na.ts\nb.ts`,
        )
        assert.deepEqual(texts, [...answered, ...Array(4).fill(tooMany('#0001'))])
        // The refused calls took no ids: the next result's id follows the answered ones.
        client.user('again')
        const next = await client.send(fixture.proxy.url)
        client.results(next.calls, ['c.ts'])
        assert.equal((await client.send(fixture.proxy.url)).text, 'Done.')
        const last = door.results(fixture.upstream.requests.at(-1)!).at(-1)!
        assert.ok(last.startsWith(`[${id(2 + maxCalls)}]`), last)
      })
})

describe('the answers of a round share round_chars characters', () => {
  const fixture = proxyOnFake()

  test('an answer past what is left shows the whole lines that fit and which offset shows the rest; the next round has its own', async () => {
    const width = roundChars / 20
    const lines = Array.from({ length: 25 }, (_, i) => String(i + 1).padEnd(width, '.'))
    const rounds: RecordedRequest[] = []
    fixture.upstream.requests.length = 0 // the script's index counts them
    fixture.upstream.setScript((request, index) => {
      if (index === 0)
        return recalls([{ id: '#0001' }, { id: '#0001', offset: 20 }, { id: '#0002' }])
      rounds.push(request)
      if (index === 1) return recalls([{ id: '#0001', offset: 20 }])
      return { json: chatCompletion({ content: 'Done.' }) }
    })
    const body = chatWithResults([
      { id: 'c1', output: lines.join('\n') },
      { id: 'c2', output: 'a\nb' },
    ])
    const answer = await postChat(fixture.proxy.url, body, { 'x-session-id': 'shared' })
    assert.equal(answer.status, 200, answer.text.slice(0, 300))
    assert.deepEqual(toolTexts(rounds[0]!.json).slice(-3), [
      `[#0003 recall #0001 lines 1-19 of 25]\n${lines.slice(0, 19).join('\n')}\n${cutNote(20)}`,
      `[#0004] ${cutNote(20)}`,
      // What is left still shows a short answer whole, byte for byte the spec's.
      '[#0005 recall #0002 lines 1-2 of 2]\na\nb',
    ])
    assert.equal(
      toolTexts(rounds[1]!.json).at(-1),
      `[#0006 recall #0001 lines 20-25 of 25]\n${lines.slice(19).join('\n')}`,
    )
  })

  test('a line longer than a round shows its start, cut between characters, and the line after it', async () => {
    const length = roundChars + 10
    let round: RecordedRequest | undefined
    fixture.upstream.requests.length = 0 // the script's index counts them
    fixture.upstream.setScript((request, index) => {
      if (index === 0) return recalls([{ id: '#0001' }])
      round = request
      return { json: chatCompletion({ content: 'Done.' }) }
    })
    // Two UTF-16 units a character: a cut between units would be a lone surrogate.
    const body = chatWithResults([{ id: 'c1', output: '😀'.repeat(length) }])
    const answer = await postChat(fixture.proxy.url, body, { 'x-session-id': 'long-line' })
    assert.equal(answer.status, 200, answer.text.slice(0, 300))
    const bracket = '[#0002 recall #0001 lines 1-1 of 1]'
    const shown = roundChars - bracket.length - 1
    const note = fill(loop.proxy.recall.line_cut_note, { line: 1, shown, length, next: 2 })
    const got = toolTexts(round!.json).at(-1)!
    // Not assert.equal: a diff of 4 MB of emoji is no help.
    const want = `${bracket}\n${'😀'.repeat(shown)}\n${note}`
    assert.ok(got === want, `${got.slice(0, 60)} … ${got.slice(-160)}`)
  })

  for (const stream of [false, true])
    test(`a flood of recalls of a long line${stream ? ', streaming' : ''}: the round's request stays within round_chars`, async () => {
      let round: RecordedRequest | undefined
      const calls = 40
      fixture.upstream.requests.length = 0 // the script's index counts them
      fixture.upstream.setScript((request, index) => {
        if (index === 0) {
          const toolCalls = Array.from({ length: calls }, (_, i) => ({
            id: `f${i}`,
            name: 'recall',
            args: { id: '#0001' },
          }))
          return DOORS[0]!.respond(request, { calls: toolCalls }, 0)
        }
        round = request
        return DOORS[0]!.respond(request, { text: 'Done.' }, index)
      })
      const body = {
        ...chatWithResults([{ id: 'c1', output: 'z'.repeat(roundChars * 1.5) }]),
        stream,
      }
      const answer = await postChat(fixture.proxy.url, body, { 'x-session-id': `flood-${stream}` })
      assert.equal(answer.status, 200, answer.text.slice(0, 300))
      assert.equal(toolTexts(round!.json).length, 1 + calls, 'every call has its result')
      assert.ok(
        round!.body.length < roundChars + 100_000,
        `the round's request is ${round!.body.length} bytes`,
      )
    })
})

describe('a recall id the store cannot keep as it came', () => {
  const fixture = proxyOnFake()

  for (const stream of [false, true])
    test(`a lone surrogate in the id is answered as unknown${stream ? ', streaming' : ''}, not refused with a 400`, async () => {
      let round: RecordedRequest | undefined
      fixture.upstream.requests.length = 0 // the script's index counts them
      fixture.upstream.setScript((request, index) => {
        if (index === 0) {
          // The second id's pair is cut by the 40 units the answer names.
          const ids = ['\ud800', 'x'.repeat(39) + '😀']
          const calls = ids.map((given, i) => ({
            id: `u${i}`,
            name: 'recall',
            args: { id: given },
          }))
          return DOORS[0]!.respond(request, { calls }, 0)
        }
        round = request
        return DOORS[0]!.respond(request, { text: 'Done.' }, index)
      })
      const body = { ...chatWithResults([{ id: 'c1', output: 'a\nb' }]), stream }
      const answer = await postChat(fixture.proxy.url, body, {
        'x-session-id': `surrogate-${stream}`,
      })
      assert.equal(answer.status, 200, answer.text)
      assert.doesNotMatch(answer.text, /surrogate/)
      const unknown = (target: string) =>
        fill(loop.context.texts.recall_unknown, { target: '#' + target })
      assert.deepEqual(toolTexts(round!.json).slice(-2), [
        `[#0002] ${unknown('\ufffd')}`,
        `[#0003] ${unknown('x'.repeat(39) + '\ufffd')}`,
      ])
    })
})
