import assert from 'node:assert/strict'
import { sha8 } from '../helpers/workspace.js'
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import * as zlib from 'node:zlib'
import { createLogger } from '../../src/log.js'
import { createRecorder } from '../../src/record/recorder.js'
import { runReplay } from '../../src/replay/command.js'
import { createStats } from '../../src/stats/index.js'
import { createStore } from '../../src/store/index.js'
import { createWorkspace } from '../../src/workspace/index.js'
import {
  startFakeUpstream,
  type FakeResponse,
  type FakeUpstream,
  type RecordedRequest,
} from '../helpers/fake-upstream.js'
import {
  inputPrefixViolations,
  responsesEvents,
  responsesRequests,
  type ResponsesSay,
} from '../helpers/fake-responses.js'
import {
  defaultElide,
  fullPathRequests,
  promptBlock,
  startProxy,
  type TestProxy,
} from '../helpers/proxy.js'
import { agentBinary, makeLiveProject, type LiveProject } from './live/agents.js'

/** The real Codex CLI, installed by the test set-up beside the other agents' CLIs. */
let codexBin = ''

/** The command argument in the shape of whichever shell tool Codex offers. */
function shellCall(tools: any[]): { name: string; args: Record<string, unknown> } {
  const names = new Set(tools.map((tool) => tool.name))
  if (names.has('exec_command')) return { name: 'exec_command', args: { cmd: 'seq 1 600' } }
  if (names.has('shell_command')) return { name: 'shell_command', args: { command: 'seq 1 600' } }
  return { name: 'shell', args: { command: ['bash', '-lc', 'seq 1 600'] } }
}

/** The fake model's first answer: one call of Codex's shell tool, counting to 600. */
function shellCallAnswer(tools: any[]): FakeResponse {
  const call = shellCall(tools)
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
}

/** Its answer once the count is in. */
function countedAnswer(): FakeResponse {
  const text = [{ type: 'output_text', text: 'Counted.', annotations: [] }]
  const output = [
    { type: 'message', id: 'msg_2', status: 'completed', role: 'assistant', content: text },
  ]
  return { sse: responsesEvents('resp_2', output), done: false }
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
      if (!request.pathname.endsWith('/responses')) return { json: { object: 'list', data: [] } }
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
      if (last?.type === 'function_call_output') return countedAnswer()
      return shellCallAnswer(request.json.tools)
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
    const run = promisify(execFile)(codexBin, codexArgs(proxy.url, 'count to 600'), {
      cwd: home,
      env: { ...process.env, CODEX_HOME: home, LEMBAS_TEST_KEY: 'test-key' },
      timeout: 60_000,
    })
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
    // Codex sends its prompt as a developer message and no instructions: the block is a developer
    // message after it, and no `instructions` are made (ChatGPT's backend refused any not Codex's).
    for (const request of sent) {
      assert.equal(request.instructions, undefined)
      assert.equal(request.input[0].role, 'developer')
      assert.equal(request.input[0].content.length, 1, "Codex's prompt as it sent it")
      assert.deepEqual(request.input[1], {
        type: 'message',
        role: 'developer',
        content: [{ type: 'input_text', text: promptBlock }],
      })
    }
    // The recall round happened upstream, the client never saw it, and the prefix held.
    assert.equal(last.input.at(-1).call_id, 'call_recall_1')
    assert.doesNotMatch(stdout, /recall/)
    assert.deepEqual(inputPrefixViolations(upstream.requests), [])
    // Codex's exec_command envelope is recognised: the model sees the process's output.
    assert.match(text, /^\[#0001\]\nChunk ID: /)
    assert.equal(output.call_id, 'call_codex_1')
  })
})

/**
 * Signed in with ChatGPT, Codex's built-in `openai` provider sends its Responses bodies as zstd
 * (`enable_request_compression`, on by default): `openai_base_url` points it at the proxy. The
 * sign-in is a made-up unsigned token (Codex reads its claims; only the real backend checks it).
 */
