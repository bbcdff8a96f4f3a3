/**
 * The functions a CPU profile (bench/profile.cjs, or node --cpu-prof) spent its busy samples in:
 * by their own time, and by time including what they called.
 *
 *   node --import tsx bench/profile-top.ts FILE.cpuprofile [ROWS]
 */
import { readFileSync } from 'node:fs'

interface ProfileNode {
  readonly id: number
  readonly callFrame: { functionName: string; url: string; lineNumber: number }
  readonly children?: number[]
}
interface Profile {
  readonly nodes: ProfileNode[]
  readonly samples: number[]
}

const [file, rows = '30'] = process.argv.slice(2)
if (!file) {
  console.error('usage: node --import tsx bench/profile-top.ts FILE.cpuprofile [ROWS]')
  process.exit(2)
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
const byId = new Map(profile.nodes.map((node) => [node.id, node]))
const parent = new Map<number, number>()
for (const node of profile.nodes)
  for (const child of node.children ?? []) parent.set(child, node.id)
const name = (node: ProfileNode) => {
  const { functionName, url, lineNumber } = node.callFrame
  const where = url.split('/').slice(-2).join('/')
  return `${functionName || '(anonymous)'} ${where}${where ? `:${lineNumber + 1}` : ''}`
}

const own = new Map<string, number>()
const within = new Map<string, number>()
let busy = 0
for (const id of profile.samples) {
  const node = byId.get(id)!
  if (node.callFrame.functionName === '(idle)') continue
  busy++
  own.set(name(node), (own.get(name(node)) ?? 0) + 1)
  // Each function once per sample, however deep it recurses.
  const seen = new Set<string>()
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const key = name(byId.get(at)!)
    if (seen.has(key)) continue
    seen.add(key)
    within.set(key, (within.get(key) ?? 0) + 1)
  }
}

const print = (title: string, counts: Map<string, number>) => {
  console.log(`\n${title} (% of ${busy} busy samples)`)
  const top = [...counts].sort((a, b) => b[1] - a[1]).slice(0, Number(rows))
  for (const [key, count] of top)
    console.log(`${((100 * count) / busy).toFixed(1).padStart(5)}  ${key}`)
}
print('own time', own)
print('with callees', within)
