/**
 * The JSON scans a request goes through before anything is parsed, timed beside JSON.parse of
 * the same bytes (the ratio is what to read; milliseconds move with the machine):
 *
 *   node --import tsx bench/scan.ts
 *
 * - the nesting check (src/pipeline/json.ts): on every new item of the fast path, and on a whole
 *   body on the full path;
 * - finding the history array and its elements (src/wire/json-scan.ts).
 */
import { nestingDepth } from '../src/pipeline/json.js'
import { arraySpan } from '../src/wire/json-scan.js'

/** Tool output as agents send it: code, with quotes and backslashes that JSON escapes. */
const output = Array.from(
  { length: 250 },
  (_, i) => `  const x${i} = foo("bar", [1, 2, { a: ${i} }]) // see src\\util.ts line ${i}`,
).join('\n')
const message = JSON.stringify({ role: 'tool', tool_call_id: 'call_1', content: output })
const sizes = {
  '10 KB item': `{"messages":[${message}]}`,
  '1 MB body': `{"model":"m","messages":[${Array(100).fill(message).join(',')}]}`,
}

async function timed(runs: number, work: () => unknown): Promise<number> {
  for (let k = 0; k < Math.ceil(runs / 10); k++) await work()
  const started = performance.now()
  for (let k = 0; k < runs; k++) await work()
  return ((performance.now() - started) / runs) * 1000
}

const rows: string[] = []
for (const [name, text] of Object.entries(sizes)) {
  const bytes = Buffer.from(text)
  const runs = bytes.length > 100_000 ? 200 : 20_000
  const parse = await timed(runs, () => JSON.parse(text))
  const depth = await timed(runs, () => nestingDepth(text))
  const span = await timed(runs, () => arraySpan(bytes, 'messages'))
  const ratio = (us: number) => `${us.toFixed(1)} µs (${(us / parse).toFixed(2)}x JSON.parse)`
  rows.push(
    `${name.padEnd(11)} JSON.parse ${parse.toFixed(1)} µs; nesting check ${ratio(depth)}; history array ${ratio(span)}`,
  )
}
process.stdout.write(rows.join('\n') + '\n')
