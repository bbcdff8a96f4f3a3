/**
 * How a session's requests look on each front door. A session (workload.ts) draws its tool calls
 * and results once, in Claude Code's terms (Read, Edit, Glob, Grep, Bash and their outputs); a
 * shape writes them down as one agent would send them:
 *
 * - `chat`: POST /v1/chat/completions, Claude Code's tools as routers expose them (the bench's
 *   original workload, byte for byte);
 * - `messages`: POST /v1/messages as Claude Code sends it: system text blocks with cache_control,
 *   tools with input_schema, tool_use / tool_result blocks, the newest message carrying the
 *   moving cache breakpoint, the session in metadata.user_id;
 * - `responses`: POST /v1/responses as Codex CLI sends it: instructions, the `shell` and
 *   `apply_patch` tools of the tests, input items message / function_call /
 *   function_call_output (custom_tool_call for patches), the session in prompt_cache_key.
 *
 * Shapes draw no random numbers: the session's choices are the same whatever the door.
 */
import { CLAUDE_TOOLS as AGENT_TOOLS } from '../test/helpers/agent.js'

export const DOORS = ['chat', 'messages', 'responses'] as const
export type Door = (typeof DOORS)[number]

/** Claude Code's tools as routers expose them: the tests' set, plus Grep. */
export const CLAUDE_TOOLS = [
  ...AGENT_TOOLS,
  {
    type: 'function',
    function: {
      name: 'Grep',
      description: 'A powerful search tool built on ripgrep',
      parameters: {
        type: 'object',
        properties: {
          pattern: { type: 'string', description: 'The regular expression pattern to search for' },
          path: { type: 'string', description: 'File or directory to search in' },
          output_mode: {
            type: 'string',
            enum: ['content', 'files_with_matches', 'count'],
            description: 'Output mode',
          },
        },
        required: ['pattern'],
      },
    },
  },
]

/** The same tools as Claude Code sends them to the Messages API. */
export const ANTHROPIC_TOOLS = CLAUDE_TOOLS.map(({ function: f }) => ({
  name: f.name,
  description: f.description,
  input_schema: f.parameters,
}))

/** Codex CLI's tools as test/e2e/responses.test.ts offers them (shell and apply_patch). */
export const CODEX_TOOLS = [
  {
    type: 'function',
    name: 'shell',
    description: 'Runs a command',
    strict: false,
    parameters: {
      type: 'object',
      properties: {
        command: { type: 'array', items: { type: 'string' } },
        workdir: { type: 'string' },
      },
      required: ['command'],
    },
  },
  { type: 'custom', name: 'apply_patch', description: 'Applies a patch' },
]

/** One tool call and its result, in Claude Code's terms; `plain` is a read without numbering. */
export interface ToolCall {
  name: string
  args: Record<string, unknown>
  result: string
  plain?: string
}

/**
 * The JSON items one step appends. `marked`, when set, stands for the last `marked.length` items
 * as long as they are the newest ones (Claude Code's moving cache breakpoints).
 */
export interface Shaped {
  items: string[]
  marked?: string[]
}

export interface Frame {
  system: string
  stream: boolean
  /** The client's session id where the agent puts it in the body (a UUID). */
  sessionId: string
  model?: string
}

export interface Shape {
  readonly door: Door
  /** The request path of this door. */
  readonly path: string
  /** A string only the last event of a complete stream carries. */
  readonly streamEnd: string
  /** The body around the item list: `head` ends with `[`, `tail` starts with `]`. */
  frame(frame: Frame): { head: string; tail: string }
  /** The first items: the user's task (and, for chat, the system message). */
  first(system: string, user: string): Shaped
  /** One assistant tool call (with its sentence, if any) and its result. */
  step(id: string, text: string, call: ToolCall): Shaped
}

const json = JSON.stringify

const chat: Shape = {
  door: 'chat',
  path: '/v1/chat/completions',
  streamEnd: '[DONE]',
  frame: ({ stream, model }) => ({
    head: `{"model":${json(model ?? 'bench-model')},"max_tokens":8192,"messages":[`,
    tail:
      `],"tools":${json(CLAUDE_TOOLS)},"tool_choice":"auto",` +
      (stream ? '"stream":true,"stream_options":{"include_usage":true}}' : '"stream":false}'),
  }),
  first: (system, user) => ({
    items: [json({ role: 'system', content: system }), json({ role: 'user', content: user })],
  }),
  step: (id, text, { name, args, result }) => ({
    items: [
      json({
        role: 'assistant',
        content: text,
        tool_calls: [{ id, type: 'function', function: { name, arguments: json(args) } }],
      }),
      json({ role: 'tool', tool_call_id: id, content: result }),
    ],
  }),
}

const EPHEMERAL = { type: 'ephemeral' }

