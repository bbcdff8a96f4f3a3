/**
 * The scripted "model" behind the proxy for the live agent test. It finds the agent's tools in
 * the request's own `tools` array, makes each call with the argument names that tool declares,
 * and knows where the conversation stands by the number of assistant turns with tool calls
 * (the recall exchange the proxy restores counts as one, as the upstream sees it).
 */
import type { FakeResponse, FakeScript, RecordedRequest } from '../../helpers/fake-upstream.js'
import { chatChunks, chatCompletion } from '../../helpers/fake-upstream.js'
import { join } from 'node:path'
import type { LiveProject } from './agents.js'

type Schema = {
  name: string
  properties: Record<string, { description?: string }>
  required: string[]
}

export interface LiveTools {
  readonly read: Schema & { path: string; offset: string; limit: string; base: 0 | 1 }
  readonly edit: Schema & { path: string; old: string; new: string }
  readonly grep: Schema & { pattern: string; path: string }
  readonly glob: Schema & { pattern: string; path: string }
  /** `dir`: the argument naming the directory the command runs in. */
  readonly shell: Schema & { command: string; dir: string }
  readonly recall: Schema
}

export type Call = { name: string; args: Record<string, unknown> }
export type Step = { calls: Call[] } | { content: string }

function schemas(tools: unknown): Map<string, Schema> {
  const found = new Map<string, Schema>()
  for (const tool of Array.isArray(tools) ? tools : []) {
    const fn = tool?.function
    if (typeof fn?.name !== 'string') continue
    const parameters = fn.parameters ?? {}
    found.set(fn.name, {
      name: fn.name,
      properties: parameters.properties ?? {},
      required: parameters.required ?? [],
    })
  }
  return found
}

function pick(all: Map<string, Schema>, names: string[]): Schema {
  for (const name of names) {
    const schema = all.get(name)
    if (schema) return schema
  }
  throw new Error(
    `none of the tools ${names.join(', ')} is declared (tools: ${[...all.keys()].join(', ')})`,
  )
}

function arg(schema: Schema, names: string[]): string {
  const name = names.find((n) => n in schema.properties)
  if (!name)
    throw new Error(
      `${schema.name} declares none of ${names.join(', ')} (it has ${Object.keys(schema.properties).join(', ')})`,
    )
  return name
}

/** The agent's read, edit, grep, glob and shell tools, and the proxy's recall, from a request. */
export function findTools(tools: unknown): LiveTools {
  const all = schemas(tools)
  const read = pick(all, ['read_file', 'read'])
  const offset = arg(read, ['offset'])
  const description = read.properties[offset]?.description ?? ''
  const edit = pick(all, ['edit'])
  const grep = pick(all, ['grep_search', 'grep'])
  const glob = pick(all, ['glob'])
  const shell = pick(all, ['run_shell_command', 'bash'])
  return {
    read: {
      ...read,
      path: arg(read, ['file_path', 'filePath']),
      offset,
      limit: arg(read, ['limit']),
      base: /\b0-based\b/i.test(description) ? 0 : 1,
    },
    edit: {
      ...edit,
      path: arg(edit, ['file_path', 'filePath']),
      old: arg(edit, ['old_string', 'oldString']),
      new: arg(edit, ['new_string', 'newString']),
    },
    grep: { ...grep, pattern: arg(grep, ['pattern']), path: arg(grep, ['path']) },
    glob: { ...glob, pattern: arg(glob, ['pattern']), path: arg(glob, ['path']) },
    shell: {
      ...shell,
      command: arg(shell, ['command']),
      dir: arg(shell, ['directory', 'workdir']),
    },
    recall: pick(all, ['recall']),
  }
}

/** A call checked against the tool's schema: every argument declared, every required one given. */
export function call(schema: Schema, args: Record<string, unknown>): Call {
  for (const name of Object.keys(args)) {
    if (!(name in schema.properties)) throw new Error(`${schema.name} has no argument ${name}`)
  }
  for (const name of schema.required) {
    if (!(name in args)) throw new Error(`${schema.name} requires ${name}`)
  }
  return { name: schema.name, args }
}

export const GREP_PATTERN = 'function compute'
export const RECALL_FROM = 700
export const RECALL_LIMIT = 10
export const FINAL_TEXT =
  'Done: read, edited, searched, listed, ran a command and recalled its middle.'