describe('the real Codex CLI signed in with ChatGPT: zstd request bodies', () => {
  const canDecodeZstd = typeof (zlib as { zstdDecompress?: unknown }).zstdDecompress === 'function'

  test(
    canDecodeZstd
      ? 'its zstd bodies are decoded, shaped (ids, recall) and sent plain'
      : 'without zstd in this node, its bodies go upstream as they came',
    async () => {
      const binary = agentBinary('codex')
      const home = mkdtempSync(join(tmpdir(), 'lembas-codex-chatgpt-'))
      writeFileSync(join(home, 'auth.json'), JSON.stringify(chatGptSignIn()))
      const upstream = await startFakeUpstream((request) => {
        if (request.method !== 'POST' || !request.pathname.endsWith('/responses'))
          return { json: { object: 'list', data: [] } }
        const last = (request.json?.input as any[] | undefined)?.at(-1)
        // A body the fake cannot read (zstd passed through on Node 20) is answered as the last.
        if (request.json && last?.type !== 'function_call_output')
          return shellCallAnswer(request.json.tools)
        return countedAnswer()
      })
      const proxy = await startProxy({
        upstreamUrl: upstream.url,
        store: await createStore('memory:', { idleTtlMs: 86_400_000 }),
      })
      try {
        const backend = upstream.url.replace(/\/v1$/, '/backend-api/')
        const run = promisify(execFile)(
          binary,
          [
            'exec',
            '--skip-git-repo-check',
            '--dangerously-bypass-approvals-and-sandbox',
            '-c',
            `openai_base_url="${proxy.url}/v1"`,
            '-c',
            `chatgpt_base_url="${backend}"`,
            '-c',
            'model="gpt-5-codex"',
            'count to 600',
          ],
          { cwd: home, env: { ...process.env, CODEX_HOME: home }, timeout: 90_000 },
        )
        run.child.stdin?.end()
        const { stdout } = await run
        assert.match(stdout, /Counted\./)
        const posts = upstream.requests.filter(
          (r) => r.method === 'POST' && r.pathname.endsWith('/responses'),
        )
        assert.ok(posts.length > 0)
        // Its WebSocket attempt was refused by the proxy (426): it went over HTTP at once.
        assert.deepEqual(
          upstream.requests.filter((r) => r.method === 'GET' && r.path.startsWith('/v1/responses')),
          [],
        )
        // What the ChatGPT backend needs besides the token reaches it.
        assert.ok(posts.every((r) => r.headers['chatgpt-account-id'] === 'acct_test'))
        assert.ok(posts.every((r) => r.headers['originator'] && r.headers['session-id']))
        if (!canDecodeZstd) {
          assert.ok(posts.every((r) => r.headers['content-encoding'] === 'zstd'))
          return
        }
        assert.ok(posts.every((r) => r.headers['content-encoding'] === undefined && r.json))
        const last = posts.at(-1)!.json
        assert.ok(last.tools.some((tool: any) => tool.name === 'recall'))
        const output = last.input.find((item: any) => item.type === 'function_call_output')
        const text =
          typeof output.output === 'string' ? output.output : JSON.stringify(output.output)
        assert.match(text, /^\[#0001\]/)
        assert.match(text, /lines elided, full output #0001\]/)
        // Codex sends its prompt as a developer message and no instructions: the block is a
        // developer message after it (Codex labels each part of its prompt: left as it came).
        for (const { json } of posts) {
          assert.equal(json.instructions, undefined)
          assert.equal(json.input[0].role, 'developer')
          assert.equal(json.input[0].content.length, 1)
          assert.deepEqual(json.input[1], {
            type: 'message',
            role: 'developer',
            content: [{ type: 'input_text', text: promptBlock }],
          })
        }
        // Codex also tries a WebSocket (GET /v1/responses) first: only its POSTs carry input.
        assert.deepEqual(inputPrefixViolations(posts), [])
      } finally {
        await proxy.close()
        await upstream.close()
        rmSync(home, { recursive: true, force: true })
      }
    },
  )
})

/** A ChatGPT sign-in as Codex keeps it: unsigned tokens whose claims name a plan and account. */
function chatGptSignIn(): Record<string, unknown> {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
  const claims = {
    email: 'test@example.com',
    exp: 4_102_444_800,
    'https://api.openai.com/auth': {
      chatgpt_plan_type: 'plus',
      chatgpt_account_id: 'acct_test',
      chatgpt_user_id: 'user_test',
    },
  }
  const token = `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.sig`
  return {
    OPENAI_API_KEY: null,
    tokens: { id_token: token, access_token: token, refresh_token: 'rt', account_id: 'acct_test' },
    last_refresh: new Date().toISOString(),
  }
}

describe('the real Codex CLI: a working session through /v1/responses, with a workspace', () => {
  test('reads, re-reads, apply_patch, ls twice, seq and recall: ids, bracket, stub, diff, Same result as', async () => {
    const binary = agentBinary('codex')
    const project = makeLiveProject('codex')
    const bigSha = sha8(project.big)
    const patch = utilPatch('edited')
    const commands = [
      'cat src/big.ts',
      'cat src/big.ts',
      "sed -n '101,120p' src/big.ts",
      'cat src/util.ts',
      `apply_patch <<'EOF'\n${patch}\nEOF`,
      'ls src',
      'ls src',
      'seq 1 1500',
      // util.ts again, run in src/ by exec_command's workdir, then by its path from the root.
      { cmd: 'cat util.ts', workdir: join(project.root, 'src') },
      'cat src/util.ts',
      // Past 10,000 bytes Codex cuts the output to a head and a tail: no read.
      'cat src/huge.ts',
    ]
    writeFileSync(
      join(project.root, 'src', 'huge.ts'),
      Array.from(
        { length: 3000 },
        (_, i) => `export const v${i + 1} = ${i + 1}; // a long line\n`,
      ).join(''),
    )
    const upstream = await scriptedCodex(
      commandsThenRecall(commands, 'call_cx', { id: '#0008', offset: 700, limit: 3 }),
    )
    const stats = createStats()
    const lines: string[] = []
    const log = createLogger('info', (line) => void lines.push(line))
    const recorder = createRecorder(join(dirname(project.root), 'records'), { log })
    const proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: 86_400_000 }),
      workspace: await createWorkspace([project.root]),
      stats,
      recorder,
      log,
    })
    try {
      const stdout = await runCodex(binary, project, proxy.url)
      if (process.env['LEMBAS_LIVE_DUMP'])
        writeFileSync(
          join(process.env['LEMBAS_LIVE_DUMP'], 'codex.json'),
          JSON.stringify(responsesRequests(upstream.requests), null, 1),
        )
      assert.match(stdout, /Session done\./)
      assert.deepEqual(inputPrefixViolations(upstream.requests), [])
      const last = responsesRequests(upstream.requests).at(-1)
      const texts = outputsOf(last)
      assert.equal(texts.length, commands.length + 1)
      texts.forEach((text, i) =>
        assert.match(text, new RegExp(`^\\[#${(i + 1).toString(16).padStart(4, '0')}[ \\]]`)),
      )
      const bracket = (id: string, range: string) =>
        `[${id} src/big.ts lines ${range} sha ${bigSha}]`
      assert.ok(texts[0]!.startsWith(bracket('#0001', '1-301 of 301') + '\n'), texts[0])
      assert.equal(
        texts[1],
        `${bracket('#0002', '1-301 of 301')} Unchanged since #0001, which already shows lines 1-301.`,
      )
      assert.equal(
        texts[2],
        `${bracket('#0003', '101-120 of 301')} Unchanged since #0001, which already shows lines 1-301.`,
      )
      assert.ok(readFileSync(project.util, 'utf8').includes('// edited'), 'Codex applied the patch')
      assert.match(texts[4]!, /^\[#0005 src\/util\.ts sha [0-9a-f]{8}\]\n@@ /)
      assert.match(texts[4]!, /\n-  return a \+ b;\n\+  return a \+ b \+ 0; \/\/ edited\n/)
      assert.equal(texts[6], '[#0007] Same result as #0006.')
      assert.match(texts[7]!, /lines elided, full output #0008\]/)
      // Recall counts the result's lines as the cap did: Codex's wrapper lines first.
      // The patched util.ts, read in src/: the file there (its hash), and the same file by
      // another path a stub of it.
      const utilSha = sha8(project.util)
      assert.ok(texts[8]!.startsWith(`[#0009 util.ts lines 1-7 of 7 sha ${utilSha}]\n`), texts[8])
      assert.equal(
        texts[9],
        `[#000a src/util.ts lines 1-7 of 7 sha ${utilSha}] Unchanged since #0009, which already shows lines 1-7.`,
      )
      assert.match(
        texts[10]!,
        /^\[#000b\]\nChunk ID: \w+\n[^]*\nOutput:\nWarning: truncated output /,
      )
      assert.equal(texts[11], '[#000c recall #0008 lines 700-702 of 1505]\n695\n696\n697')
      assert.doesNotMatch(stdout, /recall/)
      const snapshot = stats.snapshot()
      assert.equal(snapshot.totals.unrecognised, 0, JSON.stringify(snapshot.unrecognisedByTool))
      // Codex appends to its input: after the first request with a result, the fast path.
      const paths = fullPathRequests(lines)
      assert.ok(paths.requests >= commands.length - 1, `${paths.requests} requests with results`)
      assert.deepEqual(paths.full, [], 'requests of the CLI that took the full path')

      // The session as --record wrote it replays on the Responses door, blind (no workspace).
      await recorder.close()
      const report = JSON.parse(await runReplay(['--json', '--mask-turn', 'step', recorder.path]))
      assert.deepEqual(report.skipped, [])
      assert.equal(report.sessions.length, 1)
      const { totals } = report.sessions[0]
      // The first request, then one per command (the recall round is the proxy's own).
      assert.equal(totals.requests, commands.length + 1)
      assert.equal(totals.failed, 0)
      const { stubs, dedupes, caps, diffs, unrecognised, clientBreaks } = totals.actions
      assert.deepEqual(
        { stubs, dedupes, caps, diffs, unrecognised, clientBreaks },
        { stubs: 2, dedupes: 1, caps: 1, diffs: 1, unrecognised: 0, clientBreaks: 0 },
      )
      const { client, proxy: rebuilt, elided } = totals.sides
      assert.equal(rebuilt.breaks, 0)
      assert.equal(rebuilt.kept, 1)
      assert.ok(rebuilt.tokens < client.tokens, `${rebuilt.tokens} ≥ ${client.tokens}`)
      assert.ok(elided.breaks >= 1 && totals.elisions.results >= 1)
    } finally {
      await proxy.close()
      await upstream.close()
      rmSync(dirname(project.root), { recursive: true, force: true })
    }
  })
})

describe('the real Codex CLI with --elide, through /v1/responses', () => {
  test('batches of stand-ins where they elide, recall of an elided output in full', async () => {
    const binary = agentBinary('codex')
    const project = makeLiveProject('codex')
    const long = (from: number) => `seq -f 'line %g of a long output' ${from} ${from + 390}`
    const froms = [1, 1000, 2000, 3000, 4000]
    const commands = froms.map(long)
    const upstream = await scriptedCodex(commandsThenRecall(commands, 'call_el', { id: '#0001' }))
    const proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: 86_400_000 }),
      elide: defaultElide(),
    })
    try {
      const stdout = await runCodex(binary, project, proxy.url)
      assert.match(stdout, /Session done\./)
      assert.doesNotMatch(stdout, /recall/)
      const sent = responsesRequests(upstream.requests)
      assert.equal(sent.length, commands.length + 2)
      const standIns = sent.map(
        (json) => outputsOf(json).filter((text) => / Elided; recall shows it\.$/.test(text)).length,
      )
      // Every request repeats the one before but where a batch elides more: one break each.
      const violations = inputPrefixViolations(upstream.requests)
      for (const violation of violations) {
        const request = Number(/^request (\d+)/.exec(violation)?.[1])
        assert.ok(standIns[request - 1]! > standIns[request - 2]!, violation)
      }
      assert.ok(violations.length >= 1, `stand-ins per request: ${standIns}`)
      // The newest output is whole in the request that first carries it.
      sent.slice(1, commands.length + 1).forEach((json, i) => {
        const text = outputsOf(json).at(-1)!
        assert.ok(text.includes(`line ${froms[i]! + 390} of a long output`), text.slice(0, 200))
        assert.ok(text.startsWith(`[#000${i + 1}]`), text.slice(0, 40))
      })
      // #0001 is elided by the end; the recall shows it whole.
      const last = outputsOf(sent.at(-1))
      assert.equal(last[0], '[#0001] Elided; recall shows it.')
      assert.match(last.at(-1)!, /^\[#0006 recall #0001 lines 1-\d+ of \d+\]\n/)
      assert.ok(last.at(-1)!.includes('line 391 of a long output'), last.at(-1)!.slice(0, 200))
    } finally {
      await proxy.close()
      await upstream.close()
      rmSync(dirname(project.root), { recursive: true, force: true })
    }
  })
})

describe("the real Codex CLI's own apply_patch tool (gpt-5.5), through /v1/responses", () => {
  test('its answer is the diff; elided with --elide-inputs, recall shows the patch as written', async () => {
    const binary = agentBinary('codex')
    const project = makeLiveProject('codex')
    const patch = utilPatch('edited through the apply_patch tool, a patch long enough to elide')
    const tools: string[][] = []
    // Two long outputs, the patch, two more (a batch elides the patch and its input), a recall.
    const steps = ['seq 1 400', 'seq 401 800', 'patch', 'seq 801 1200', 'seq 1201 1600', 'recall']
    const upstream: FakeUpstream = await startFakeUpstream((request) => {
      if (!request.pathname.endsWith('/responses')) return { json: { object: 'list', data: [] } }
      const input: any[] = request.json.input
      tools.push((request.json.tools ?? []).map((t: any) => `${t.type}:${t.name}`))
      const step = input.filter((i) => /^(function|custom_tool)_call$/.test(i.type)).length
      const item = (() => {
        switch (steps[step]) {
          case 'patch':
            return {
              type: 'custom_tool_call',
              id: 'ctc_1',
              status: 'completed',
              call_id: 'call_p',
              name: 'apply_patch',
              input: patch,
            }
          case 'recall':
            return {
              type: 'function_call',
              id: 'fc_r',
              status: 'completed',
              call_id: 'call_r',
              name: 'recall',
              arguments: JSON.stringify({ id: '#0003' }),
            }
          case undefined:
            return {
              type: 'message',
              id: 'msg_end',
              status: 'completed',
              role: 'assistant',
              content: [{ type: 'output_text', text: 'Session done.', annotations: [] }],
            }
          default:
            return {
              type: 'function_call',
              id: `fc_${step}`,
              status: 'completed',
              call_id: `call_${step}`,
              name: 'exec_command',
              arguments: JSON.stringify({ cmd: steps[step] }),
            }
        }
      })()
      return { sse: responsesEvents(`resp_${upstream.requests.length}`, [item]), done: false }
    })
    const stats = createStats()
    const proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: 86_400_000 }),
      workspace: await createWorkspace([project.root]),
      elide: defaultElide('--elide-inputs'),
      stats,
    })
    try {
      const stdout = await runCodex(binary, project, proxy.url, 'gpt-5.5')
      assert.match(stdout, /Session done\./)
      assert.ok(tools[0]!.includes('custom:apply_patch'), `Codex offers: ${tools[0]}`)
      assert.ok(readFileSync(project.util, 'utf8').includes('// edited'), 'Codex applied the patch')
      const sent = responsesRequests(upstream.requests)
      // The request that first carries the patch's answer: its id, the file's bracket, the diff.
      const first = sent.find((json: any) =>
        json.input.some((i: any) => i.type === 'custom_tool_call_output'),
      )
      const answer = first.input.find((i: any) => i.type === 'custom_tool_call_output').output
      assert.match(answer, /^\[#0003 src\/util\.ts sha [0-9a-f]{8}\]\n@@ /)
      assert.match(answer, /\n-  return a \+ b;\n\+  return a \+ b \+ 0; \/\/ edited/)
      assert.equal(
        stats.snapshot().totals.unrecognised,
        0,
        JSON.stringify(stats.snapshot().unrecognisedByTool),
      )
      // By the end a batch elided the patch and its call; recall shows the patch as the model wrote it.
      const last = sent.at(-1)
      const call = last.input.find((i: any) => i.type === 'custom_tool_call')
      assert.equal(call.input, '[#0003] Elided; recall shows it.')
      const recalled = last.input.find(
        (i: any) => i.call_id === 'call_r' && i.type === 'function_call_output',
      ).output
      assert.ok(recalled.startsWith('[#0006 recall #0003 lines '), recalled)
      assert.ok(
        recalled.includes('\nInput: *** Begin Patch\n*** Update File: src/util.ts\n@@\n'),
        recalled,
      )
      assert.doesNotMatch(stdout, /recall/)
    } finally {
      await proxy.close()
      await upstream.close()
      rmSync(dirname(project.root), { recursive: true, force: true })
    }
  })
})

