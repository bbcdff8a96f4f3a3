import { isAscii } from 'node:buffer'
import { SIZES, sessionFor } from './workload.js'
import { arraySpan } from '../src/wire/json-scan.js'
import { skipComma } from '../src/pipeline/json.js'
for (const size of ['1mb', '8mb']) {
const s = sessionFor(SIZES[size]!, 1000, false)
const b = s.base()
const span = (await arraySpan(b, 'messages', 1e9))!
let start = span.arrayStart + 1; const parts: Buffer[] = []
for (const end of span.ends) { parts.push(b.subarray(skipComma(b, start), end)); start = end }
console.log(size, 'elements', parts.length, 'ascii elements', parts.filter((p) => isAscii(p)).length, 'ascii bytes', parts.filter((p) => isAscii(p)).reduce((a, p) => a + p.length, 0))
const run = (name: string, f: () => unknown) => {
  for (let i = 0; i < 10; i++) f()
  const n = 20
  const t = performance.now(); for (let i = 0; i < n; i++) f(); console.log(' ', name, ((performance.now() - t) / n).toFixed(3), 'ms')
}
run('decode whole', () => b.toString('utf8'))
run('decode per element', () => parts.map((p) => p.toString('utf8')))
run('isAscii + latin1/utf8 per element', () => parts.map((p) => isAscii(p) ? p.latin1Slice() : p.toString('utf8')))
run('parse per element (utf8)', () => parts.map((p) => JSON.parse(p.toString('utf8'))))
run('parse per element (ascii fast)', () => parts.map((p) => JSON.parse(isAscii(p) ? p.latin1Slice() : p.toString('utf8'))))
run('parse whole', () => JSON.parse(b.toString('utf8')))
const non = parts.filter((p) => !isAscii(p)).slice(0, 3).map((p) => { const s = p.toString(); return [...s].filter((c) => c.charCodeAt(0) > 127).slice(0, 10).join('') })
console.log(non)
}
