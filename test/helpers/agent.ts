/**
 * A small coding agent for end-to-end tests: it keeps its history the way real agents do, runs
 * its tools for real in a workspace folder, and talks to the proxy over HTTP, streaming or not.
 * Its tools are shaped like Claude Code's as routers expose them (Read with `→` numbering, Glob,
 * Bash); the fake upstream decides which calls the "model" makes.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { postChat, sseData } from './proxy.js'

export const CLAUDE_TOOLS = [
  {
    type: 'function',
    function: {
      name: 'Read',
      description: 'Reads a file from the local filesystem.',
      parameters: {
        type: 'object',
        properties: {
          file_path: { type: 'string', description: 'The absolute path to the file to read' },
          offset: {
            type: 'number',
            description:
              'The line number to start reading from. Only provide if the file is too large to read at once',
          },
          limit: {
            type: 'number',
            description:
              'The number of lines to read. Only provide if the file is too large to read at once.',
          },
        },
        required: ['file_path'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'Edit',
      description: 'Performs exact string replacements in files.',
      parameters: {
        type: 'object',
        properties: {
          file_path: { type: 'string', description: 'The absolute path to the file to modify' },
          old_string: { type: 'string', description: 'The text to replace' },
          new_string: { type: 'string', description: 'The text to replace it with' },
          replace_all: {
            type: 'boolean',
            description: 'Replace all occurences of old_string (default false)',
          },
        },
        required: ['file_path', 'old_string', 'new_string'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'Write',
      description: 'Writes a file to the local filesystem.',
      parameters: {
        type: 'object',
        properties: {
          file_path: { type: 'string', description: 'The absolute path to the file to write' },
          content: { type: 'string', description: 'The content to write to the file' },
        },
        required: ['file_path', 'content'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'Glob',
      description: 'Fast file pattern matching tool that works with any codebase size',
      parameters: {
        type: 'object',
        properties: {
          pattern: { type: 'string', description: 'The glob pattern to match files against' },
          path: { type: 'string', description: 'The directory to search in.' },
        },
        required: ['pattern'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'Bash',
      description: 'Executes a given bash command',
      parameters: {
        type: 'object',
        properties: { command: { type: 'string', description: 'The command to execute' } },
        required: ['command'],
      },
    },
  },
] as const

export interface AgentOptions {
  /** One proxy, or several taken in turn request by request (replicas behind one port). */
  readonly proxyUrl: string | readonly string[]
  readonly workspace: string
  readonly stream?: boolean
  readonly headers?: Record<string, string>
  readonly system?: string
  /** Qwen Code and OpenHands send tool results as an array of text parts. */
  readonly partsContent?: boolean
}

export type Message = Record<string, any>

export class TestAgent {
  readonly messages: Message[]
  readonly replies: { status: number; text: string; json: any }[] = []

  constructor(readonly options: AgentOptions) {
    this.messages = [
      { role: 'system', content: options.system ?? 'You are a careful coding agent.' },
    ]
  }

  /** One user turn: asks, runs every tool call the model makes, until it answers in text. */
  async ask(text: string, maxSteps = 10): Promise<string> {
    this.messages.push({ role: 'user', content: text })
    for (let step = 0; step < maxSteps; step++) {
      const assistant = await this.complete()
      this.messages.push(assistant)
      const calls: any[] = assistant.tool_calls ?? []
      if (calls.length === 0) return assistant.content ?? ''
      for (const call of calls) {
        const output = this.runTool(call.function.name, JSON.parse(call.function.arguments || '{}'))
        this.messages.push({
          role: 'tool',
          tool_call_id: call.id,
          content: this.options.partsContent ? [{ type: 'text', text: output }] : output,
        })
      }
    }
    throw new Error('the agent did not finish')
  }

  async complete(): Promise<Message> {
    const body = {
      model: 'test-model',
      messages: this.messages,
      tools: CLAUDE_TOOLS,
      stream: this.options.stream ?? false,
    }
    const urls =
      typeof this.options.proxyUrl === 'string' ? [this.options.proxyUrl] : this.options.proxyUrl
    const reply = await postChat(
      urls[this.replies.length % urls.length]!,
      body,
      this.options.headers,
    )
    this.replies.push(reply)
    if (reply.status !== 200) throw new Error(`proxy answered ${reply.status}: ${reply.text}`)
    return this.options.stream
      ? assembleStream(reply.text)
      : stripNulls(reply.json.choices[0].message)
  }

