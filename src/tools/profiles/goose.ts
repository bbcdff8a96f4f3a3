import { defineProfile } from '../define-profile.js'

const EDITOR = ['developer__text_editor', 'text_editor']

/** Goose: the classic text_editor and the 2026 developer tools: research/agents.md §10. */
export const goose = defineProfile({
  name: 'goose',
  tools: [
    // view: the model gets the whole file (an assistant-audience resource) whatever view_range
    // says; the range only shapes the user's numbered rendering. So the range is not read.
    {
      kind: 'read',
      names: EDITOR,
      when: { arg: 'command', equals: ['view'] },
      path: ['path'],
    },
    {
      kind: 'edit',
      names: EDITOR,
      when: { arg: 'command', equals: ['str_replace'] },
      path: ['path'],
      edit: [{ old: 'old_str', new: 'new_str' }],
    },
    {
      kind: 'write',
      names: EDITOR,
      when: { arg: 'command', equals: ['write'] },
      path: ['path'],
      content: ['file_text'],
    },
    // insert: new_str's lines go after line insert_line (0 = the top; negative ones are not read).
    {
      kind: 'edit',
      names: EDITOR,
      when: { arg: 'command', equals: ['insert'] },
      path: ['path'],
      edit: [{ insert: 'new_str', line: 'insert_line', base: 'after' }],
    },
    {
      kind: 'write',
      names: EDITOR,
      when: { arg: 'command', equals: ['undo_edit'] },
      path: ['path'],
    },
    {
      kind: 'edit',
      names: ['developer__edit'],
      path: ['path'],
      edit: [{ old: 'before', new: 'after' }],
    },
    { kind: 'write', names: ['developer__write'], path: ['path'], content: ['content'] },
    { kind: 'list', names: ['developer__tree'] },
    { kind: 'shell', names: ['developer__shell'], command: ['command'] },
  ],
  envelopes: [
    // text_editor view of a directory.
    { pattern: /^'[^\n]*' is a directory\. Contents:\n/, kind: 'list' },
  ],
  shellEnvelopes: [
    // 2026 shell.rs: a failed, timed-out or cut run ends with a note; nothing printed says so.
    {
      any: /\n\n(?:Command exited with code -?\d+|Command timed out after \d+ seconds|\[Output exceeded \d+ line limit [^\n]*\])$/,
    },
    { any: /^\(no output\)$/ },
  ],
  success: [
    { pattern: /^The file [^\n]+ has been edited, and the section now reads:\n/ },
    { pattern: /^Text has been inserted at line \d+ in [^\n]+\. The section now reads:\n/ },
    { pattern: /^Successfully wrote to [^\n]+$/ }, // says nothing of whether the file was new
    { pattern: /^Edited [^\n]+ \(\d+ lines? -> \d+ lines?\)$/ },
    { pattern: /^Created [^\n]+ \(\d+ lines?\)$/, created: true },
    { pattern: /^Wrote [^\n]+ \(\d+ lines?\)$/ },
  ],
  failures: [
    // providers/formats/openai.rs: a tool's error, for any tool.
    /^The tool call returned the following error:\n/,
    /^File '[^\n]*' is \d+ lines long, recommended to read in with view_range/,
  ],
  compaction: [
    {
      role: 'user',
      pattern: /^Your context was compacted\. The previous message contains a summary/,
      summary: 'previous',
    },
    {
      role: 'user',
      pattern:
        /^The previous message contains a summary that was prepared because a context limit was reached/,
      summary: 'previous',
    },
  ],
})