/** The last tool result's id in a request, from its bracket: '#000a'. */
export function lastResultId(messages: any[]): string {
  const last = [...messages].reverse().find((m) => m.role === 'tool')
  const text = typeof last?.content === 'string' ? last.content : (last?.content?.[0]?.text ?? '')
  const id = /^\[(#[0-9a-f]+)/.exec(text)?.[1]
  if (!id) throw new Error(`the last tool result has no id bracket: ${text.slice(0, 80)}`)
  return id
}

/** The session the model plays, one entry per step; a step may read the request it answers. */
export function livePlan(project: LiveProject): ((tools: LiveTools, messages: any[]) => Step)[] {
  const { big, util, root } = project
  const calls = (...list: Call[]): Step => ({ calls: list })
  return [
    (t) => calls(call(t.read, { [t.read.path]: big })),
    (t) => calls(call(t.read, { [t.read.path]: big })),
    (t) =>
      calls(
        call(t.read, {
          [t.read.path]: big,
          [t.read.offset]: 101 - 1 + t.read.base,
          [t.read.limit]: 20,
        }),
      ),
    // Both agents refuse to edit a file the session has not read.
    (t) => calls(call(t.read, { [t.read.path]: util })),
    (t) =>
      calls(
        call(t.edit, {
          [t.edit.path]: util,
          [t.edit.old]: 'return a + b;',
          [t.edit.new]: 'return a + b + 0; // edited',
        }),
      ),
    (t) => calls(call(t.read, { [t.read.path]: util })),
    (t) => calls(call(t.grep, { [t.grep.pattern]: GREP_PATTERN, [t.grep.path]: root })),
    (t) => calls(call(t.grep, { [t.grep.pattern]: GREP_PATTERN, [t.grep.path]: root })),
    (t) => calls(call(t.glob, { [t.glob.pattern]: 'src/**/*.ts', [t.glob.path]: root })),
    (t) => calls(call(t.shell, { [t.shell.command]: 'seq 1 1500' })),
    (t, messages) =>
      calls(
        call(t.recall, { id: lastResultId(messages), offset: RECALL_FROM, limit: RECALL_LIMIT }),
      ),
    // One more call after the recall, so the agent sends the request that restores the exchange.
    (t) => calls(call(t.shell, { [t.shell.command]: 'echo after-recall' })),
    // util.ts through the shell, run in src/ by the tool's own directory argument.
    (t) =>
      calls(call(t.shell, { [t.shell.command]: 'cat util.ts', [t.shell.dir]: join(root, 'src') })),
    () => ({ content: FINAL_TEXT }),
  ]
}

export interface LiveModel {
  readonly script: FakeScript
  /** Indexes (in fake.requests) of the main conversation's requests. */
  readonly main: number[]
  /** What went wrong inside the script: a missing tool or argument, a plan run out. */
  readonly errors: string[]
}

/**
 * The fake upstream's script: the main conversation (told by `isMain`) walks the plan; any side
 * request (opencode's title, Qwen's memory subagent) gets a short text.
 */
export function liveModel(
  plan: ReturnType<typeof livePlan>,
  isMain: (json: any) => boolean,
  onError?: (message: string) => void,
): LiveModel {
  const main: number[] = []
  const errors: string[] = []
  let callNumber = 0
  const script: FakeScript = (request: RecordedRequest, index: number) => {
    const json = request.json
    if (!request.pathname.endsWith('/chat/completions') || !json)
      return { status: 404, body: 'not found' }
    let say: Step
    if (!isMain(json)) {
      say = { content: 'Live agent test' }
    } else {
      main.push(index)
      const messages: any[] = json.messages ?? []
      const step = messages.filter(
        (m) => m.role === 'assistant' && (m.tool_calls ?? []).length > 0,
      ).length
      try {
        const next = plan[step]
        if (!next) throw new Error(`the plan has no step ${step}`)
        say = next(findTools(json.tools), messages)
      } catch (error) {
        errors.push(`request ${index}: ${(error as Error).message}`)
        onError?.(errors.at(-1)!)
        return {
          status: 500,
          body: JSON.stringify({ error: { message: (error as Error).message } }),
        }
      }
    }
    const toolCalls =
      'calls' in say
        ? say.calls.map((c) => ({
            id: `call_live_${++callNumber}`,
            name: c.name,
            arguments: JSON.stringify(c.args),
          }))
        : []
    const content = 'content' in say ? say.content : undefined
    const usage = { prompt_tokens: 1000, completion_tokens: 20, total_tokens: 1020 }
    if (json.stream) {
      const half = (text: string) => [
        text.slice(0, Math.ceil(text.length / 2)),
        text.slice(Math.ceil(text.length / 2)),
      ]
      const response: FakeResponse = {
        sse: chatChunks({
          content: content === undefined ? [] : content.split(/(?<= )/),
          toolCalls: toolCalls.map((c) => ({ ...c, arguments: half(c.arguments) })),
          usage: json.stream_options?.include_usage ? usage : undefined,
          model: json.model,
        }),
      }
      return response
    }
    return { json: chatCompletion({ content, toolCalls, usage, model: json.model }) }
  }
  return { script, main, errors }
}

/**
 * A scripted model for a CLI on chat completions that plays `steps` in order, streamed: the step
 * is the number of assistant messages with calls in the request (a recall exchange the proxy
 * restores counts as one), then `final`. Requests `isMain` does not claim get a short text; the
 * main ones are kept in `main`.
 */
export function stepByStep(
  steps: readonly Call[],
  final: string,
  isMain: (json: any) => boolean,
  main: RecordedRequest[],
): FakeScript {
  return (request, index) => {
    const json = request.json
    if (!isMain(json)) return { sse: [...chatChunks({ content: ['Side answer.'] }), '[DONE]'] }
    main.push(request)
    const step = json.messages.filter((m: any) => m.tool_calls?.length).length
    const next = steps[step]
    const chunks = next
      ? chatChunks({
          toolCalls: [
            { id: `call_${index}`, name: next.name, arguments: [JSON.stringify(next.args)] },
          ],
        })
      : chatChunks({ content: [final] })
    return { sse: [...chunks, '[DONE]'] }
  }
}
