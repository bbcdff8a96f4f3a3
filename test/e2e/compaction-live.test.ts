/**
 * Real agent CLIs compacting through the proxy (test/e2e/live/README.md): Qwen Code on its own
 * and on `/compress`, opencode and Kilo, the Continue CLI, Codex with a provider of its own and
 * with its built-in one (compacting on the server), Cline agentic and basic. The summary each
 * sends is found where the CLI puts it and gets the table of the files read before it; ids go
 * on after it. (Claude Code's compactions: claude-code-cli.test.ts.)
 */
import assert from 'node:assert/strict'
import { sha8 } from '../helpers/workspace.js'
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import {
  chatChunks,
  startFakeUpstream,
  type FakeResponse,
  type FakeUsage,
  type RecordedRequest,
} from '../helpers/fake-upstream.js'
import { responsesEvents } from '../helpers/fake-responses.js'
import {
  AGENT_PACKAGES,
  agentBinary,
  continueConfig,
  isolatedEnv,
  makeLiveProject,
  opencodeCommand,
  qwenFlags,
  runAgent,
  describeRun,
} from './live/agents.js'
import { liveProxy, stopOnFailure } from './live/rig.js'

const RUN_TIMEOUT_MS = 90_000
const TABLE_HEADING = '## Files read before this summary\n'

const toolNames = (json: any): string[] => (json?.tools ?? []).map((t: any) => t?.function?.name)
const usage = (prompt: number): FakeUsage => ({
  prompt_tokens: prompt,
  completion_tokens: 20,
  total_tokens: prompt + 20,
})
const call = (id: string, name: string, args: object, prompt = 1200): FakeResponse => ({
  sse: chatChunks({
    toolCalls: [{ id, name, arguments: [JSON.stringify(args)] }],
    usage: usage(prompt),
  }),
})
const say = (text: string, prompt = 1200): FakeResponse => ({
  sse: chatChunks({ content: [text], usage: usage(prompt) }),
})
const partTexts = (message: any): string[] =>
  typeof message.content === 'string'
    ? [message.content]
    : message.content.map((p: any) => p.text ?? '')
const toolTexts = (json: any): string[] =>
  json.messages.filter((m: any) => m.role === 'tool').map((m: any) => partTexts(m).join('\n'))
const row = (path: string, lines: string, sha: string, id: string) =>
  `| ${path} | ${lines} | ${sha} | ${id} |\n`

/**
 * The table the proxy put after a summary (the text or part that starts with `summary`): a
 * string grows by it, parts get one more part.
 */
function tableAfter(message: any, summary: string): string {
  const parts = partTexts(message)
  const at = parts.findIndex((text) => text.startsWith(summary))
  assert.ok(at >= 0, parts.map((t) => t.slice(0, 80)).join('\n---\n'))
  const text = parts[at]!
  const table =
    typeof message.content === 'string'
      ? text.slice(text.indexOf('\n\n' + TABLE_HEADING) + 2)
      : (parts[at + 1] ?? '')
  assert.ok(table.startsWith(TABLE_HEADING), parts.join('\n---\n').slice(0, 3000))
  return table
}

const userLine = (content: string) =>
  JSON.stringify({
    type: 'user',
    session_id: 'live',
    parent_tool_use_id: null,
    message: { role: 'user', content },
  })

