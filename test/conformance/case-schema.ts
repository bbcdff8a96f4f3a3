import { z } from 'zod'

/** A text in a case: a string, or pieces joined by "\n" (generated lines keep cases short). */
const Piece = z.union([
  z.string(),
  z.strictObject({ gen: z.string(), from: z.int(), to: z.int() }),
  z.strictObject({ repeat: z.string(), count: z.int().nonnegative() }),
])
export const TextSpec = z.union([z.string(), z.array(Piece)])
export type TextSpec = z.infer<typeof TextSpec>

/** File facts: given directly (sha may be a prefix, padded with zeros), or computed from content. */
const FileSpec = z.union([
  z.strictObject({ lines: z.int().nonnegative(), sha: z.string().regex(/^[0-9a-f]{1,64}$/) }),
  z.strictObject({ content: TextSpec }),
])

const Expect = { expect: TextSpec }
const path = { path: z.string(), abs: z.string().optional() }
const Change = z.strictObject({
  ...path,
  before: TextSpec.nullable(),
  after: TextSpec.nullable(),
  sha: z
    .string()
    .regex(/^[0-9a-f]{1,64}$/)
    .optional(),
})

export const Step = z.discriminatedUnion('op', [
  z.strictObject({
    op: z.literal('read'),
    ...path,
    lines: z.tuple([z.int(), z.int()]).optional(),
    file: FileSpec.optional(),
    blind: z.strictObject({ total: z.int().nonnegative().optional() }).optional(),
    result: TextSpec,
    ...Expect,
  }),
  z.strictObject({
    op: z.literal('edit'),
    ...Change.shape,
    note: z.string().optional(),
    result: TextSpec.optional(),
    ...Expect,
  }),
  z.strictObject({
    op: z.literal('patch'),
    files: z.array(Change),
    note: z.string().optional(),
    result: TextSpec.optional(),
    ...Expect,
  }),
  z.strictObject({
    op: z.enum(['list', 'glob', 'grep', 'search']),
    name: z.string().optional(),
    args: z.unknown(),
    result: TextSpec,
    ...Expect,
  }),
  z.strictObject({ op: z.literal('other'), name: z.string(), result: TextSpec, ...Expect }),
  z.strictObject({
    op: z.literal('recall'),
    args: z.strictObject({
      id: z.string(),
      offset: z.number().optional(),
      limit: z.number().optional(),
    }),
    ...Expect,
  }),
  z.strictObject({ op: z.literal('reply') }),
  z.strictObject({ op: z.literal('compaction'), expect: TextSpec.nullable() }),
  z.strictObject({ op: z.literal('rewind'), keep: z.int().nonnegative() }),
  /** The client rewrote the result of step `at` (pruned it): it now sends `text` there. */
  z.strictObject({ op: z.literal('prune'), at: z.int().nonnegative(), text: z.string() }),
  z.strictObject({ op: z.literal('advance'), to: z.string().regex(/^#[0-9a-f]+$/) }),
  z.strictObject({ op: z.literal('request'), expect: z.array(TextSpec) }),
])
export type Step = z.infer<typeof Step>

export const Case = z.strictObject({
  id: z.string().regex(/^[a-z0-9-]+$/),
  section: z.string().regex(/^§[1-9]$/),
  description: z.string(),
  comment: z.string().optional(),
  steps: z.array(Step).min(1),
})
export type Case = z.infer<typeof Case>

export const Suite = z.strictObject({
  spec: z.string(),
  comment: z.string().optional(),
  cases: z.array(Case),
})