/** A patch of the live project's util.ts: its `add` returns `a + b + 0`, with `note` after. */
function utilPatch(note: string): string {
  return [
    '*** Begin Patch',
    '*** Update File: src/util.ts',
    '@@',
    ' export function add(a: number, b: number): number {',
    '-  return a + b;',
    `+  return a + b + 0; // ${note}`,
    ' }',
    '*** End Patch',
  ].join('\n')
}

/** A fake Responses API whose model says what `say` makes of each request. */
/**
 * A model that runs `commands` one a turn (call ids `<prefix>_1`, `<prefix>_2`, …), then recalls
 * with `recall`'s arguments, then says it is done; the turn is told by the calls made so far.
 */
function commandsThenRecall(
  commands: readonly (string | { cmd: string; workdir: string })[],
  prefix: string,
  recall: Record<string, unknown>,
): (request: RecordedRequest) => ResponsesSay {
  return (request) => {
    const step = request.json.input.filter((i: any) => i.type === 'function_call').length
    if (step < commands.length)
      return {
        calls: [
          {
            name: 'exec_command',
            args: typeof commands[step] === 'string' ? { cmd: commands[step] } : commands[step]!,
            id: `${prefix}_${step + 1}`,
          },
        ],
      }
    if (step === commands.length) return { calls: [{ name: 'recall', args: recall }] }
    return { text: 'Session done.' }
  }
}

