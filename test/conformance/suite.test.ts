import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { packageRoot } from '../../src/config/loop.js'
import { expandText } from './simulate.js'
import { loadSuite } from './load.js'

const suite = loadSuite()
// The spec, copied into the repository so that a clone tests on its own (spec/README.md).
const spec = readFileSync(packageRoot() + 'spec/context-3.0.0.md', 'utf8')

/** Every example string of the spec (a line of its own there) must appear in some expect. */
const SPEC_EXAMPLES = [
  '[#0012 src/app.ts lines 1-200 of 340 sha 1c9e04ab]',
  '[#0013 notes.txt empty sha e3b0c442]',
  '[#0019 src/app.ts lines 50-80 of 340 sha 1c9e04ab] Unchanged since #0012, which already shows lines 1-200.',
  '[1234 lines elided, full output #0020]',
  '[#0021 recall #0020 lines 1-2000 of 3400]',
  '[#0021] No stored result #ffff in this session.',
  '[#0022 src/app.ts sha 7d0a91c3]',
  '[#0023 docs/new.md sha 52b6e3a0] Created, 14 lines.',
  '[#0024 old.md deleted]',
  '[#0025]',
  '[src/a.ts sha 7d0a91c3]',
  '@@ -1,2 +1,2 @@',
  '[docs/new.md sha 52b6e3a0] Created, 14 lines.',
  '[old.md deleted]',
  '[#0027] Same result as #0026.',
  '## Files read before this summary',
  'Read a file again for its content; recall shows a result by its id.',
  '| Path | Lines | sha | Result |',
  '| src/app.ts | 1-200 of 340 | 1c9e04ab | #0012 |',
]

const expectedLines = new Set(
  suite.cases.flatMap((c) =>
    c.steps.flatMap((step) => {
      if (!('expect' in step) || step.expect === null) return []
      const texts =
        Array.isArray(step.expect) && step.op === 'request' ? step.expect : [step.expect]
      return texts.flatMap((text) => expandText(text as never).split('\n'))
    }),
  ),
)

test('every example string of the spec is expected by some case', () => {
  for (const example of SPEC_EXAMPLES) {
    assert.ok(spec.includes(example), `not in the spec (update this list): ${example}`)
    assert.ok(expectedLines.has(example), `no case expects: ${example}`)
  }
})

test('case ids and descriptions are unique, and state facts', () => {
  const ids = new Set<string>()
  const descriptions = new Set<string>()
  for (const c of suite.cases) {
    assert.ok(!ids.has(c.id), `duplicate id ${c.id}`)
    assert.ok(!descriptions.has(c.description), `duplicate description ${c.description}`)
    assert.doesNotMatch(c.description, /\bshould\b/i, `${c.id}: describe a fact, not a wish`)
    ids.add(c.id)
    descriptions.add(c.description)
  }
})

test('every numbered section of the spec that acts on results has cases', () => {
  const sections = new Set(suite.cases.map((c) => c.section))
  for (const section of ['§1', '§2', '§3', '§4', '§5', '§6', '§7']) {
    assert.ok(sections.has(section), `no case for ${section}`)
  }
})

test('the suite holds at least 60 cases', () => {
  assert.ok(suite.cases.length >= 60, `only ${suite.cases.length} cases`)
})