const messages: Shape = {
  door: 'messages',
  path: '/v1/messages',
  streamEnd: 'message_stop',
  frame: ({ system, stream, sessionId, model }) => ({
    head: `{"model":${json(model ?? 'claude-sonnet-4-5')},"messages":[`,
    tail:
      `],"system":${json([
        {
          type: 'text',
          text: "You are Claude Code, Anthropic's official CLI for Claude.",
          cache_control: EPHEMERAL,
        },
        { type: 'text', text: system, cache_control: EPHEMERAL },
      ])},"tools":${json(ANTHROPIC_TOOLS)},` +
      `"metadata":${json({ user_id: `user_${'0b5e'.repeat(16)}_account__session_${sessionId}` })},` +
      `"max_tokens":32000,"stream":${stream}}`,
  }),
  first: (_system, user) => {
    const content = [
      {
        type: 'text',
        text: "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# important-instruction-reminders\nDo what has been asked; nothing more, nothing less.\n</system-reminder>",
      },
      { type: 'text', text: user },
    ]
    return {
      items: [json({ role: 'user', content })],
      marked: [
        json({ role: 'user', content: [content[0], { ...content[1], cache_control: EPHEMERAL }] }),
      ],
    }
  },
  step: (id, text, { name, args, result }) => {
    const said = text ? [{ type: 'text', text }] : []
    const use = { type: 'tool_use', id, name, input: args }
    const block: Record<string, unknown> = { type: 'tool_result', tool_use_id: id, content: result }
    if (result.startsWith('<tool_use_error>')) block.is_error = true
    const mark = (b: object) => ({ ...b, cache_control: EPHEMERAL })
    return {
      items: [
        json({ role: 'assistant', content: [...said, use] }),
        json({ role: 'user', content: [block] }),
      ],
      // Claude Code puts a cache breakpoint on each of the two newest messages: they move on
      // with every request, so the previous request's last two messages lose theirs.
      marked: [
        json({ role: 'assistant', content: [...said, mark(use)] }),
        json({ role: 'user', content: [mark(block)] }),
      ],
    }
  },
}

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`

/** Codex's shell output envelope (what its `shell` tool returns to the model). */
function envelope(output: string, exitCode = 0): string {
  const wall = (0.05 + (output.length % 89) / 100).toFixed(1)
  return `Exit code: ${exitCode}\nWall time: ${wall} seconds\nOutput:\n${output}`
}

/** A Claude Code tool call as Codex would have made it: a shell command, or a patch. */
function codexCall(call: ToolCall): { command?: string; patch?: string; output: string } {
  const a = call.args as Record<string, string | number | undefined>
  const path = String(a.file_path ?? '')
  switch (call.name) {
    case 'Read': {
      const { offset, limit } = a
      const command =
        typeof offset === 'number' && typeof limit === 'number'
          ? `sed -n '${offset},${offset + limit - 1}p' ${quote(path)}`
          : `cat ${quote(path)}`
      return { command, output: envelope(call.plain ?? call.result) }
    }
    case 'Edit': {
      const patch =
        `*** Begin Patch\n*** Update File: ${path}\n@@\n` +
        `-${String(a.old_string)}\n+${String(a.new_string)}\n*** End Patch\n`
      const failed = call.result.startsWith('<tool_use_error>')
      return {
        patch,
        output: failed
          ? `apply_patch verification failed: Failed to find expected lines in ${path}:\n${String(a.old_string)}`
          : `Success. Updated the following files:\nM ${path}\n`,
      }
    }
    case 'Glob':
      return {
        command: `rg --files -g ${quote(String(a.pattern))}`,
        output: envelope(call.result),
      }
    case 'Grep':
      return { command: `rg -n ${quote(String(a.pattern))}`, output: envelope(call.result) }
    default: {
      const failed = call.result.includes('\nℹ fail 1')
      return { command: String(a.command ?? call.name), output: envelope(call.result, +failed) }
    }
  }
}

const responses: Shape = {
  door: 'responses',
  path: '/v1/responses',
  streamEnd: 'response.completed',
  frame: ({ system, stream, sessionId, model }) => ({
    head: `{"model":${json(model ?? 'gpt-5-codex')},"instructions":${json(system)},"input":[`,
    tail:
      `],"tools":${json(CODEX_TOOLS)},"tool_choice":"auto","parallel_tool_calls":false,` +
      `"reasoning":{"effort":"medium","summary":"auto"},"store":false,"stream":${stream},` +
      `"include":[],"prompt_cache_key":${json(sessionId)}}`,
  }),
  first: (_system, user) => ({
    items: [
      json({
        type: 'message',
        role: 'user',
        content: [
          {
            type: 'input_text',
            text: '<environment_context>\n  <cwd>/work/project</cwd>\n  <approval_policy>on-request</approval_policy>\n  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n  <shell>bash</shell>\n</environment_context>',
          },
        ],
      }),
      json({ type: 'message', role: 'user', content: [{ type: 'input_text', text: user }] }),
    ],
  }),
  step: (id, text, call) => {
    const callId = 'call_' + id.slice('toolu_01'.length)
    const items: string[] = []
    if (text)
      items.push(
        json({
          type: 'message',
          role: 'assistant',
          content: [{ type: 'output_text', text, annotations: [] }],
        }),
      )
    const codex = codexCall(call)
    if (codex.patch !== undefined) {
      items.push(
        json({
          type: 'custom_tool_call',
          call_id: callId,
          name: 'apply_patch',
          input: codex.patch,
        }),
        json({ type: 'custom_tool_call_output', call_id: callId, output: codex.output }),
      )
    } else {
      const args = { command: ['bash', '-lc', codex.command], workdir: '/work/project' }
      items.push(
        json({ type: 'function_call', name: 'shell', arguments: json(args), call_id: callId }),
        json({ type: 'function_call_output', call_id: callId, output: codex.output }),
      )
    }
    return { items }
  },
}

const SHAPES: Record<Door, Shape> = { chat, messages, responses }

export function shapeOf(door: Door): Shape {
  return SHAPES[door]
}
