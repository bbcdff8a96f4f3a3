/**
 * The real agent CLIs (Qwen Code 0.24.4, opencode 1.18.33, installed outside the repo's
 * dependencies, see test/e2e/live/README.md) run headless through the proxy against a scripted
 * fake model, in a scratch project given to the proxy as its workspace.
 */
import assert from 'node:assert/strict'
import { sha8 } from '../helpers/workspace.js'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { createLogger } from '../../src/log.js'
import { createStats } from '../../src/stats/index.js'
import { startFakeUpstream } from '../helpers/fake-upstream.js'
import { prefixViolations } from '../helpers/model.js'
import { fullPathRequests } from '../helpers/proxy.js'
import {
  AGENT_PACKAGES,
  agentBinary,
  describeRun,
  isolatedEnv,
  makeLiveProject,
  opencodeCommand,
  qwenFlags,
  requireRipgrep,
  runAgent,
  type AgentName,
  type LiveProject,
} from './live/agents.js'
import {
  FINAL_TEXT,
  GREP_PATTERN,
  liveModel,
  livePlan,
  RECALL_FROM,
  RECALL_LIMIT,
} from './live/model.js'
import { liveProxy, stopOnFailure } from './live/rig.js'

/** A run takes about 5 s here; two time-boxed runs stay under 3 minutes even when both hang. */
const RUN_TIMEOUT_MS = 75_000
const TASK = 'Read src/big.ts, edit src/util.ts, search, list and run seq, then summarise.'

interface AgentSetup {
  readonly agent: AgentName
  /** The main conversation's requests, told apart from side requests by their tools. */
  isMain(json: any): boolean
  readonly store: (dir: string) => string
  readonly sessionHeader?: string
  /** The command line, with any config files written into the scratch home. */
  command(baseUrl: string, project: LiveProject): { args: string[]; env: Record<string, string> }
}

const toolNames = (json: any): string[] => (json?.tools ?? []).map((t: any) => t?.function?.name)

const SETUPS: AgentSetup[] = [
  {
    agent: 'qwen',
    // Qwen's memory subagent has read_file too, but not `agent` or `tool_search`.
    isMain: (json) =>
      toolNames(json).includes('read_file') && toolNames(json).includes('tool_search'),
    store: () => 'memory:',
    command: (baseUrl, project) => ({
      args: [...qwenFlags(baseUrl), TASK],
      env: isolatedEnv(project.home),
    }),
  },
  {
    agent: 'opencode',
    // The title request has no tools at all; the agent's have `task` beside `read`.
    isMain: (json) => toolNames(json).includes('read') && toolNames(json).includes('task'),
    store: (dir) => `sqlite:${join(dir, 'store.db')}`,
    // The header opencode sends with its session id, as the README advises.
    sessionHeader: 'x-session-affinity',
    command: (baseUrl, project) => opencodeCommand(baseUrl, project, TASK),
  },
  {
    agent: 'kilo',
    // Kilo CLI is built on opencode: the same tools, config and headless `run`.
    isMain: (json) => toolNames(json).includes('read') && toolNames(json).includes('task'),
    store: (dir) => `sqlite:${join(dir, 'store.db')}`,
    sessionHeader: 'x-session-affinity',
    command: (baseUrl, project) => opencodeCommand(baseUrl, project, TASK, 'kilo'),
  },
]

/** A tool message's text: a string, or its text parts joined by newlines (as the proxy reads them). */
function text(message: any): string {
  return typeof message.content === 'string'
    ? message.content
    : message.content.map((p: any) => p.text ?? '').join('\n')
}

const hex = (n: number) => '#' + n.toString(16).padStart(4, '0')

/** The names of the tool calls in an SSE or JSON chat answer, as the agent received them. */
function answeredCalls(response: string): string[] {
  const names: string[] = []
  const payloads = response.trimStart().startsWith('{')
    ? [response]
    : response
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trim())
  for (const payload of payloads) {
    if (payload === '[DONE]') continue
    const json = JSON.parse(payload)
    for (const choice of json.choices ?? []) {
      for (const call of [
        ...(choice.delta?.tool_calls ?? []),
        ...(choice.message?.tool_calls ?? []),
      ]) {
        if (call.function?.name) names.push(call.function.name)
      }
    }
  }
  return names
}

