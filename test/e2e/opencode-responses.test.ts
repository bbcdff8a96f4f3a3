/**
 * opencode and Kilo CLI with their built-in `openai` provider (the AI SDK's Responses API, as
 * users with OpenAI models configure them), run for real through /v1/responses against a
 * scripted reasoning model. The AI SDK does not store its output (`store: false`) and sends
 * it back without ids: the recall round the proxy answered must still go back upstream after
 * it, byte for byte, and the prompt block is a developer message after the client's own.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { startFakeUpstream, type RecordedRequest } from '../helpers/fake-upstream.js'
import { inputPrefixViolations, responsesEvents } from '../helpers/fake-responses.js'
import { promptBlock } from '../helpers/proxy.js'
import {
  agentBinary,
  describeRun,
  makeLiveProject,
  opencodeCommand,
  opencodeSettings,
  requireRipgrep,
  runAgent,
} from './live/agents.js'
import { liveProxy, stopOnFailure } from './live/rig.js'

const RUN_TIMEOUT_MS = 75_000
const TASK = 'Read src/big.ts, then run echo.'

/** opencode's config: the `openai` provider at the proxy, a reasoning model it knows. */
function openaiConfig(baseUrl: string): object {
  return opencodeSettings('openai/gpt-5', {
    openai: {
      options: { baseURL: baseUrl, apiKey: 'live-key' },
      models: {
        'gpt-5': {
          name: 'gpt-5',
          tool_call: true,
          reasoning: true,
          limit: { context: 200000, output: 8192 },
        },
      },
    },
  })
}

const toolNames = (json: any): string[] => (json?.tools ?? []).map((t: any) => t?.name)
const isMain = (json: any) => toolNames(json).includes('read') && toolNames(json).includes('bash')

/**
 * The model: each main request's answer is one reasoning item (its encrypted content, as a
 * stateless request gets it) and a call: read big.ts, recall lines of it (the proxy's round),
 * `echo`; then text. Side requests (a title) get text.
 */
function reasoningModel(big: string, main: RecordedRequest[]) {
  let step = 0
  return (request: RecordedRequest) => {
    if (!request.pathname.endsWith('/responses') || !request.json)
      return { json: { object: 'list', data: [] } }
    if (!isMain(request.json)) return { sse: responsesEvents('resp_title', [message('A title')]) }
    main.push(request)
    const n = ++step
    const reasoning = {
      type: 'reasoning',
      id: `rs_${n}`,
      summary: [{ type: 'summary_text', text: `Step ${n}.` }],
      encrypted_content: `gAAAA-step-${n}`,
    }
    const call = (name: string, args: object) => ({
      type: 'function_call',
      id: `fc_${n}`,
      status: 'completed',
      call_id: `call_${n}`,
      name,
      arguments: JSON.stringify(args),
    })
    const said = [
      call('read', { filePath: big }),
      call('recall', { id: '#0001', offset: 10, limit: 3 }),
      call('bash', { command: 'echo after-recall', description: 'Echo' }),
    ][n - 1]
    return { sse: responsesEvents(`resp_${n}`, [reasoning, said ?? message('Done.')]) }
  }
}

function message(text: string) {
  return {
    type: 'message',
    id: 'msg_text',
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text, annotations: [] }],
  }
}

for (const agent of ['opencode', 'kilo'] as const) {
  describe(`${agent} with its openai provider (the Responses API), run for real`, () => {
    test('reads are bracketed, the recall round goes back upstream byte for byte, the block a developer message of its own', async () => {
      requireRipgrep()
      const bin = agentBinary(agent)
      const project = makeLiveProject(agent)
      const main: RecordedRequest[] = []
      const fake = await startFakeUpstream(reasoningModel(project.big, main))
      const stop = new AbortController()
      const rig = await liveProxy(project, fake, {}, { onAnswer: stopOnFailure(stop) })
      try {
        const { args, env } = opencodeCommand(
          rig.tap.url + '/v1',
          project,
          TASK,
          agent,
          openaiConfig(rig.tap.url + '/v1'),
        )
        const run = await runAgent(bin, args, {
          cwd: project.root,
          env,
          timeoutMs: RUN_TIMEOUT_MS,
          stop: stop.signal,
        })
        assert.equal(run.code, 0, describeRun(run))
        // read, read's answer (the recall round after it), echo's answer; and the round.
        assert.equal(main.length, 4, describeRun(run))
        const [first, , round, last] = main.map((r) => r.json)
        assert.equal(first.store, false, 'the AI SDK does not store its output')
        assert.deepEqual(inputPrefixViolations(main), [])
        // The round the proxy answered, as the upstream had it, in the request after it.
        const recall = last.input.findIndex((i: any) => i.name === 'recall')
        assert.ok(recall > 0, 'the recall call went back upstream')
        assert.equal(last.input[recall - 1].id, 'rs_2', 'with its reasoning item, id and all')
        assert.match(last.input[recall + 1].output, /^\[#0002 recall #0001 lines 10-12 of \d+\]\n/)
        assert.deepEqual(round.input, last.input.slice(0, round.input.length))
        // The client never saw the round: its own history has no recall call.
        const sent = rig.tap.exchanges.map((e) => JSON.parse(e.body))
        assert.ok(sent.every((body) => !JSON.stringify(body.input ?? []).includes('"recall"')))
        // The block a developer message after the one opencode opens with; no instructions.
        for (const { json } of main) {
          assert.equal(json.instructions, undefined)
          assert.equal(json.input[0].role, 'developer')
          assert.ok(!String(json.input[0].content).includes(promptBlock))
          assert.deepEqual(json.input[1], {
            type: 'message',
            role: 'developer',
            content: [{ type: 'input_text', text: promptBlock }],
          })
        }
        const read = last.input.find(
          (i: any) => i.type === 'function_call_output' && i.call_id === 'call_1',
        ).output
        assert.match(read, /^\[#0001 \S*src\/big\.ts lines 1-301 of 301 sha [0-9a-f]{8}\]/)
      } finally {
        await rig.close()
      }
    })
  })
}