async function scriptedCodex(say: (request: RecordedRequest) => ResponsesSay) {
  const upstream: FakeUpstream = await startFakeUpstream((request) => {
    if (!request.pathname.endsWith('/responses')) return { json: { object: 'list', data: [] } }
    const output = [...outputOf(say(request))]
    return { sse: responsesEvents(`resp_${upstream.requests.length}`, output), done: false }
  })
  return upstream
}

/** `codex exec` in the project, on the proxy at `url`: its stdout. */
async function runCodex(
  binary: string,
  project: LiveProject,
  url: string,
  model = 'gpt-5-codex',
): Promise<string> {
  const run = promisify(execFile)(binary, codexArgs(url, 'work through the session', model), {
    cwd: project.root,
    env: { ...process.env, CODEX_HOME: project.home, LEMBAS_TEST_KEY: 'test-key' },
    timeout: 90_000,
  })
  run.child.stdin?.end()
  return (await run).stdout
}

/** The texts of a Responses request's tool outputs, in order. */
function outputsOf(json: any): string[] {
  return json.input
    .filter((i: any) => i.type === 'function_call_output')
    .map((i: any) => (typeof i.output === 'string' ? i.output : JSON.stringify(i.output)))
}

/** codex exec with a provider at the proxy's /v1, on the Responses API. */
function codexArgs(proxyUrl: string, task: string, model = 'gpt-5-codex'): string[] {
  return [
    'exec',
    '--skip-git-repo-check',
    '--dangerously-bypass-approvals-and-sandbox',
    '-c',
    'model_provider="lembas"',
    '-c',
    `model="${model}"`,
    '-c',
    'model_providers.lembas.name="lembas"',
    '-c',
    `model_providers.lembas.base_url="${proxyUrl}/v1"`,
    '-c',
    'model_providers.lembas.wire_api="responses"',
    '-c',
    'model_providers.lembas.env_key="LEMBAS_TEST_KEY"',
    task,
  ]
}

function outputOf(say: ResponsesSay): Record<string, unknown>[] {
  if ('text' in say)
    return [
      {
        type: 'message',
        id: 'msg_end',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: say.text, annotations: [] }],
      },
    ]
  return say.calls.map((call, k) => ({
    type: 'function_call',
    id: `fc_${call.id}_${k}`,
    status: 'completed',
    call_id: call.id,
    name: call.name,
    arguments: JSON.stringify(call.args),
  }))
}