const qwen = AGENT_PACKAGES.qwen
describe(`${qwen.name}@${qwen.version} compressing, run for real through the proxy`, () => {
  test(
    'on its own and on /compress: the table follows the snapshot, ids go on in one session',
    { timeout: RUN_TIMEOUT_MS + 30_000 },
    async () => {
      const project = makeLiveProject('qwen')
      const readme = join(project.root, 'README.md')
      const main: RecordedRequest[] = []
      const compressions: RecordedRequest[] = []
      const snapshot = (n: number) =>
        `<state_snapshot>\n<overall_goal>Snapshot ${n}.</overall_goal>\n</state_snapshot>`
      const fake = await startFakeUpstream((request) => {
        const json = request.json
        const last = partTexts(json?.messages?.at(-1) ?? { content: '' }).join('\n')
        if (last.includes('<state_snapshot> XML')) {
          compressions.push(request)
          // Qwen checks the summary made the history smaller by the usage it reports.
          return say(snapshot(compressions.length), 169_500)
        }
        if (!(toolNames(json).includes('read_file') && toolNames(json).includes('tool_search')))
          return say('Side answer.')
        main.push(request)
        const id = `call_q${main.length}`
        switch (main.length) {
          case 1:
            return call(id, 'read_file', { file_path: project.util })
          case 2:
            return call(id, 'read_file', { file_path: readme })
          case 3:
            // Usage near the window: the CLI compresses before its next request.
            return call(id, 'run_shell_command', { command: 'cat src/util.ts' }, 170_000)
          case 4:
            return call(id, 'read_file', { file_path: readme })
          case 6:
            return call(id, 'read_file', { file_path: project.util })
          default:
            return say(`Turn ${main.length} done.`)
        }
      })
      const stop = new AbortController()
      const rig = await liveProxy(project, fake, {}, { onAnswer: stopOnFailure(stop) })
      try {
        const run = await runAgent(
          agentBinary('qwen'),
          [
            ...qwenFlags(rig.tap.url + '/v1'),
            '--input-format',
            'stream-json',
            '--output-format',
            'stream-json',
          ],
          {
            cwd: project.root,
            env: isolatedEnv(project.home),
            timeoutMs: RUN_TIMEOUT_MS,
            stop: stop.signal,
            // One process, three turns: the next once the CLI's `result` event ends the last.
            input: {
              lines: ['Read the files.', '/compress', 'Read util.ts again.'].map(userLine),
              answered: /"type":"result"/,
            },
          },
        )
        const about = describeRun(run)
        assert.equal(run.code, 0, about)
        assert.equal(compressions.length, 2, about)
        assert.equal(main.length, 7, about)
        const utilRow = row(project.util, '1-7 of 7', sha8(project.util), '#0001')
        const readmeRow = (id: string) => row(readme, '1-2 of 2', sha8(readme), id)

        // On its own: the snapshot starts its message; the table names the two reads. The cat
        // of util.ts, a stub of #0001 in the CLI's summary request, comes in full after it (what
        // it named is gone), and is no read of the table's.
        const first = main[3]!.json
        assert.match(
          toolTexts(first)[0]!,
          /^\[#0003 src\/util\.ts lines 1-7 of 7 sha \w+\]\nCommand: cat /,
        )
        const summaryAt = first.messages.findIndex((m: any) =>
          partTexts(m).some((t) => t.startsWith('<state_snapshot>')),
        )
        const table = tableAfter(first.messages[summaryAt], snapshot(1))
        assert.ok(table.endsWith(utilRow + readmeRow('#0002')), table)
        // The next request has the CLI's reminder parts before the snapshot: the same summary,
        // its table where it was (it was left out from there on, the compaction counted again).
        const next = main[4]!.json.messages.find((m: any) =>
          partTexts(m).some((t) => t.startsWith(snapshot(1))),
        )
        assert.equal(tableAfter(next, snapshot(1)), table)
        // A read after the snapshot is in full, with the next id.
        assert.match(
          toolTexts(main[4]!.json).at(-1)!,
          new RegExp(`^\\[#0004 ${readme} lines 1-2 of 2 sha ${sha8(readme)}\\]\\n# demo`),
        )

        // On /compress: the snapshot comes after the CLI's startup reminders in its message; the
        // same session goes on (no new #0001), and the table names the read since the first.
        const second = main[5]!.json
        const compressed = second.messages.find((m: any) =>
          partTexts(m).some((t) => t.startsWith(snapshot(2))),
        )
        assert.ok(compressed, JSON.stringify(second.messages).slice(0, 2000))
        assert.match(partTexts(compressed)[0]!, /^<system-reminder>/)
        const again = tableAfter(compressed, snapshot(2))
        assert.ok(again.endsWith(readmeRow('#0004')), again)
        assert.ok(!again.includes('#0001'), again)
        assert.match(
          toolTexts(main[6]!.json).at(-1)!,
          new RegExp(`^\\[#0005 ${project.util} lines 1-7 of 7 sha ${sha8(project.util)}\\]\\n`),
        )
      } finally {
        await rig.close()
      }
    },
  )
})

// Kilo, built on opencode, sends "What did we do so far?" as the first of two parts.
for (const agent of ['opencode', 'kilo'] as const) {
  const pkg = AGENT_PACKAGES[agent]
  describe(`${pkg.name}@${pkg.version} compacting, run for real through the proxy`, () => {
    test(
      'on its own: the table follows the summary after "What did we do so far?"',
      { timeout: RUN_TIMEOUT_MS + 30_000 },
      async () => {
        const project = makeLiveProject(agent)
        const readme = join(project.root, 'README.md')
        const main: RecordedRequest[] = []
        const summaries: RecordedRequest[] = []
        const SUMMARY = '## Objective\n- Read the files.\n\n## Next Move\n- Finish.'
        const fake = await startFakeUpstream((request) => {
          const json = request.json
          const system = partTexts(json?.messages?.[0] ?? { content: '' }).join('\n')
          if (!json?.tools && system.includes('You are a context summarization agent')) {
            summaries.push(request)
            return say(SUMMARY)
          }
          if (!(toolNames(json).includes('read') && toolNames(json).includes('task')))
            return say('Side answer.')
          main.push(request)
          const id = `call_o${main.length}`
          switch (main.length) {
            case 1:
              return call(id, 'read', { filePath: project.util })
            case 2:
              return call(id, 'read', { filePath: readme })
            case 3:
              // Past the window less the output reserve (200000 − 8192): compaction comes next.
              return call(id, 'read', { filePath: project.big }, 195_000)
            default:
              return say(`Turn ${main.length} done.`)
          }
        })
        const stop = new AbortController()
        const rig = await liveProxy(
          project,
          fake,
          { sessionHeader: 'x-session-affinity' },
          { onAnswer: stopOnFailure(stop) },
        )
        try {
          const { args, env } = opencodeCommand(
            rig.tap.url + '/v1',
            project,
            'Read the files.',
            agent,
          )
          const run = await runAgent(agentBinary(agent), args, {
            cwd: project.root,
            env,
            timeoutMs: RUN_TIMEOUT_MS,
            stop: stop.signal,
          })
          assert.equal(run.code, 0, describeRun(run))
          assert.equal(summaries.length, 1, describeRun(run))
          const after = main.at(-1)!.json
          const asked = after.messages.findIndex(
            (m: any) => m.role === 'user' && partTexts(m)[0] === 'What did we do so far?',
          )
          assert.ok(asked > 0, JSON.stringify(after.messages).slice(0, 2000))
          const table = tableAfter(after.messages[asked + 1], SUMMARY)
          // The read whose result went into the summary before any request carried it is not
          // the proxy's to know.
          assert.ok(
            table.endsWith(
              row(project.util, '1-7 of 7', sha8(project.util), '#0001') +
                row(readme, '1-2 of 2', sha8(readme), '#0002'),
            ),
            table,
          )
        } finally {
          await rig.close()
        }
      },
    )
  })
}

const cn = AGENT_PACKAGES.continue
describe(`${cn.name}@${cn.version} compacting, run for real through the proxy`, () => {
  test(
    'on its own: the history opens with its summary, which gets the table',
    { timeout: RUN_TIMEOUT_MS + 30_000 },
    async () => {
      const project = makeLiveProject('continue')
      const main: RecordedRequest[] = []
      const summaries: RecordedRequest[] = []
      const SUMMARY = 'We read src/big.ts: helpers compute1 to compute49. Next: report.'
      const fake = await startFakeUpstream((request) => {
        const json = request.json
        if (!toolNames(json).includes('Read')) return say('Side answer.')
        const last = partTexts(json.messages.at(-1)).join('\n')
        if (last.startsWith('Please provide a concise summary of our conversation so far')) {
          summaries.push(request)
          return say(SUMMARY)
        }
        main.push(request)
        return main.length === 1
          ? call('call_c1', 'Read', { filepath: 'src/big.ts' })
          : say(`Turn ${main.length} done.`)
      })
      const stop = new AbortController()
      const rig = await liveProxy(project, fake, {}, { onAnswer: stopOnFailure(stop) })
      try {
        // A small window: cn counts the history itself and compacts once the read is in.
        const config = continueConfig(`${rig.tap.url}/v1`, project, [
          '    defaultCompletionOptions:',
          '      contextLength: 4000',
          '      maxTokens: 300',
        ])
        const run = await runAgent(
          agentBinary('continue'),
          ['-p', 'Read src/big.ts.', '--config', config, '--auto'],
          {
            cwd: project.root,
            env: isolatedEnv(project.home),
            timeoutMs: RUN_TIMEOUT_MS,
            stop: stop.signal,
          },
        )
        assert.equal(run.code, 0, describeRun(run))
        assert.equal(summaries.length, 1, describeRun(run))
        assert.ok(main.length >= 2, describeRun(run))
        // The summary request carried the read with its id; the history after it opens with the
        // summary, then the table.
        assert.match(toolTexts(summaries[0]!.json)[0]!, /^\[#0001 src\/big\.ts lines 1-301 of 301 /)
        const after = main[1]!.json.messages
        assert.equal(after[1].role, 'assistant')
        const table = tableAfter(after[1], SUMMARY)
        assert.ok(
          table.endsWith(row('src/big.ts', '1-301 of 301', sha8(project.big), '#0001')),
          table,
        )
        // A later request carries the summary and its table as they were.
        for (const later of main.slice(2))
          assert.deepEqual(later.json.messages[1], after[1], 'the summary changed')
      } finally {
        await rig.close()
      }
    },
  )
})

const codex = AGENT_PACKAGES.codex
/**
 * Codex compacts past `model_auto_compact_token_limit`: with a provider of the user's own, by a
 * summary request whose answer comes back as a user message; with its built-in `openai`
 * provider, on the server (an input ending `compaction_trigger`, answered with an encrypted
 * `compaction` item), the table then in a message of its own after that item.
 */
const CODEX_PROVIDERS = [
  {
    provider: 'a provider of its own',
    args: (url: string) => [
      '-c',
      'model_provider="lembas"',
      '-c',
      'model_providers.lembas.name="lembas"',
      '-c',
      `model_providers.lembas.base_url="${url}/v1"`,
      '-c',
      'model_providers.lembas.wire_api="responses"',
      '-c',
      'model_providers.lembas.env_key="LEMBAS_TEST_KEY"',
    ],
  },
  {
    provider: 'its built-in openai provider',
    args: (url: string) => ['-c', `openai_base_url="${url}/v1"`],
  },
] as const

for (const { provider, args } of CODEX_PROVIDERS) {
  describe(`${codex.name}@${codex.version} compacting with ${provider}, run for real through the proxy`, () => {
    test(
      'past model_auto_compact_token_limit: the table follows the summary, and stays',
      { timeout: RUN_TIMEOUT_MS + 30_000 },
      async () => {
        const project = makeLiveProject('codex')
        const notes = join(project.root, 'notes.txt')
        writeFileSync(notes, 'one\ntwo\nthe word is PAPAYA\n')
        const main: RecordedRequest[] = []
        const compactions: RecordedRequest[] = []
        const SUMMARY = 'notes.txt was read with cat; the word is PAPAYA. Next: answer.'
        const COMPACTION = { type: 'compaction', id: 'cmp_1', encrypted_content: 'gAAAA-opaque' }
        const answer = (id: string, item: Record<string, unknown>, inputTokens = 500) => {
          const events = responsesEvents(id, [item]) as any[]
          // Usage past the limit makes Codex compact before its next request.
          events.at(-1).response.usage = {
            input_tokens: inputTokens,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: 20,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: inputTokens + 20,
          }
          return { sse: events, done: false } satisfies FakeResponse
        }
        const message = (id: string, text: string) => ({
          type: 'message',
          id,
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', text, annotations: [] }],
        })
        // Codex 0.171 offers exec_command; an older one shell_command.
        const shell = (tools: any[], callId: string, command: string) => {
          const exec = tools.some((tool) => tool.name === 'exec_command')
          return {
            type: 'function_call',
            id: `fc_${callId}`,
            status: 'completed',
            call_id: callId,
            name: exec ? 'exec_command' : 'shell_command',
            arguments: JSON.stringify(exec ? { cmd: command } : { command }),
          }
        }
        const fake = await startFakeUpstream((request) => {
          if (!request.pathname.endsWith('/responses') || request.method !== 'POST')
            return { json: { object: 'list', data: [] } }
          const input: any[] = request.json.input
          const texts = input.map((item) => partTexts({ content: item.content ?? '' }).join('\n'))
          if (texts.at(-1)!.startsWith('You are performing a CONTEXT CHECKPOINT COMPACTION')) {
            compactions.push(request)
            return answer('resp_summary', message('msg_summary', SUMMARY))
          }
          if (input.at(-1)?.type === 'compaction_trigger') {
            compactions.push(request)
            return answer('resp_compaction', COMPACTION)
          }
          main.push(request)
          const called = (id: string) => input.some((item) => item.call_id === id)
          const tools = request.json.tools
          if (
            input.some((item) => item.type === 'compaction') ||
            texts.some((t) => t.includes(SUMMARY))
          )
            return called('call_again')
              ? answer('resp_end', message('msg_end', 'The word is PAPAYA.'))
              : answer('resp_again', shell(tools, 'call_again', 'cat notes.txt'))
          if (!called('call_cat'))
            return answer('resp_cat', shell(tools, 'call_cat', 'cat notes.txt'))
          if (!called('call_wc'))
            return answer('resp_wc', shell(tools, 'call_wc', 'wc -l notes.txt'), 200_000)
          return answer('resp_done', message('msg_done', 'Counted.'))
        })
        const stop = new AbortController()
        const rig = await liveProxy(project, fake, {}, { onAnswer: stopOnFailure(stop) })
        try {
          const run = await runAgent(
            agentBinary('codex'),
            [
              'exec',
              '--skip-git-repo-check',
              '--dangerously-bypass-approvals-and-sandbox',
              '-c',
              'model="gpt-5-codex"',
              // The proxy itself: the built-in provider tries a WebSocket first (answered 426).
              ...args(rig.proxy.url),
              '-c',
              'model_auto_compact_token_limit=1000',
              'Read notes.txt and tell me the word.',
            ],
            {
              cwd: project.root,
              env: isolatedEnv(project.home, {
                CODEX_HOME: project.home,
                LEMBAS_TEST_KEY: 'test-key',
                OPENAI_API_KEY: 'test-key',
              }),
              timeoutMs: RUN_TIMEOUT_MS,
              stop: stop.signal,
            },
          )
          assert.equal(run.code, 0, describeRun(run))
          assert.equal(compactions.length, 1, describeRun(run))
          const [after, later] = main.slice(-2).map((request) => request.json.input as any[])
          const tableOf = (input: any[]): string => {
            const at = input.findIndex(
              (item) =>
                item.type === 'compaction' ||
                (item.role === 'user' &&
                  partTexts(item)[0]!.startsWith(
                    'Another language model started to solve this problem',
                  )),
            )
            assert.ok(at >= 0, JSON.stringify(input).slice(0, 2000))
            const summary = input[at]
            if (summary.type === 'compaction') {
              assert.deepEqual(summary, COMPACTION)
              assert.deepEqual(Object.keys(input[at + 1]), ['type', 'role', 'content'])
              return partTexts(input[at + 1]).join('')
            }
            assert.ok(partTexts(summary)[0]!.endsWith(SUMMARY), partTexts(summary)[0])
            return partTexts(summary)[1] ?? ''
          }
          const table = tableOf(after!)
          assert.ok(table.startsWith(TABLE_HEADING), table)
          assert.ok(table.endsWith(row('notes.txt', '1-3 of 3', sha8(notes), '#0001')), table)
          // The summary request went with the history as the requests before it had it (the
          // wc output first seen there got its id), and no tool added to one that offers none.
          const summarised = compactions[0]!.json
          const shown = summarised.input.filter((item: any) => item.type === 'function_call_output')
          assert.match(shown[0].output, /^\[#0001 notes\.txt lines 1-3 of 3 sha /)
          assert.match(shown[1].output, /^\[#0002\]\n/)
          if (summarised.input.at(-1).type !== 'compaction_trigger')
            assert.deepEqual(summarised.tools, [])
          // The read after the summary is in full; the next request carries what this one did.
          const outputs = later!.filter((item) => item.type === 'function_call_output')
          assert.match(outputs.at(-1).output, /^\[#0003 notes\.txt lines 1-3 of 3 sha \w+\]\n/)
          const sent = main.at(-1)!.body
          assert.ok(sent.includes(JSON.stringify(after!.slice(0, after!.length - 1)).slice(1, -1)))
          assert.equal(tableOf(later!), table)
        } finally {
          await rig.close()
        }
      },
    )
  })
}

const cline = AGENT_PACKAGES.cline
/**
 * Cline (its "Cline 4" CLI) compacts on its own once the reported usage passes its window: by
 * default a model's summary (`Context summary:` opening a user message), with `--compaction
 * basic` a notice it writes itself, in a part after the task's.
 */
for (const mode of ['agentic', 'basic'] as const) {
  describe(`${cline.name}@${cline.version} compacting (${mode}), run for real through the proxy`, () => {
    test(
      'on its own past its window: the table follows the summary',
      { timeout: RUN_TIMEOUT_MS + 30_000 },
      async () => {
        const project = makeLiveProject('cline')
        const main: RecordedRequest[] = []
        const summaries: RecordedRequest[] = []
        const SUMMARY = 'We read big.ts and util.ts. Next: report.'
        const readme = join(project.root, 'README.md')
        const fake = await startFakeUpstream((request) => {
          const json = request.json
          if (!toolNames(json).includes('read_files')) {
            const system = partTexts(json?.messages?.[0] ?? { content: '' }).join('')
            if (system.startsWith('Summarize the provided coding session')) summaries.push(request)
            return say(SUMMARY)
          }
          main.push(request)
          const read = (path: string, prompt?: number) =>
            call(`call_l${main.length}`, 'read_files', { files: [{ path }] }, prompt)
          switch (main.length) {
            case 1:
              // Two files in one call: both are reads of #0001 for the table.
              return call(`call_l1`, 'read_files', {
                files: [{ path: project.big }, { path: readme }],
              })
            case 2:
              return read(project.util)
            case 3:
              // Far past the 16,000-token window: Cline compacts before its next request.
              return read(project.util, 1_000_000)
            default:
              return say(`Turn ${main.length} done.`)
          }
        })
        const stop = new AbortController()
        const rig = await liveProxy(project, fake, {}, { onAnswer: stopOnFailure(stop) })
        try {
          const binary = agentBinary('cline')
          const env = isolatedEnv(project.home, { CLINE_SESSION_BACKEND_MODE: 'local' })
          execFileSync(
            binary,
            [
              'auth',
              '-p',
              'openai',
              '-k',
              'live-key',
              '-m',
              'live-model',
              '-b',
              `${rig.tap.url}/v1`,
            ],
            { cwd: project.root, env, stdio: 'pipe', timeout: 60_000 },
          )
          // A small window, in the provider settings `cline auth` wrote.
          const settings = join(project.home, '.cline', 'data', 'settings', 'providers.json')
          const providers = JSON.parse(readFileSync(settings, 'utf8'))
          providers.providers['openai-compatible'].settings.contextWindow = 16_000
          writeFileSync(settings, JSON.stringify(providers, null, 2))
          const run = await runAgent(binary, ['--compaction', mode, 'Read the files.'], {
            cwd: project.root,
            env,
            timeoutMs: RUN_TIMEOUT_MS,
            stop: stop.signal,
          })
          assert.equal(run.code, 0, describeRun(run))
          assert.equal(summaries.length, mode === 'agentic' ? 1 : 0, describeRun(run))
          assert.ok(main.length >= 4, describeRun(run))
          const after = main[3]!.json.messages
          const opening = mode === 'agentic' ? 'Context summary:\n\n' : '<SYSTEM_NOTICE>\n'
          const table = tableAfter(after[1], opening)
          assert.ok(
            table.endsWith(
              row(project.big, '1-301 of 301', sha8(project.big), '#0001') +
                row(readme, '1-2 of 2', sha8(readme), '#0001') +
                row(project.util, '1-7 of 7', sha8(project.util), '#0002'),
            ),
            table,
          )
        } finally {
          await rig.close()
        }
      },
    )
  })
}
