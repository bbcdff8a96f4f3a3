/**
 * Tool results the real Claude Code CLI sent (test/fixtures/agents/claude-code/*-2.1.332.json:
 * each call with its result as captured through the proxy, `<system-reminder>` trailers and
 * all), replayed turn by turn through the /v1/messages door of a fresh proxy: with the project as
 * the workspace (each file as it was when the result came) or blind.
 */
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { createStats, type StatsSnapshot } from '../../src/stats/index.js'
import { createStore } from '../../src/store/index.js'
import { createWorkspace } from '../../src/workspace/index.js'
import { claudeAnswer } from './fake-anthropic.js'
import { startFakeUpstream, type FakeResponse, type RecordedRequest } from './fake-upstream.js'
import { postTo, startProxy } from './proxy.js'

export interface Sample {
  readonly call: { name: string; input: Record<string, unknown> }
  readonly content: unknown
  readonly is_error: boolean
  /** The file the call names, relative to the project, with its content before and after. */
  readonly file?: string
  readonly before?: string | null
  readonly after?: string | null
}

interface Fixture {
  readonly samples: Sample[]
  /** Files as they were when the CLI ran, relative to the captured folder. */
  readonly files?: Record<string, string>
}

/** Where the CLI ran: its project (the workspace) inside it, as the fixtures name them. */
const CAPTURED = '/work'
const PROJECT = 'project'

const TOOLS = ['Bash', 'Edit', 'Read', 'Write'].map((name) => ({
  name,
  description: name,
  input_schema: { type: 'object', properties: {} },
}))

export const resultText = (content: any): string =>
  typeof content === 'string'
    ? content
    : content
        .filter((p: any) => p.type === 'text')
        .map((p: any) => p.text)
        .join('\n')

export interface Replayed {
  /** The folder the captured /work stands for (its project is `${root}/project`). */
  readonly root: string
  readonly samples: Sample[]
  /** The last upstream request's tool results, as text, in order. */
  readonly results: string[]
  readonly requests: readonly RecordedRequest[]
  readonly stats: StatsSnapshot
}

/**
 * The samples through a fresh proxy, one turn each. `answer` is the model's: `ok` unless given
 * (then it answers every request, the proxy's recall rounds included).
 */
export async function replaySamples(
  fixture: URL,
  workspace: boolean,
  answer?: (request: RecordedRequest, index: number) => FakeResponse,
): Promise<Replayed> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'lembas-cc-samples-')))
  const project = join(root, PROJECT)
  const { samples, files } = JSON.parse(
    readFileSync(fixture, 'utf8')
      .split(CAPTURED + '/')
      .join(root + '/'),
  ) as Fixture
  const write = (path: string, content: string) => {
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(path, content)
  }
  mkdirSync(project)
  for (const [path, content] of Object.entries(files ?? {})) write(join(root, path), content)
  const upstream = await startFakeUpstream(
    answer ?? ((request, index) => claudeAnswer(request, [{ type: 'text', text: 'ok' }], index)),
  )
  const stats = createStats()
  const proxy = await startProxy({
    upstreamUrl: upstream.url,
    store: await createStore('memory:', { idleTtlMs: 86_400_000 }),
    stats,
    ...(workspace ? { workspace: await createWorkspace([project]) } : {}),
  })
  try {
    // Every file as it was before the first call.
    for (const sample of samples) {
      if (sample.file === undefined) continue
      const first = samples.find((s) => s.file === sample.file)!
      if (first.before != null) write(join(project, sample.file), first.before)
    }
    const messages: any[] = [{ role: 'user', content: 'Work through the task.' }]
    for (const [i, sample] of samples.entries()) {
      if (sample.file !== undefined && sample.after != null)
        write(join(project, sample.file), sample.after)
      messages.push(
        {
          role: 'assistant',
          content: [
            {
              type: 'tool_use',
              id: `toolu_${i}`,
              name: sample.call.name,
              input: sample.call.input,
            },
          ],
        },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: `toolu_${i}`,
              content: sample.content,
              ...(sample.is_error ? { is_error: true } : {}),
            },
          ],
        },
      )
      const reply = await postTo(proxy.url + '/v1/messages', {
        model: 'claude-sonnet-4-5',
        max_tokens: 1024,
        tools: TOOLS,
        metadata: { user_id: 'user_x_account__session_00000000-0000-4000-8000-000000000001' },
        messages,
      })
      if (reply.status !== 200) throw new Error(`turn ${i}: ${reply.status} ${reply.text}`)
    }
    const last = upstream.requests.at(-1)!.json
    const results: string[] = last.messages.flatMap((m: any) =>
      Array.isArray(m.content)
        ? m.content
            .filter((b: any) => b.type === 'tool_result')
            .map((b: any) => resultText(b.content))
        : [],
    )
    return { root, samples, results, requests: upstream.requests, stats: stats.snapshot() }
  } finally {
    await proxy.close()
    await upstream.close()
    rmSync(root, { recursive: true, force: true })
  }
}
