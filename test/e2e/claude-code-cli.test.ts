/**
 * The real Claude Code CLI (2.1.337, installed outside the repo's dependencies, see
 * test/e2e/live/README.md) run headless through the proxy's /v1/messages door against a scripted
 * fake Messages API, in a scratch project given to the proxy as its workspace: with the model
 * names on which the CLI appends `<system-reminder>` blocks to every tool result, and one without.
 */
import assert from 'node:assert/strict'
import { sha8 } from '../helpers/workspace.js'
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { describe, test } from 'node:test'
import { createLogger } from '../../src/log.js'
import { createRecorder } from '../../src/record/recorder.js'
import { runReplay } from '../../src/replay/command.js'
import { createStats, type StatsSnapshot } from '../../src/stats/index.js'
import { claudeAnswer, claudeSideAnswer, type Block } from '../helpers/fake-anthropic.js'
import { startFakeUpstream, type RecordedRequest } from '../helpers/fake-upstream.js'
import { defaultElide, fullPathRequests } from '../helpers/proxy.js'
import {
  AGENT_PACKAGES,
  agentBinary,
  describeRun,
  claudeCodeEnv,
  makeLiveProject,
  runAgent,
  type LiveProject,
} from './live/agents.js'
import { liveProxy, stopOnFailure } from './live/rig.js'

const RUN_TIMEOUT_MS = 90_000
const FINAL = 'Done: read, edited, listed, searched, wrote, ran seq and recalled its middle.'
const RECALL_FROM = 700

type Call = { name: string; input: Record<string, unknown> }

/** The session the model plays: one step per main request, told by the tool turns so far. */
function plan(project: LiveProject): ((messages: any[]) => Say)[] {
  const { big, util, root } = project
  const bash = (command: string) => ({ name: 'Bash', input: { command, description: command } })
  return [
    () => ({ name: 'Read', input: { file_path: big } }),
    () => ({ name: 'Read', input: { file_path: big } }),
    () => ({ name: 'Read', input: { file_path: big, offset: 101, limit: 20 } }),
    () => ({ name: 'Read', input: { file_path: util } }),
    () => ({
      name: 'Edit',
      input: {
        file_path: util,
        old_string: 'return a + b;',
        new_string: 'return a + b + 0; // edited',
        replace_all: false,
      },
    }),
    () => bash(`ls ${root}/src`),
    () => bash(`ls ${root}/src`),
    () => bash(`grep -rn "function compute1" ${root}/src`),
    () => bash(`grep -rn "function compute1" ${root}/src`),
    () => ({ name: 'Write', input: { file_path: join(root, 'NEW.md'), content: 'one\ntwo\n' } }),
    () => bash('seq 1 1500'),
    (messages) => ({
      name: 'recall',
      input: { id: lastId(messages), offset: RECALL_FROM, limit: 5 },
    }),
    () => bash('echo after-recall'),
    () => FINAL,
  ]
}

