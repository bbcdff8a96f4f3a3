/**
 * What the model is told (spec §9): the prompt block and the recall tool. Every fact of the spec's
 * block is found in them, in the spec's own words where it quotes a text; together they cost at
 * most 150 o200k tokens a request; and they are the same bytes on every load.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { encode } from 'gpt-tokenizer'
import { loadLoop, loadPromptBlock } from '../../src/config/loop.js'
import { DOORS, type Json } from '../../src/doors/index.js'
import { recallSetup } from '../../src/pipeline/recall.js'

const MAX_TOKENS = 150

const loop = loadLoop()
const texts = loop.context.texts
const block = loadPromptBlock()
const tool = recallSetup(loop.proxy.recall).tool
const toolJson = JSON.stringify(tool)

/** o200k tokens, as src/replay/tokens.ts counts them. */
function tokens(text: string): number {
  return encode(text, { disallowedSpecial: new Set<string>() }).length
}

const PLACEHOLDER = /(\{[a-z_]+\})/

/** A spec text as a pattern: each `{placeholder}` stands for any word (`#id`, `path`, `N`). */
function pattern(template: string): string {
  return template
    .split(PLACEHOLDER)
    .map((piece) =>
      PLACEHOLDER.test(piece) ? '[^\\s\\]"]+' : piece.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
    )
    .join('')
}

/** A spec text (loop.json `context.texts`), or its first `upTo` characters, found anywhere. */
function quoted(template: string, upTo = template.length): RegExp {
  return new RegExp(pattern(template.slice(0, upTo)))
}

/**
 * The whole forms a quote of a spec text may take: the text, or its beginning up to any
 * placeholder ("Unchanged since #id" of "Unchanged since {target}, which already shows …").
 */
function forms(template: string): RegExp[] {
  const pieces = template.split(PLACEHOLDER)
  const ends = pieces.flatMap((piece, i) => (PLACEHOLDER.test(piece) ? [i + 1] : []))
  return [...ends, pieces.length].map(
    (n) => new RegExp(`^${pattern(pieces.slice(0, n).join(''))}$`),
  )
}

/** Where a fact must be said: the block, or the tool as the model gets it (its JSON). */
type Place = 'block' | 'tool'

interface Fact {
  readonly fact: string
  readonly place: Place
  /** Each must be found: a regular expression, or a phrase (case-insensitive, as written). */
  readonly evidence: readonly (RegExp | string)[]
}

/** The facts of the spec's §9 block (context-3.0.0 §9, its draft changes), one entry each. */
const FACTS: readonly Fact[] = [
  {
    fact: 'every tool result starts with its id in brackets (§1)',
    place: 'block',
    evidence: [/\btool results start\b/i, quoted(texts.id_bracket)],
  },
  {
    fact: "a read's bracket gives the path, the lines shown, the file's length and a sha (§1)",
    place: 'block',
    evidence: [/\breads\b/i, quoted(texts.read_bracket)],
  },
  {
    fact: 'an unchanged re-read is a stub naming the earlier result, which holds the content (§2)',
    place: 'block',
    evidence: [quoted(texts.stub, texts.stub.indexOf(',')), 'use that result'],
  },
  {
    fact: 'a stub means the content is already in front of the model: no second read (§2)',
    place: 'block',
    evidence: ["don't re-read"],
  },
  {
    fact: 'a listing or search repeated with the same result is "Same result as" (§6)',
    place: 'block',
    evidence: [quoted(texts.same_result, texts.same_result.length - 1)],
  },
  {
    fact: 'long output keeps its head and tail, the middle is replaced by the elided line (§3)',
    place: 'block',
    evidence: [quoted(texts.elided), 'replaces a middle'],
  },
  {
    fact: 'the elided middle is recallable: the elided line names the full output by id (§3, §4)',
    place: 'block',
    evidence: [/full output #id\]/],
  },
  {
    fact: 'recall shows a stored result by its id, in full (§4)',
    place: 'tool',
    evidence: [
      `"name":"${loop.proxy.recall.tool_name}"`,
      /"description":"[^"]*\bstored result #id in full\b/,
      '"required":["id"]',
    ],
  },
  {
    fact: 'recall takes id, offset and limit: a window of lines from a line on (§4)',
    place: 'tool',
    evidence: [
      '"id":{"type":"string"',
      '"offset":{"type":"integer"',
      '"limit":{"type":"integer"',
      'limit lines from offset',
    ],
  },
  {
    fact: 'an edit answers with the diff of the change, not the whole file (§5)',
    place: 'block',
    evidence: [/\bedits return a diff\b/i],
  },
  {
    fact: 'the earlier read with the diff applied is the file now (§5)',
    place: 'block',
    evidence: ['read + diff = file now'],
  },
  {
    fact: 'after a summary earlier results are gone from the context; recall still shows them (§7)',
    place: 'block',
    evidence: [/\bafter a summary\b/i, /\brecall old results\b/],
  },
  {
    fact: 'the summary comes with a table of the files read before it, with their ids (§7)',
    place: 'block',
    evidence: ['its table lists reads by id'],
  },
]

