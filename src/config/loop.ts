import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { LembasError } from '../errors.js'
import { LoopSchema, type Loop } from './loop-schema.js'

/** The package root: loop.json and prompts/ sit beside src/ (and beside dist/ once built). */
export function packageRoot(): string {
  const here = fileURLToPath(new URL('.', import.meta.url))
  // src/config/ in development, dist/src/config/ when built.
  return here.includes('/dist/src/')
    ? fileURLToPath(new URL('../../../', import.meta.url))
    : fileURLToPath(new URL('../../', import.meta.url))
}

/** Parses loop.json; a bad file stops start-up with a message naming the field. */
export function parseLoop(text: string, source = 'loop.json'): Loop {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new LembasError(
      'config_invalid',
      `${source}: not valid JSON (${(error as Error).message})`,
    )
  }
  const parsed = LoopSchema.safeParse(json)
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${source}: ${issue.path.join('.') || '(root)'}: ${issue.message}`,
    )
    throw new LembasError('config_invalid', problems.join('\n'))
  }
  return deepFreeze(parsed.data)
}

export function loadLoop(path = packageRoot() + 'loop.json'): Loop {
  return parseLoop(readFileSync(path, 'utf8'), path)
}

/** What the model is told, loaded once: the same bytes in every request. */
export function loadPromptBlock(path = packageRoot() + 'prompts/blocks/context.md'): string {
  return readFileSync(path, 'utf8').replace(/\s+$/, '')
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner)
    Object.freeze(value)
  }
  return value
}