  runTool(name: string, args: any): string {
    switch (name) {
      case 'Read': {
        const lines = readFileSync(args.file_path, 'utf8').replace(/\n$/, '').split('\n')
        const start = args.offset ?? 1
        const shown = lines.slice(start - 1, start - 1 + (args.limit ?? 2000))
        return shown.map((line, i) => `${String(start + i).padStart(6)}→${line}`).join('\n')
      }
      case 'Edit': {
        const before = readFileSync(args.file_path, 'utf8')
        const count = before.split(args.old_string).length - 1
        if (count === 0)
          return (
            '<tool_use_error>String to replace not found in file.\nString: ' +
            args.old_string +
            '</tool_use_error>'
          )
        const after = args.replace_all
          ? before.split(args.old_string).join(args.new_string)
          : before.replace(args.old_string, () => args.new_string)
        writeFileSync(args.file_path, after)
        return (
          `The file ${args.file_path} has been updated. Here's the result of running \`cat -n\` on a snippet of the edited file:\n` +
          snippet(after, after.indexOf(args.new_string))
        )
      }
      case 'Write': {
        const existed = existsSync(args.file_path)
        writeFileSync(args.file_path, args.content)
        return existed
          ? `The file ${args.file_path} has been updated. Here's the result of running \`cat -n\` on a snippet of the edited file:\n` +
              snippet(args.content, 0)
          : `File created successfully at: ${args.file_path}`
      }
      case 'Glob': {
        const dir = args.path ?? this.options.workspace
        const suffix = String(args.pattern)
          .replace(/^\*\*\/\*/, '')
          .replace(/^\*/, '')
        return readdirSync(dir)
          .filter((file) => file.endsWith(suffix))
          .sort()
          .map((file) => join(dir, file))
          .join('\n')
      }
      case 'Bash':
        return execFileSync('bash', ['-c', args.command], {
          cwd: this.options.workspace,
          encoding: 'utf8',
        })
      default:
        return `Error: no such tool ${name}`
    }
  }
}

/** Claude Code's echo of the lines around an edit, `cat -n` style with `→`. */
function snippet(content: string, at: number): string {
  const lines = content.split('\n')
  const line = content.slice(0, Math.max(0, at)).split('\n').length
  const from = Math.max(1, line - 4)
  return lines
    .slice(from - 1, line + 4)
    .map((text, i) => `${String(from + i).padStart(6)}→${text}`)
    .join('\n')
}

/** Rebuilds the assistant message from SSE chunks, as an OpenAI SDK client does. */
export function assembleStream(text: string): Message {
  const data = sseData(text)
  if (data.at(-1) !== '[DONE]') throw new Error('the stream did not end with [DONE]')
  if (data.filter((d) => d === '[DONE]').length !== 1) throw new Error('more than one [DONE]')
  let content = ''
  const calls: { id: string; type: string; function: { name: string; arguments: string } }[] = []
  for (const payload of data.slice(0, -1)) {
    const chunk = JSON.parse(payload)
    if (chunk.error) throw new Error('stream error: ' + JSON.stringify(chunk.error))
    const delta = chunk.choices?.[0]?.delta
    if (!delta) continue
    if (typeof delta.content === 'string') content += delta.content
    for (const part of delta.tool_calls ?? []) {
      const call = (calls[part.index] ??= {
        id: '',
        type: 'function',
        function: { name: '', arguments: '' },
      })
      if (part.id) call.id = part.id
      if (part.function?.name) call.function.name += part.function.name
      if (part.function?.arguments) call.function.arguments += part.function.arguments
    }
  }
  const message: Message = { role: 'assistant', content: content === '' ? null : content }
  if (calls.length > 0) message.tool_calls = calls
  return message
}

function stripNulls(message: Message): Message {
  const out: Message = { role: 'assistant', content: message.content ?? null }
  if (message.tool_calls?.length) out.tool_calls = message.tool_calls
  return out
}
