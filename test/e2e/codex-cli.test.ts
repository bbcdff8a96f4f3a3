import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import { createStore } from '../../src/store/index.js'
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js'
import {
  inputPrefixViolations,
  responsesEvents,
  responsesRequests,
} from '../helpers/fake-responses.js'
import { startProxy, type TestProxy } from '../helpers/proxy.js'
import { agentBinary } from './live/agents.js'

/** The real Codex CLI, installed by the test set-up beside the other agents' CLIs. */
let codexBin = ''

/** The command argument in the shape of whichever shell tool Codex offers. */
function shellCall(tools: any[]): { name: string; args: Record<string, unknown> } {
  const names = new Set(tools.map((tool) => tool.name))
  if (names.has('exec_command')) return { name: 'exec_command', args: { cmd: 'seq 1 600' } }
  if (names.has('shell_command')) return { name: 'shell_command', args: { command: 'seq 1 600' } }
  return { name: 'shell', args: { command: ['bash', '-lc', 'seq 1 600'] } }
}

describe('the real Codex CLI through /v1/responses', () => {
  before(() => {
    codexBin = agentBinary('codex')
  })

  let upstream: FakeUpstream
  let proxy: TestProxy
  let home: string
  before(async () => {
    home = mkdtempSync(join(tmpdir(), 'lembas-codex-'))
    upstream = await startFakeUpstream((request) => {
      if (!request.path.endsWith('/responses')) return { json: { object: 'list', data: [] } }
      const input = request.json.input as any[]
      const last = input.at(-1)
      if (last?.type === 'function_call_output' && last.call_id === 'call_codex_1') {
        const output = [
          {
            type: 'function_call',
            id: 'fc_r',
            status: 'completed',
            call_id: 'call_recall_1',
            name: 'recall',
            arguments: JSON.stringify({ id: '#0001', offset: 300, limit: 2 }),
          },
        ]
        return { sse: responsesEvents('resp_r', output), done: false }
      }
      if (last?.type === 'function_call_output') {
        const output = [
          {
            type: 'message',
            id: 'msg_2',
            status: 'completed',
            role: 'assistant',
            content: [{ type: 'output_text', text: 'Counted.', annotations: [] }],
          },
        ]
        return { sse: responsesEvents('resp_2', output), done: false }
      }
      const call = shellCall(request.json.tools)
      const output = [
        {
          type: 'function_call',
          id: 'fc_1',
          status: 'completed',
          call_id: 'call_codex_1',
          name: call.name,
          arguments: JSON.stringify(call.args),
        },
      ]
      return { sse: responsesEvents('resp_1', output), done: false }
    })
    proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: 86_400_000 }),
    })
  })
  after(async () => {
    await proxy.close()
    await upstream.close()
    rmSync(home, { recursive: true, force: true })
  })

  test('codex exec runs a shell call; its output reaches the model with an id', async () => {
    const run = promisify(execFile)(
      codexBin,
      [
        'exec',
        '--skip-git-repo-check',
        '--dangerously-bypass-approvals-and-sandbox',
        '-c',
        'model_provider="lembas"',
        '-c',
        'model="gpt-5-codex"',
        '-c',
        'model_providers.lembas.name="lembas"',
        '-c',
        `model_providers.lembas.base_url="${proxy.url}/v1"`,
        '-c',
        'model_providers.lembas.wire_api="responses"',
        '-c',
        'model_providers.lembas.env_key="LEMBAS_TEST_KEY"',
        'count to 600',
      ],
      {
        cwd: home,
        env: { ...process.env, CODEX_HOME: home, LEMBAS_TEST_KEY: 'test-key' },
        timeout: 60_000,
      },
    )
    run.child.stdin?.end()
    const { stdout } = await run
    assert.match(stdout, /Counted\./)
    const sent = responsesRequests(upstream.requests)
    assert.ok(sent.length >= 2, `${sent.length} requests`)
    const last = sent.at(-1)
    assert.ok(last.tools.some((tool: any) => tool.name === 'recall'))
    const output = last.input.find((item: any) => item.type === 'function_call_output')
    const text = typeof output.output === 'string' ? output.output : JSON.stringify(output.output)
    assert.match(text, /^\[#0001\]/)
    assert.match(text, /lines elided, full output #0001\]/)
    // The recall round happened upstream, the client never saw it, and the prefix held.
    assert.equal(last.input.at(-1).call_id, 'call_recall_1')
    assert.doesNotMatch(stdout, /recall/)
    assert.deepEqual(inputPrefixViolations(upstream.requests), [])
    // Codex's exec_command envelope is recognised: the model sees the process's output.
    assert.match(text, /^\[#0001\]\nChunk ID: /)
    assert.equal(output.call_id, 'call_codex_1')
  })
})