/** The id of the last tool result in a Messages request, from its bracket. */
function lastId(messages: any[]): string {
  const texts = messages.flatMap((m) =>
    Array.isArray(m.content)
      ? m.content.filter((b: any) => b.type === 'tool_result').map(resultText)
      : [],
  )
  const id = /^\[(#[0-9a-f]+)/.exec(texts.at(-1) ?? '')?.[1]
  if (!id) throw new Error(`no id on the last result: ${String(texts.at(-1)).slice(0, 80)}`)
  return id
}

function resultText(block: any): string {
  return typeof block.content === 'string'
    ? block.content
    : block.content.map((p: any) => p.text ?? '').join('\n')
}

/** A step's answer: a call, several at once, or the final text. */
type Say = Call | Call[] | string

/**
 * The fake model: each main request (the CLI's side requests get their own answers) is answered
 * by the step its tool turns so far name; a step that fails stops the run, with the error kept.
 */
function scriptedClaude(
  steps: readonly ((messages: any[]) => Say)[],
  run: { main: RecordedRequest[]; errors: string[]; stop: AbortController },
) {
  return (request: RecordedRequest, index: number) => {
    const side = claudeSideAnswer(request)
    if (side) return side
    const json = request.json
    let say: Say = 'Side answer.'
    if (isMain(json)) {
      run.main.push(request)
      const turns = json.messages.filter(
        (m: any) =>
          m.role === 'assistant' &&
          Array.isArray(m.content) &&
          m.content.some((b: any) => b.type === 'tool_use'),
      ).length
      try {
        const step = steps[turns]
        if (!step) throw new Error(`no step ${turns}`)
        say = step(json.messages)
      } catch (error) {
        run.errors.push(String(error))
        run.stop.abort(String(error))
        return { status: 500, body: '{"type":"error","error":{"type":"api_error"}}' }
      }
    }
    const calls = typeof say === 'string' ? [] : Array.isArray(say) ? say : [say]
    const content: Block[] =
      typeof say === 'string'
        ? [{ type: 'text', text: say }]
        : [
            { type: 'text', text: `Step ${run.main.length}.` },
            ...calls.map((call, k): Block => ({
              type: 'tool_use',
              // One call keeps the id it always had; several are told apart by their place.
              id: calls.length === 1 ? `toolu_live_${index}` : `toolu_live_${index}_${k}`,
              name: call.name,
              input: call.input,
            })),
          ]
    return claudeAnswer(request, content, index)
  }
}

/** `claude -p` headless on `model`, through `url` (the tap in front of the proxy). */
function runClaude(
  binary: string,
  project: LiveProject,
  url: string,
  model: string,
  stop: AbortSignal,
) {
  return claudeRunner(binary, project, url, stop, model)('-p', 'Work through the task.')
}

/** The CLI on the project through `url`, run with the arguments given (a prompt, a resume). */
function claudeRunner(
  binary: string,
  project: LiveProject,
  url: string,
  stop: AbortSignal,
  model = 'claude-sonnet-4-5',
) {
  return (...args: string[]) =>
    runAgent(
      binary,
      [...args, '--model', model, '--output-format', 'json', '--dangerously-skip-permissions'],
      { cwd: project.root, env: claudeCodeEnv(project.home, url), timeoutMs: RUN_TIMEOUT_MS, stop },
    )
}

/**
 * What a live Claude Code run goes through: the scripted model, the proxy (with `options`) on a
 * SQLite file beside the project, and a tap in front of it that stops the run on any answer but
 * a 200. `close` takes it all down, the project too.
 */
async function claudeRig(
  project: LiveProject,
  steps: readonly ((messages: any[]) => Say)[],
  options: Parameters<typeof liveProxy>[2],
) {
  const stop = new AbortController()
  const errors: string[] = []
  const main: RecordedRequest[] = []
  const fake = await startFakeUpstream(scriptedClaude(steps, { main, errors, stop }))
  const rig = await liveProxy(project, fake, options, { onAnswer: stopOnFailure(stop) })
  return { stop, errors, main, fake, tap: rig.tap, close: rig.close }
}

const isMain = (json: any) => {
  const names = (json?.tools ?? []).map((t: any) => t.name)
  return names.includes('Read') && names.includes('Bash')
}

/** The tool results of a Messages request, in order. */
function results(json: any): any[] {
  return json.messages.flatMap((m: any) =>
    Array.isArray(m.content) ? m.content.filter((b: any) => b.type === 'tool_result') : [],
  )
}

/** A message without the client's own cache markers, which Claude Code moves every turn. */
const unmarked = (message: unknown) =>
  JSON.stringify(message, (key, value) => (key === 'cache_control' ? undefined : value))

/** The indexes of messages the client itself changed from one of its requests to the next. */
function clientChanges(client: readonly any[]): Set<number> {
  const changed = new Set<number>()
  for (let i = 1; i < client.length; i++)
    client[i - 1].messages.forEach((message: unknown, k: number) => {
      if (unmarked(message) !== unmarked(client[i].messages[k])) changed.add(k)
    })
  return changed
}

/**
 * Each main request repeats the previous one's messages: every message the same but for the
 * client's markers and what the client itself changed (the CLI turns a message's text blocks into
 * a string on some models), and byte for byte up to the first such message.
 */
function historyChanges(main: readonly RecordedRequest[], client: readonly any[]): string[] {
  const own = clientChanges(client)
  const problems: string[] = []
  for (let i = 1; i < main.length; i++) {
    const before: any[] = main[i - 1]!.json.messages
    const after: any[] = main[i]!.json.messages
    before.forEach((message, k) => {
      if (!own.has(k) && unmarked(message) !== unmarked(after[k]))
        problems.push(`request ${i + 1} changes message ${k}`)
    })
    const moved = before.findIndex(
      (m, k) => own.has(k) || JSON.stringify(m) !== JSON.stringify(after[k]),
    )
    const prefix = JSON.stringify(moved < 0 ? before : before.slice(0, moved)).slice(0, -1)
    if (!main[i]!.body.includes(prefix)) problems.push(`request ${i + 1}: the prefix bytes moved`)
  }
  return problems
}

const hex = (n: number) => '#' + n.toString(16).padStart(4, '0')
const REMINDERS = /(?:\s*<system-reminder>[\s\S]*?<\/system-reminder>)+\s*$/

const pkg = AGENT_PACKAGES.claude
// The model names most users run: the CLI appends a tokens-left reminder to every result. A
// model name it does not know as Claude's gets none.
const MODELS = [
  { model: 'claude-sonnet-4-5', reminders: true },
  { model: 'claude-sonnet-4-6', reminders: true },
  { model: 'claude-haiku-4-5', reminders: true },
  { model: 'claude-opus-4-5', reminders: true },
  { model: 'glm-4.6', reminders: false },
]

for (const { model, reminders } of MODELS) {
  describe(`${pkg.name}@${pkg.version} (--model ${model}), run for real through /v1/messages`, () => {
    test(
      'ids, read brackets, the stub, the diff, Same result as, recall; history holds',
      { timeout: RUN_TIMEOUT_MS + 40_000 },
      async () => {
        const binary = agentBinary('claude')
        const project = makeLiveProject('claude')
        const bigSha = sha8(project.big)
        const steps = plan(project)
        const stats = createStats()
        const lines: string[] = []
        const log = createLogger('info', (line) => void lines.push(line))
        const recorder = createRecorder(join(dirname(project.root), 'records'), { log })
        const rig = await claudeRig(project, steps, { stats, recorder, log })
        const { stop, errors, main, fake, tap } = rig
        try {
          const run = await runClaude(binary, project, tap.url, model, stop.signal)
          if (process.env['LEMBAS_LIVE_DUMP'])
            writeFileSync(
              join(process.env['LEMBAS_LIVE_DUMP'], `claude-${model}.json`),
              JSON.stringify(
                {
                  run,
                  upstream: fake.requests.map((r) => r.json),
                  client: tap.exchanges.map((e) => e.json),
                },
                null,
                1,
              ),
            )
          const about = describeRun(run) + '\n' + errors.join('\n')
          assert.deepEqual(errors, [], about)
          assert.equal(run.code, 0, about)
          assert.ok(run.stdout.includes(FINAL), about)
          assert.equal(main.length, steps.length, about)
          const client = tap.exchanges.filter((e) => isMain(e.json)).map((e) => e.json)
          assert.deepEqual(historyChanges(main, client), [])
          for (const request of main) assert.equal(request.json.tools.at(-1).name, 'recall')

          const seen = results(main.at(-1)!.json).map(resultText)
          const bodies = seen.map((text) => text.replace(REMINDERS, ''))
          seen.forEach((text, i) => {
            assert.match(text, new RegExp(`^\\[${hex(i + 1)}[ \\]]`), text.slice(0, 100))
            // The recall's own result is the proxy's; every other ends as the CLI ended it.
            if (i !== 11) assert.equal(REMINDERS.test(text), reminders, `result ${i + 1}`)
          })
          const bracket = (id: number, range: string, sha: string) =>
            `[${hex(id)} ${project.big} lines ${range} sha ${sha}]`
          assert.ok(bodies[0]!.startsWith(bracket(1, '1-301 of 301', bigSha) + '\n1\t'))
          assert.equal(
            bodies[1],
            `${bracket(2, '1-301 of 301', bigSha)} Unchanged since #0001, which already shows lines 1-301.`,
          )
          assert.equal(
            bodies[2],
            `${bracket(3, '101-120 of 301', bigSha)} Unchanged since #0001, which already shows lines 1-301.`,
          )
          assert.match(bodies[4]!, new RegExp(`^\\[#0005 ${project.util} sha [0-9a-f]{8}\\]\\n@@ `))
          assert.match(bodies[4]!, /\n-  return a \+ b;\n\+  return a \+ b \+ 0; \/\/ edited\n/)
          assert.equal(bodies[6], '[#0007] Same result as #0006.')
          assert.equal(bodies[8], '[#0009] Same result as #0008.')
          assert.match(bodies[9]!, /^\[#000a \S+NEW\.md sha [0-9a-f]{8}\] Created, 2 lines\.$/)
          assert.match(bodies[10]!, /\n\[\d+ lines elided, full output #000b\]\n/)
          assert.equal(
            bodies[11],
            `[#000c recall #000b lines ${RECALL_FROM}-${RECALL_FROM + 4} of 1500]\n` +
              Array.from({ length: 5 }, (_, k) => RECALL_FROM + k).join('\n'),
          )
          assert.match(bodies[12]!, /^\[#000d\]\nafter-recall/)
          // The CLI never saw recall: not its call, not its result, not the tool.
          for (const exchange of tap.exchanges) {
            assert.ok(!exchange.response.includes('"recall"'), 'a recall reached the CLI')
            assert.ok(
              !(exchange.json?.tools ?? []).some((t: any) => t.name === 'recall'),
              'the CLI sent a recall tool',
            )
          }
          const snapshot: StatsSnapshot = stats.snapshot()
          assert.equal(snapshot.totals.unrecognised, 0, JSON.stringify(snapshot.unrecognisedByTool))
          assert.ok(!lines.some((line) => line.includes('unrecognised-result')))
          // Claude Code moves its cache breakpoint every turn; its requests still go on from the
          // previous one (the fast path), after the first that carries a result.
          const paths = fullPathRequests(lines)
          assert.ok(paths.requests >= steps.length - 2, `${paths.requests} requests with results`)
          assert.deepEqual(paths.full, [], 'requests of the CLI that took the full path')

          // The session as --record wrote it replays on the Messages door, blind (no workspace).
          await recorder.close()
          const report = JSON.parse(
            await runReplay(['--json', '--mask-turn', 'step', recorder.path]),
          )
          assert.deepEqual(report.skipped, [])
          assert.equal(report.sessions.length, 1)
          const { totals } = report.sessions[0]
          assert.equal(totals.requests, client.length)
          assert.equal(totals.failed, 0)
          // The plan's two re-reads, two repeated commands, one long output and one edit.
          const { stubs, dedupes, caps, diffs, unrecognised, clientBreaks } = totals.actions
          assert.deepEqual(
            { stubs, dedupes, caps, diffs, unrecognised, clientBreaks },
            { stubs: 2, dedupes: 2, caps: 1, diffs: 1, unrecognised: 0, clientBreaks: 0 },
          )
          const { client: sent, proxy: rebuilt, elided } = totals.sides
          assert.equal(rebuilt.breaks, 0)
          assert.equal(rebuilt.kept, 1)
          assert.ok(rebuilt.tokens < sent.tokens, `${rebuilt.tokens} ≥ ${sent.tokens}`)
          assert.ok(elided.breaks >= 1 && totals.elisions.results >= 1)
        } finally {
          await rig.close()
        }
      },
    )
  })
}

/**
 * The same CLI with --elide (its defaults): a session with a turn of two parallel calls and a
 * recall of a result elided by then. The history changes only where a batch is made; a turn's
 * results reach the model whole; the recall shows the elided read in full.
 */
describe(`${pkg.name}@${pkg.version} with --elide, run for real through /v1/messages`, () => {
  test(
    'batches of stand-ins, parallel results whole, recall of an elided read',
    { timeout: RUN_TIMEOUT_MS + 40_000 },
    async () => {
      const binary = agentBinary('claude')
      const project = makeLiveProject('claude')
      const bash = (command: string) => ({ name: 'Bash', input: { command, description: command } })
      const steps: ((messages: any[]) => Say)[] = [
        () => [{ name: 'Read', input: { file_path: project.big } }],
        () => [bash(`seq -f '${LINE}' 1 390`)],
        () => [bash(`seq -f '${LINE}' 400 790`), bash(`seq -f '${LINE}' 1200 1590`)],
        () => [bash(`seq -f '${LINE}' 800 1190`)],
        () => [{ name: 'recall', input: { id: '#0001' } }],
        () => FINAL,
      ]
      const rig = await claudeRig(project, steps, { elide: defaultElide() })
      const { stop, errors, main, tap } = rig
      try {
        const run = await runClaude(binary, project, tap.url, 'claude-sonnet-4-5', stop.signal)
        const about = describeRun(run) + '\n' + errors.join('\n')
        assert.deepEqual(errors, [], about)
        assert.equal(run.code, 0, about)
        assert.ok(run.stdout.includes(FINAL), about)
        assert.equal(main.length, steps.length, about)

        const texts = main.map((request) => results(request.json).map(resultText))
        const standIns = texts.map((list) => list.filter((t) => STAND_IN.test(t)).length)
        // The history changes only in a request that elides more: one break per batch. (The
        // upstream has one request more than the CLI sent: the recall's round.)
        const client = tap.exchanges.filter((e) => isMain(e.json)).map((e) => e.json)
        const own = clientChanges(client)
        for (let i = 1; i < main.length; i++) {
          const before: any[] = main[i - 1]!.json.messages
          const after: any[] = main[i]!.json.messages
          const changed = before.flatMap((message, k) =>
            own.has(k) || unmarked(message) === unmarked(after[k]) ? [] : [k],
          )
          if (standIns[i]! <= standIns[i - 1]!)
            assert.deepEqual(changed, [], `request ${i + 1} elided nothing new`)
        }
        assert.ok(Math.max(...standIns) >= 2, `stand-ins per request: ${standIns}`)
        // The parallel turn's two results, in the request that first carries them: whole.
        const parallel = texts[3]!
        assert.equal(parallel.length, 4)
        // (Claude Code runs them at once: their results come in the order they end.)
        const ends = parallel
          .slice(2)
          .map((text) => /\nline (\d+) of a long output\s*$/.exec(text.replace(REMINDERS, ''))?.[1])
        assert.deepEqual(ends.sort(), ['1590', '790'], parallel.slice(2).join('\n').slice(0, 300))
        for (const [k, text] of parallel.slice(2).entries())
          assert.match(
            text,
            new RegExp(`^\\[${hex(k + 3)}\\]\\nline (400|1200) of a long output\\n`),
          )
        // The read the recall asks for is elided by then; the recall shows it whole.
        const last = texts.at(-1)!
        assert.match(
          last[0]!,
          new RegExp(
            `^\\[#0001 ${project.big} lines 1-301 of 301 sha [0-9a-f]{8}\\] Elided; recall shows it\\.$`,
          ),
        )
        const recalled = last.find((t) => t.startsWith('[#0006 recall #0001 '))
        assert.ok(recalled, last.map((t) => t.slice(0, 60)).join('\n'))
        // In full: the read as the CLI returned it (its reminder after the lines too).
        assert.match(recalled, /^\[#0006 recall #0001 lines 1-(\d+) of \1\]\n1\t/)
        assert.ok(recalled.includes(readFileSync(project.big, 'utf8').split('\n')[150]!))
        for (const exchange of tap.exchanges)
          assert.ok(!exchange.response.includes('"recall"'), 'a recall reached the CLI')
      } finally {
        await rig.close()
      }
    },
  )
})

describe(`${pkg.name}@${pkg.version} with --elide --elide-inputs, run for real through /v1/messages`, () => {
  test(
    "a Write's content elided from its tool_use with its result, recalled as written",
    { timeout: RUN_TIMEOUT_MS + 40_000 },
    async () => {
      const binary = agentBinary('claude')
      const project = makeLiveProject('claude')
      const script = join(project.root, 'gen.py')
      // Long enough to pay for its break in a session of a few turns.
      const content = Array.from({ length: 300 }, (_, i) => `print("generated line ${i}")`).join(
        '\n',
      )
      const bash = (command: string) => ({ name: 'Bash', input: { command, description: command } })
      const steps: ((messages: any[]) => Say)[] = [
        () => [{ name: 'Write', input: { file_path: script, content: content + '\n' } }],
        () => [bash(`seq -f '${LINE}' 1 390`)],
        () => [bash(`seq -f '${LINE}' 400 790`)],
        () => [{ name: 'recall', input: { id: '#0001' } }],
        () => FINAL,
      ]
      const rig = await claudeRig(project, steps, { elide: defaultElide('--elide-inputs') })
      const { stop, errors, main } = rig
      try {
        const run = await runClaude(binary, project, rig.tap.url, 'claude-sonnet-4-5', stop.signal)
        const about = describeRun(run) + '\n' + errors.join('\n')
        assert.deepEqual(errors, [], about)
        assert.equal(run.code, 0, about)
        assert.equal(main.length, steps.length, about)
        // The CLI wrote the file: it never sees what went upstream.
        assert.equal(readFileSync(script, 'utf8'), content + '\n')
        const writes = main.map(
          (request) =>
            request.json.messages
              .flatMap((m: any) => (Array.isArray(m.content) ? m.content : []))
              .find((b: any) => b.type === 'tool_use' && b.name === 'Write')?.input,
        )
        assert.deepEqual(writes[1], { file_path: script, content: content + '\n' })
        // Once a batch takes it, the content is its stand-in; the path stays, the same bytes on.
        const elided = writes.findIndex(
          (input) => input?.content === '[#0001] Elided; recall shows it.',
        )
        assert.ok(elided > 1, JSON.stringify(writes))
        for (const input of writes.slice(elided)) assert.deepEqual(input, writes[elided])
        assert.equal(writes[elided].file_path, script)
        // The recall shows the call as the model wrote it, then the CLI's answer.
        const last = results(main.at(-1)!.json).map(resultText)
        const recalled = last.find((t) => / recall #0001 lines 1-\d+ of \d+\]\nInput: \{/.test(t))
        assert.ok(recalled, last.map((t) => t.slice(0, 80)).join('\n'))
        assert.ok(recalled.includes('generated line 299'), recalled.slice(0, 400))
        assert.ok(recalled.includes(script))
      } finally {
        await rig.close()
      }
    },
  )
})

const STAND_IN = / Elided; recall shows it\.$/
const LINE = 'line %g of a long output'

/**
 * Claude Code's n-th summary, as the model writes it (the CLI keeps the <summary> part): each
 * one its own, as a model's are (two summaries of the same text are one summary to the proxy).
 */
const summaryAnswer = (n: number) =>
  '<analysis>\nRead a file and printed another.\n</analysis>\n\n<summary>\n' +
  `1. Primary Request and Intent:\n   Work through the task (summary ${n}).\n\n` +
  '9. Optional Next Step:\n   Finish.\n</summary>'
const TOO_LONG = JSON.stringify({
  type: 'error',
  error: {
    type: 'invalid_request_error',
    message: 'prompt is too long: 205000 tokens > 200000 maximum',
  },
})
const AFTER_COMPACTION = 'Went on after the summary.'
const FINISHED = 'Finished after /compact.'

/** A Messages request's messages as texts (a message's text blocks joined). */
const messageTexts = (json: any): string[] =>
  json.messages.map((m: any) =>
    typeof m.content === 'string'
      ? m.content
      : m.content.map((b: any) => (b.type === 'text' ? b.text : '')).join('\n'),
  )

/**
 * Claude Code compacts in two ways: by itself when the API answers "prompt is too long" (its
 * default; the summary then comes as a text part after a date reminder, with the last round kept
 * verbatim after it), and on `/compact` (the summary a string). Each summary the proxy sees gets
 * the table of the files read before it.
 */
describe(`${pkg.name}@${pkg.version} compacting, run for real through /v1/messages`, () => {
  test(
    'after "prompt is too long" and after /compact: the table follows the summary, ids go on',
    { timeout: 3 * RUN_TIMEOUT_MS },
    async () => {
      const binary = agentBinary('claude')
      const project = makeLiveProject('claude')
      const readme = join(project.root, 'README.md')
      const stop = new AbortController()
      const main: RecordedRequest[] = []
      const summaries: RecordedRequest[] = []
      let refused = false
      const fake = await startFakeUpstream((request, index) => {
        const side = claudeSideAnswer(request)
        if (side) return side
        const json = request.json
        const texts = messageTexts(json)
        const say = (content: Block[]) => claudeAnswer(request, content, index)
        if (texts.at(-1)!.includes('create a detailed summary of the conversation')) {
          summaries.push(request)
          return say([{ type: 'text', text: summaryAnswer(summaries.length) }])
        }
        if (!isMain(json)) return say([{ type: 'text', text: 'Side answer.' }])
        main.push(request)
        const call = (name: string, input: Record<string, unknown>): Block[] => [
          { type: 'text', text: `Step ${main.length}.` },
          { type: 'tool_use', id: `toolu_compact_${main.length}`, name, input },
        ]
        switch (main.length) {
          case 1:
            return say(call('Read', { file_path: project.util }))
          case 2:
            return say(call('Bash', { command: `cat ${readme}`, description: 'print it' }))
          case 3:
            refused = true
            return { status: 400, body: TOO_LONG, headers: { 'content-type': 'application/json' } }
          case 4:
            return say(call('Read', { file_path: project.big }))
          case 5:
            return say([{ type: 'text', text: AFTER_COMPACTION }])
          default:
            return say([{ type: 'text', text: FINISHED }])
        }
      })
      // The refusal is the test's own; any other answer but a 200 stops the run.
      const stats = createStats()
      const lines: string[] = []
      const log = createLogger('info', (line) => void lines.push(line))
      const rig = await liveProxy(
        project,
        fake,
        { stats, log },
        {
          onAnswer: (exchange) => {
            if (exchange.status !== 200 && !exchange.response.includes('prompt is too long'))
              stopOnFailure(stop)(exchange)
          },
        },
      )
      const claude = claudeRunner(binary, project, rig.tap.url, stop.signal)
      try {
        const first = await claude('-p', 'Work through the task.')
        assert.equal(first.code, 0, describeRun(first))
        assert.ok(first.stdout.includes(AFTER_COMPACTION), describeRun(first))
        assert.ok(refused)
        // Counted where a user looks: the request's log line, /stats, /metrics.
        assert.equal(lines.filter((line) => line.includes('"compacted":1')).length, 1)
        assert.equal(stats.snapshot().totals.compactions, 1)
        assert.equal(summaries.length, 1)
        assert.equal(main.length, 5, describeRun(first))
        const sessionId = JSON.parse(first.stdout).session_id
        // The summary request carries the history with its ids.
        assert.match(JSON.stringify(summaries[0]!.json.messages), /\[#0001 /)
        // The request after it: the summary in a text part after the date reminder, the table
        // after the summary, naming the read it covers.
        const after = main[3]!.json
        const summaryMessage = after.messages[0]
        assert.ok(
          Array.isArray(summaryMessage.content),
          JSON.stringify(summaryMessage).slice(0, 300),
        )
        const parts = summaryMessage.content.map((b: any) => b.text ?? '')
        const at = parts.findIndex((t: string) => t.startsWith('This session is being continued'))
        assert.ok(at >= 1, parts.map((t: string) => t.slice(0, 60)).join('\n'))
        assert.match(parts[0], /^<system-reminder>/)
        const table = parts[at + 1]
        assert.match(table ?? '', /^## Files read before this summary\n/, parts.join('\n---\n'))
        assert.ok(
          table.includes(`| ${project.util} | 1-7 of 7 | ${sha8(project.util)} | #0001 |`),
          table,
        )
        // Not the kept round's cat: the summary does not cover it.
        assert.ok(!table.includes(readme), table)
        // Ids go on: the kept result (the CLI appended its own re-reads to it) and the read
        // after the summary, in full, are new results.
        const later = results(main[4]!.json).map(resultText)
        assert.match(later[0]!, new RegExp(`^\\[#0003 ${readme} lines 1-2 of 2 sha `))
        assert.match(
          later[1]!,
          new RegExp(`^\\[#0004 ${project.big} lines 1-301 of 301 sha [0-9a-f]{8}\\]\\n1\\t`),
        )
        // The next request carries the summary, its table and the kept round byte for byte
        // (the CLI moves its cache marker off the round's last part).
        const kept = JSON.stringify(after.messages.slice(0, 2)).slice(0, -1)
        assert.ok(
          main[4]!.body.includes(
            kept + ',{"role":"user","content":[' + JSON.stringify(after.messages[2].content[0]),
          ),
        )

        const compact = await claude('-p', '/compact', '--resume', sessionId)
        assert.equal(compact.code, 0, describeRun(compact))
        assert.equal(summaries.length, 2)
        const last = await claude('-p', 'Now finish the task.', '--resume', sessionId)
        assert.equal(last.code, 0, describeRun(last))
        assert.ok(last.stdout.includes(FINISHED), describeRun(last))
        // After /compact the summary is a string; its table names the reads since the first
        // summary, not the one that summary covered.
        const resumed = main.at(-1)!.json.messages[0].content
        assert.equal(typeof resumed, 'string')
        assert.match(resumed, /^This session is being continued /)
        const second = resumed.slice(resumed.indexOf('\n\n## Files read before this summary\n') + 2)
        assert.match(second, /^## Files read before this summary\n/)
        assert.ok(
          second.endsWith(
            `| ${readme} | 1-2 of 2 | ${sha8(readme)} | #0003 |\n` +
              `| ${project.big} | 1-301 of 301 | ${sha8(project.big)} | #0004 |\n`,
          ),
          second,
        )
        assert.ok(!second.includes('#0001'), second)
        assert.equal(stats.snapshot().totals.compactions, 2)
        assert.match(await stats.metrics(), /^lembas_compactions_total 2$/m)
      } finally {
        await rig.close()
      }
    },
  )
})

/**
 * `claude --resume ID --fork-session`: the fork sends the whole conversation under a session id
 * of its own. Its first request carries every earlier result and the recall exchange the CLI
 * never saw byte for byte as the original's last request did, and its new result's id goes on.
 */
describe(`${pkg.name}@${pkg.version} forking a session, run for real through /v1/messages`, () => {
  test(
    'the fork goes on from the session it forked: same bytes, ids go on',
    { timeout: 3 * RUN_TIMEOUT_MS },
    async () => {
      const binary = agentBinary('claude')
      const project = makeLiveProject('claude')
      const stop = new AbortController()
      const main: RecordedRequest[] = []
      const fake = await startFakeUpstream((request, index) => {
        const side = claudeSideAnswer(request)
        if (side) return side
        const say = (content: Block[]) => claudeAnswer(request, content, index)
        if (!isMain(request.json)) return say([{ type: 'text', text: 'Side answer.' }])
        main.push(request)
        const call = (name: string, input: Record<string, unknown>): Block[] => [
          { type: 'tool_use', id: `toolu_fork_${main.length}`, name, input },
        ]
        switch (main.length) {
          case 1:
            return say(call('Read', { file_path: project.util }))
          case 2:
            return say(call('Bash', { command: 'ls', description: 'list' }))
          case 3:
            return say(call('recall', { id: '#0001' }))
          case 4:
            return say([{ type: 'text', text: 'First run done.' }])
          case 5:
            return say(call('Bash', { command: 'echo forked', description: 'say it' }))
          default:
            return say([{ type: 'text', text: 'Fork done.' }])
        }
      })
      const rig = await liveProxy(project, fake, {}, { onAnswer: stopOnFailure(stop) })
      const claude = claudeRunner(binary, project, rig.tap.url, stop.signal)
      try {
        const first = await claude('-p', 'Work through the task.')
        assert.equal(first.code, 0, describeRun(first))
        assert.equal(main.length, 4, describeRun(first))
        const sessionId = JSON.parse(first.stdout).session_id
        const forked = await claude('-p', 'Go on.', '--resume', sessionId, '--fork-session')
        assert.equal(forked.code, 0, describeRun(forked))
        assert.notEqual(JSON.parse(forked.stdout).session_id, sessionId)
        assert.ok(forked.stdout.includes('Fork done.'), describeRun(forked))
        // The original's last request (the round after its recall) and the fork's first.
        const before = main[3]!.json.messages.map(unmarked)
        const after = main[4]!.json.messages.map(unmarked)
        assert.match(JSON.stringify(main[3]!.json.messages.at(-1)), /\[#0003 recall #0001 /)
        assert.deepEqual(after.slice(0, before.length), before)
        const newest = results(main[5]!.json).map(resultText).at(-1)!
        assert.match(newest, /^\[#0004\]\nforked/)
      } finally {
        await rig.close()
      }
    },
  )
})