function found(evidence: RegExp | string, text: string): boolean {
  return typeof evidence === 'string'
    ? text.toLowerCase().includes(evidence.toLowerCase())
    : evidence.test(text)
}

function textOf(place: Place, shown: { block: string; tool: string }): string {
  return place === 'block' ? shown.block : shown.tool
}

/** The facts not said in full by this block and tool. */
function missing(shown: { block: string; tool: string }): string[] {
  return FACTS.filter(
    (fact) => !fact.evidence.every((evidence) => found(evidence, textOf(fact.place, shown))),
  ).map((fact) => fact.fact)
}

describe('what the model is told (§9)', () => {
  test('every fact of the spec’s block is said, in the block or the recall tool', () => {
    for (const fact of FACTS) {
      const text = textOf(fact.place, { block, tool: toolJson })
      for (const evidence of fact.evidence)
        assert.ok(
          found(evidence, text),
          `${fact.fact}: ${String(evidence)} not in the ${fact.place}`,
        )
    }
  })

  test('every line of the block carries a fact: without it one goes missing', () => {
    const lines = block.split('\n')
    assert.ok(lines.length >= 5)
    for (const [i, line] of lines.entries()) {
      const without = lines.filter((_, j) => j !== i).join('\n')
      assert.notDeepEqual(missing({ block: without, tool: toolJson }), [], `line ${i + 1}: ${line}`)
    }
  })

  test('the recall tool carries its facts: a shorter description or no offset loses them', () => {
    const { description } = tool.function!
    const shorter = toolJson.replace(description!, 'Show a stored result.')
    assert.ok(missing({ block, tool: shorter }).length > 0)
    const noOffset = structuredClone(tool) as {
      function: { parameters: { properties: Record<string, unknown> } }
    }
    delete noOffset.function.parameters.properties.offset
    assert.ok(missing({ block, tool: JSON.stringify(noOffset) }).length > 0)
  })

  test('every text the block quotes is written as the spec writes it', () => {
    const shown = [
      ...[...block.matchAll(/"([^"]+)"/g)].map((match) => match[1]!),
      ...[...block.matchAll(/\[#[^\]]*\]/g)].map((match) => match[0]),
    ]
    assert.ok(shown.length >= 5)
    const spec = Object.values(texts).flatMap(forms)
    for (const text of shown)
      assert.ok(
        spec.some((form) => form.test(text)),
        `"${text}" is not a spec text`,
      )
  })

  test(`the block and the recall tool cost at most ${MAX_TOKENS} o200k tokens together`, () => {
    // Appended to a client's system prompt: after a blank line.
    const appended = tokens('\n\n' + block)
    const chatTool = tokens(toolJson)
    assert.ok(
      appended + chatTool <= MAX_TOKENS,
      `block ${appended} + tool ${chatTool} = ${appended + chatTool} tokens`,
    )
    // Each door adds the same block and the tool in its own shape: none costs more.
    for (const door of DOORS) {
      const request: Json = { model: 'm', tools: [] }
      const withRecall = door.withRecall(request, block, tool)
      const added = (withRecall.tools as Json[]).at(-1)
      const cost = tokens('\n\n' + block) + tokens(JSON.stringify(added))
      assert.ok(cost <= MAX_TOKENS, `${door.name}: ${cost} tokens`)
    }
  })

  test('the same bytes on every load', () => {
    assert.equal(loadPromptBlock(), block)
    assert.equal(JSON.stringify(recallSetup(loadLoop().proxy.recall).tool), toolJson)
    assert.equal(block, block.trim(), 'no leading or trailing whitespace')
    assert.doesNotMatch(block + toolJson, /\r|\t|\u00a0/, 'plain spaces and newlines only')
  })
})
