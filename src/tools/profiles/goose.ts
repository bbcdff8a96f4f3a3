import { defineProfile } from '../define-profile.js'

const EDITOR = ['developer__text_editor', 'text_editor']

/** Goose: the classic text_editor and the 2026 developer tools: research/agents.md §10. */
export const goose = defineProfile({
  name: 'goose',
  tools: [
    {
      kind: 'read',
      names: EDITOR,
      when: { arg: 'command', equals: ['view'] },
      path: ['path'],
      range: [{ pair: 'view_range' }],
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
    {
      kind: 'write',
      names: EDITOR,
      when: { arg: 'command', equals: ['insert', 'undo_edit'] },
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