/** A text's lines the way the cap counts them: a final newline ends the last line. */
function lines(output: string): { lines: string[]; newline: boolean } {
  const newline = output.endsWith('\n')
  return { lines: (newline ? output.slice(0, -1) : output).split('\n'), newline }
}

for (const setup of SETUPS) {
  const pkg = AGENT_PACKAGES[setup.agent]
  describe(`${pkg.name}@${pkg.version}, run for real through the proxy`, () => {
    test(
      'reads, re-reads, edits, searches, lists, runs and recalls; the prefix holds',
      { timeout: 2 * RUN_TIMEOUT_MS + 60_000 },
      async (t) => {
        // Qwen Code now and then loses its own shell's output under load ("Output: (empty)"):
        // the agent's failure, seen before the proxy touches anything; that run is made again.
        if ((await liveRun()) !== 'agent lost its output') return
        t.diagnostic('the agent lost its own shell output; running the session again')
        assert.notEqual(await liveRun(), 'agent lost its output', 'the agent lost it twice')
      },
    )

    async function liveRun(): Promise<'agent lost its output' | undefined> {
      {
        const binary = agentBinary(setup.agent)
        if (setup.agent !== 'qwen') requireRipgrep()
        const project = makeLiveProject(setup.agent)
        const bigSha = sha8(project.big)
        const utilShaBefore = sha8(project.util)
        const plan = livePlan(project)
        // Stop the agent at the first failure instead of waiting out its retries.
        const stop = new AbortController()
        const model = liveModel(plan, setup.isMain, (error) =>
          stop.abort(`the scripted model failed: ${error}`),
        )
        const fake = await startFakeUpstream(model.script)
        const stats = createStats()
        const logLines: string[] = []
        const rig = await liveProxy(
          project,
          fake,
          {
            stats,
            log: createLogger('info', (line) => void logLines.push(line)),
            ...(setup.sessionHeader ? { sessionHeader: setup.sessionHeader } : {}),
          },
          { store: setup.store, onAnswer: stopOnFailure(stop) },
        )
        const tap = rig.tap
        try {
          const { args, env } = setup.command(tap.url + '/v1', project)
          const run = await runAgent(binary, args, {
            cwd: project.root,
            env,
            timeoutMs: RUN_TIMEOUT_MS,
            stop: stop.signal,
          })
          if (process.env['LEMBAS_LIVE_DUMP']) {
            const file = join(process.env['LEMBAS_LIVE_DUMP'], `${setup.agent}.json`)
            writeFileSync(
              file,
              JSON.stringify(
                {
                  run,
                  main: model.main,
                  upstream: fake.requests.map((r) => r.json),
                  client: tap.exchanges,
                },
                null,
                1,
              ),
            )
          }

          // The run: the script found every tool and argument it needed, the agent finished.
          const about = describeRun(run)
          assert.deepEqual(model.errors, [], about)
          assert.equal(run.stopped, undefined, about)
          assert.equal(run.timedOut, false, about)
          assert.equal(run.code, 0, about)
          assert.ok(run.stdout.includes(FINAL_TEXT), about)

          // The main conversation, as the upstream saw it: one request per step (the recall round
          // is one of them, made by the proxy), every earlier message byte-identical.
          const main = model.main.map((i) => fake.requests[i]!)
          assert.equal(
            main.length,
            plan.length,
            `${main.length} main requests for ${plan.length} steps`,
          )
          assert.deepEqual(prefixViolations(main), [])
          // The real agent's requests go on from its previous one: after the first that carries
          // a result, each is handled on the fast path (only its new messages parsed).
          const paths = fullPathRequests(logLines)
          assert.ok(paths.requests >= plan.length - 2, `${paths.requests} requests with results`)
          assert.deepEqual(paths.full, [], 'requests of the agent that took the full path')
          for (const request of main)
            assert.equal(request.json.tools.at(-1).function.name, 'recall')

          // The agent's side: every chat request and answer through the tap.
          const client = tap.exchanges.filter(
            (e) => e.path.endsWith('/chat/completions') && setup.isMain(e.json),
          )
          assert.equal(
            client.length,
            plan.length - 1,
            'the agent sent every request but the recall round',
          )
          for (const exchange of tap.exchanges) {
            assert.equal(exchange.status, 200, exchange.response.slice(0, 300))
            assert.ok(
              !answeredCalls(exchange.response).includes('recall'),
              'the agent was handed a recall call',
            )
            assert.ok(
              !toolNames(exchange.json).includes('recall'),
              'the agent has no recall tool of its own',
            )
            for (const message of exchange.json?.messages ?? []) {
              for (const c of message.tool_calls ?? [])
                assert.notEqual(c.function?.name, 'recall', 'the agent sent a recall call back')
            }
          }
          const clientTools = new Map<string, any>()
          for (const m of client.at(-1)!.json.messages)
            if (m.role === 'tool') clientTools.set(m.tool_call_id, m)

          // The last main request's tool results: ids run #0001… with no gap, the content keeps
          // the agent's shape (text parts for Qwen Code, strings for opencode).
          const last = main.at(-1)!.json.messages as any[]
          const results = last.filter((m) => m.role === 'tool')
          assert.equal(results.length, plan.length - 1)
          const seen = results.map(text)
          seen.forEach((t, i) =>
            assert.match(
              t,
              new RegExp(`^\\[${hex(i + 1)}[ \\]]`),
              `result ${i + 1}: ${t.slice(0, 120)}`,
            ),
          )
          const agentSaw = results.map((m) => clientTools.get(m.tool_call_id))
          const recallIndex = 10
          agentSaw.forEach((m, i) => {
            if (i === recallIndex)
              return assert.equal(m, undefined, 'the recall result reached the agent')
            assert.ok(m, `result ${i + 1} is not in the agent's request`)
            assert.equal(typeof results[i].content, typeof m.content)
          })
          const original = agentSaw.map((m) => (m ? text(m) : ''))
          // Qwen Code's shell sometimes loses a command's whole output on a busy machine
          // (`Output: (empty)`), a long one or a short one: the session is run again.
          const lost = /^Command: (seq 1 1500|cat util\.ts)\n[\s\S]*^Output: \(empty\)$/m
          if (lost.test(original[9] ?? '') || lost.test(original[12] ?? ''))
            return 'agent lost its output'
          const [
            read1,
            reread,
            ranged,
            util1,
            edit,
            util2,
            grep1,
            grep2,
            glob,
            shell,
            recall,
            echo,
            catInSrc,
          ] = seen as [string, ...string[]]
          const bracket = (id: number, path: string, range: string, sha: string) =>
            `[${hex(id)} ${path} lines ${range} sha ${sha}]`

          // 1. The full read: an exact bracket (workspace mode), then the agent's text untouched.
          assert.equal(read1, `${bracket(1, project.big, '1-301 of 301', bigSha)}\n${original[0]}`)
          // 2. The same full read again: opencode sends the file again and the proxy stubs it;
          //    Qwen Code answers with its own "unchanged" stub, which the proxy only numbers.
          if (setup.agent === 'qwen') {
            assert.match(
              original[1]!,
              /^\[File src\/big\.ts unchanged since last read in this session/,
            )
            assert.equal(reread, `[#0002]\n${original[1]}`)
          } else {
            assert.equal(
              reread,
              `${bracket(2, project.big, '1-301 of 301', bigSha)} Unchanged since #0001, which already shows lines 1-301.`,
            )
          }
          // 3. Lines 101-120, asked in the agent's own offset convention: a stub naming the first read.
          assert.match(original[2]!, /Showing lines 101-120 of/)
          assert.equal(
            ranged,
            `${bracket(3, project.big, '101-120 of 301', bigSha)} Unchanged since #0001, which already shows lines 1-301.`,
          )
          // 4-6. util.ts read, edited, read again: the re-read is in full, under the new hash.
          assert.equal(
            util1,
            `${bracket(4, project.util, '1-7 of 7', utilShaBefore)}\n${original[3]}`,
          )
          assert.ok(
            readFileSync(project.util, 'utf8').includes('return a + b + 0; // edited'),
            'the agent did not edit util.ts',
          )
          const utilShaAfter = sha8(project.util)
          assert.notEqual(utilShaAfter, utilShaBefore)
          // The edit: the agent's confirmation gives way to the unified diff, under the new hash.
          assert.equal(
            edit,
            `[#0005 ${project.util} sha ${utilShaAfter}]\n@@ -1,5 +1,5 @@\n` +
              ' export function add(a: number, b: number): number {\n-  return a + b;\n' +
              '+  return a + b + 0; // edited\n }\n \n export function mul(a: number, b: number): number {',
          )
          // A re-read after the session's own edit comes in full (spec: stub-after-own-edit-is-full).
          assert.equal(
            util2,
            `${bracket(6, project.util, '1-7 of 7', utilShaAfter)}\n${original[5]}`,
          )
          // 7-8. The same grep twice: the second is "Same result as".
          assert.match(original[6]!, /50 matches/)
          assert.ok(original[6]!.includes(GREP_PATTERN) || original[6]!.includes('compute1'))
          assert.equal(grep1, `[#0007]\n${original[6]}`)
          assert.equal(original[7], original[6])
          assert.equal(grep2, '[#0008] Same result as #0007.')
          // 9. The glob: numbered, otherwise untouched.
          assert.ok(original[8]!.includes(project.big), original[8])
          assert.equal(glob, `[#0009]\n${original[8]}`)
          // 10. seq 1 1500: its first 200 lines, the elided count, its last 100 lines.
          const full = lines(original[9]!)
          assert.ok(
            full.lines.includes('1500') || full.lines.some((l) => l.endsWith(' 1500')),
            'no 1500 in the output',
          )
          const elided = full.lines.length - 300
          assert.match(shell!, new RegExp(`\\n\\[${elided} lines elided, full output #000a\\]\\n`))
          assert.equal(
            shell,
            `[#000a]\n${full.lines.slice(0, 200).join('\n')}\n[${elided} lines elided, full output #000a]\n${full.lines.slice(-100).join('\n')}${full.newline ? '\n' : ''}`,
          )
          // 11. The recall, answered by the proxy from its store: the lines the cap left out.
          const end = RECALL_FROM + RECALL_LIMIT - 1
          assert.equal(
            recall,
            `[#000b recall #000a lines ${RECALL_FROM}-${end} of ${full.lines.length}]\n${full.lines.slice(RECALL_FROM - 1, end).join('\n')}`,
          )
          // The round that asked for it: the proxy's own request, ending in the recall exchange…
          const round = main[recallIndex + 1]!.json.messages as any[]
          assert.equal(round.at(-2).tool_calls[0].function.name, 'recall')
          assert.equal(text(round.at(-1)), recall)
          // …which the agent never saw, and which comes back in the agent's next request.
          const recallCallId = round.at(-2).tool_calls[0].id
          for (const exchange of tap.exchanges)
            assert.ok(
              !exchange.body.includes(`"${recallCallId}"`) &&
                !exchange.response.includes(`"${recallCallId}"`),
              'the recall call id reached the agent',
            )
          const after = main[recallIndex + 2]!
          assert.ok(
            after.body.includes(JSON.stringify(round.at(-2))) &&
              after.body.includes(JSON.stringify(round.at(-1))),
          )
          // 12. The call the model made after the recall, numbered next.
          assert.ok(original[11]!.includes('after-recall'), original[11])
          assert.equal(echo, `[#000c]\n${original[11]}`)
          // 13. `cat util.ts` run in src/ (opencode's workdir, Qwen Code's directory): the file
          //     the edit changed, as #0006 shows it; the bracket names the path as the call gave it.
          assert.ok(original[12]!.includes('return a + b + 0; // edited'), original[12])
          assert.equal(
            catInSrc,
            `[#000d util.ts lines 1-7 of 7 sha ${utilShaAfter}] Unchanged since #0006, which already shows lines 1-7.`,
          )
          // Every result of a known tool was as its profile expects: no drift reported.
          const drift = stats.snapshot()
          assert.equal(drift.totals.unrecognised, 0, JSON.stringify(drift.unrecognisedByTool))
        } finally {
          await rig.close()
        }
      }
      return undefined
    }
  })
}
