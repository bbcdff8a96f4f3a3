/**
 * What `--elide` sends upstream over a session whose model recalls: replay cannot tell (the
 * traces' agents never had a recall tool), so a scripted model plays it here. Each build (and
 * each setting) runs the same session through its own process, against one scripted upstream:
 * the agent runs `--steps` commands of about 6,000 characters each; every `--recall-every`th
 * step the model first recalls the result three steps back (the proxy answers it and asks again,
 * hidden from the agent). Printed per side: the upstream input tokens (characters / 4), the
 * requests that broke the prompt cache, and the input's price at $3 a million, cached tokens 90%
 * off (the tokens each request repeats from the start of the one before).
 *
 *   npm run build && node --import tsx bench/elide-recalls.ts [--steps 60] [--recall-every 4]
 *   node --import tsx bench/elide-recalls.ts --base /tmp/base   # another build beside this one
 */
import { createServer, type IncomingMessage } from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import type { AddressInfo } from 'node:net'
import { request } from 'undici'
import { packageRoot } from '../src/config/loop.js'
import { freePort, spawnChild, stopAll } from './children.js'

const { values } = parseArgs({
  options: {
    base: { type: 'string' },
    steps: { type: 'string', default: '60' },
    'recall-every': { type: 'string', default: '4' },
  },
})
const STEPS = Number(values.steps)
const EVERY = Number(values['recall-every'])

interface Message {
  role: string
  content?: string | null
  tool_call_id?: string
  tool_calls?: { id: string; function: { name: string; arguments: string } }[]
}

/** A command's output: distinct lines, about 6,000 characters. */
function output(step: number): string {
  return Array.from({ length: 200 }, (_, i) => `step ${step} line ${i + 1} of its output`).join(
    '\n',
  )
}

/** The scripted model: a command a step, a recall first on every EVERY-th step. */
function answer(messages: readonly Message[]): Message {
  const calls = messages.flatMap((m) => m.tool_calls ?? [])
  const steps = calls.filter((c) => c.function.name === 'Bash').length
  const last = messages.at(-1)
  const justRecalled = last?.role === 'tool' && last.tool_call_id?.startsWith('r')
  const call = (id: string, name: string, args: unknown) => ({
    role: 'assistant',
    content: null,
    tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
  })
  if (steps >= STEPS) return { role: 'assistant', content: 'Done.' }
  if (steps % EVERY === EVERY - 1 && steps >= 3 && !justRecalled) {
    // The result of the Bash call three steps back, by the id its text opens with.
    const bash = calls.filter((c) => c.function.name === 'Bash').at(-3)!
    const result = messages.find((m) => m.role === 'tool' && m.tool_call_id === bash.id)
    const id = /^\[(#[0-9a-f]+)/.exec(result?.content ?? '')?.[1] ?? '#0001'
    return call(`r${steps}`, 'recall', { id })
  }
  return call(`c${steps}`, 'Bash', { command: `run ${steps}` })
}

/** Upstream requests' messages, as each side's proxy sent them. */
const seen = new Map<string, string[]>()
const upstream = createServer((req: IncomingMessage, res) => {
  const chunks: Buffer[] = []
  req.on('data', (c: Buffer) => chunks.push(c))
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString()) as { messages: Message[] }
    const side = String(req.headers['x-side'])
    seen.set(side, [...(seen.get(side) ?? []), JSON.stringify(body.messages)])
    res.setHeader('content-type', 'application/json')
    res.end(
      JSON.stringify({
        id: 'x',
        object: 'chat.completion',
        choices: [{ index: 0, message: answer(body.messages), finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      }),
    )
  })
})
await new Promise<void>((done) => upstream.listen(0, '127.0.0.1', done))
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`

const dir = mkdtempSync(join(tmpdir(), 'lembas-elide-recalls-'))
async function lembas(name: string, root: string, flags: string[]) {
  const port = await freePort()
  await spawnChild({
    name,
    command: process.execPath,
    args: [
      resolve(root, 'dist/src/cli.js'),
      ...['--port', String(port), '--upstream', upstreamUrl],
      ...['--store', `sqlite:${join(dir, name + '.db')}`, '--log-level', 'warn'],
      ...flags,
    ],
    readyPort: port,
  })
  return { name, url: `http://127.0.0.1:${port}` }
}

const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'Bash',
      description: 'Runs a command',
      parameters: { type: 'object', properties: { command: { type: 'string' } } },
    },
  },
]

/** The agent: sends its history, runs the command it is given, until the model is done. */
async function run(side: { name: string; url: string }): Promise<void> {
  const messages: Message[] = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: 'Fix the bug.' },
  ]
  for (let turn = 0; turn <= STEPS; turn++) {
    const response = await request(`${side.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-side': side.name },
      body: JSON.stringify({ model: 'm', messages, tools: TOOLS }),
    })
    const json = (await response.body.json()) as { choices: { message: Message }[] }
    const message = json.choices[0]!.message
    messages.push(message)
    const call = message.tool_calls?.[0]
    if (!call) return
    const step = Number(
      (JSON.parse(call.function.arguments) as { command: string }).command.split(' ')[1],
    )
    messages.push({ role: 'tool', tool_call_id: call.id, content: output(step) })
  }
}

/** Tokens, breaks and price of one side's upstream requests. */
function priced(requests: readonly string[]) {
  let tokens = 0
  let cached = 0
  let breaks = 0
  requests.forEach((body, i) => {
    const before = requests[i - 1]
    let shared = 0
    if (before !== undefined) {
      const stem = before.slice(0, -1) // without its closing `]`
      while (shared < stem.length && stem.charCodeAt(shared) === body.charCodeAt(shared)) shared++
      if (shared < stem.length) breaks++
    }
    tokens += body.length / 4
    cached += shared / 4
  })
  const price = ((tokens - cached) * 3 + cached * 0.3) / 1e6
  return { requests: requests.length, tokens, breaks, price }
}

const sides = [
  await lembas('default', packageRoot(), []),
  await lembas('elide', packageRoot(), ['--elide']),
  ...(values.base ? [await lembas('base-elide', values.base, ['--elide'])] : []),
]
try {
  for (const side of sides) await run(side)
} finally {
  await stopAll()
  upstream.close()
  rmSync(dir, { recursive: true, force: true })
}
console.log(`${STEPS} steps, a recall every ${EVERY}; tokens are characters / 4`)
console.log('side          requests     tokens  breaks      price')
const first = priced(seen.get(sides[0]!.name) ?? [])
for (const side of sides) {
  const p = priced(seen.get(side.name) ?? [])
  const vs = ((p.price / first.price - 1) * 100).toFixed(1)
  console.log(
    `${side.name.padEnd(12)}${String(p.requests).padStart(10)}${Math.round(p.tokens).toLocaleString('en-US').padStart(11)}${String(p.breaks).padStart(8)}   $${p.price.toFixed(4)} (${vs}%)`,
  )
}
