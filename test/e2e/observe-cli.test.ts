/**
 * `--observe` with a real agent: Claude Code 2.1.332 through the proxy's /v1/messages door.
 * Every body the CLI sends reaches the upstream byte for byte, the CLI's answers come back as
 * the upstream sent them, and /stats counts what the proxy would have saved (the re-read's stub,
 * the repeated listing) and the usage the upstream reported, streams included.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createStats } from '../../src/stats/index.js'
import { claudeAnswer, claudeSideAnswer, type Block } from '../helpers/fake-anthropic.js'
import { startFakeUpstream } from '../helpers/fake-upstream.js'
import {
  agentBinary,
  claudeCodeEnv,
  describeRun,
  makeLiveProject,
  runAgent,
} from './live/agents.js'
import { liveProxy } from './live/rig.js'

const FINAL = 'Observed: read twice, listed twice.'

test(
  '--observe with the real Claude Code: its bytes reach the upstream as sent; /stats says what would be saved',
  { timeout: 150_000 },
  async () => {
    const binary = agentBinary('claude')
    const project = makeLiveProject('claude')
    const bash = (command: string) => ({ name: 'Bash', input: { command, description: command } })
    const steps = [
      { name: 'Read', input: { file_path: project.big } },
      { name: 'Read', input: { file_path: project.big } },
      bash(`ls ${project.root}/src`),
      bash(`ls ${project.root}/src`),
    ]
    const isMain = (json: any) => (json?.tools ?? []).some((t: any) => t.name === 'Bash')
    const fake = await startFakeUpstream((request, index) => {
      const side = claudeSideAnswer(request)
      if (side) return side
      const json = request.json
      const turns = isMain(json)
        ? json.messages.filter(
            (m: any) =>
              Array.isArray(m.content) && m.content.some((b: any) => b.type === 'tool_use'),
          ).length
        : -1
      const step = steps[turns]
      const content: Block[] =
        turns < 0
          ? [{ type: 'text', text: 'Side answer.' }]
          : step
            ? [{ type: 'tool_use', id: `toolu_obs_${index}`, name: step.name, input: step.input }]
            : [{ type: 'text', text: FINAL }]
      return claudeAnswer(request, content, index)
    })
    const stats = createStats({ observe: true })
    const rig = await liveProxy(project, fake, { stats, observe: true })
    const tap = rig.tap
    try {
      const run = await runAgent(
        binary,
        ['-p', 'Look around.', '--model', 'claude-sonnet-4-5', '--output-format', 'json'],
        {
          cwd: project.root,
          env: claudeCodeEnv(project.home, tap.url),
          timeoutMs: 90_000,
        },
      )
      const about = describeRun(run)
      assert.equal(run.code, 0, about)
      assert.ok(run.stdout.includes(FINAL), about)

      // Byte for byte: every body the CLI sent to /v1/messages is one the upstream received.
      const sent = tap.exchanges.filter((e) => e.path.startsWith('/v1/messages')).map((e) => e.body)
      const received = fake.requests
        .filter((r) => r.path.startsWith('/v1/messages'))
        .map((r) => r.body)
      assert.deepEqual([...received].sort(), [...sent].sort())
      assert.ok(!received.some((body) => body.includes('"recall"')), 'no recall tool upstream')
      assert.ok(!received.some((body) => /\[#000\d/.test(body)), 'no brackets upstream')

      const main = stats.snapshot().sessions.find((s) => s.requests >= steps.length + 1)
      assert.ok(main, JSON.stringify(stats.snapshot().sessions.map((s) => s.requests)))
      assert.equal(stats.snapshot().observe, true)
      assert.ok(main.stubs >= 1, `the re-read would be a stub: ${main.stubs}`)
      assert.ok(main.dedupes >= 2, `the re-read and the listing would be deduped: ${main.dedupes}`)
      assert.ok(main.inputTokensSaved > 0, `would save ${main.inputTokensSaved}`)
      assert.ok(main.promptTokens > 0, 'the upstream usage, read from its streams')
      assert.match(main.agent ?? '', /^claude-cli/)
    } finally {
      await rig.close()
    }
  },
)
