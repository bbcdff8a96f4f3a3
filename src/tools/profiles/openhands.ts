import { defineProfile } from '../define-profile.js'

const EDITORS = ['str_replace_editor', 'file_editor']

/** OpenHands V0 (str_replace_editor, execute_bash) and V1 (file_editor, terminal): research/agents.md §9. */
export const openHands = defineProfile({
  name: 'openhands',
  tools: [
    {
      kind: 'read',
      names: EDITORS,
      when: { arg: 'command', equals: ['view'] },
      path: ['path'],
      range: [{ pair: 'view_range' }],
    },
    {
      kind: 'edit',
      names: EDITORS,
      when: { arg: 'command', equals: ['str_replace'] },
      path: ['path'],
      edit: [{ old: 'old_str', new: 'new_str' }],
    },
    {
      kind: 'write',
      names: EDITORS,
      when: { arg: 'command', equals: ['create'] },
      path: ['path'],
      content: ['file_text'],
    },
    {
      kind: 'write',
      names: EDITORS,
      when: { arg: 'command', equals: ['insert', 'undo_edit'] },
      path: ['path'],
    },
    { kind: 'patch', names: ['apply_patch'], patch: ['patch', 'input'] },
    { kind: 'shell', names: ['execute_bash', 'terminal'], command: ['command'] },
    { kind: 'glob', names: ['glob'] },
    { kind: 'grep', names: ['grep'] },
  ],
  envelopes: [
    { pattern: /^Here's the result of running `cat -n` on [^\n]+:\n(?<body>[\s\S]*?)\n*$/ },
  ],
  success: [
    { pattern: /^The file [^\n]+ has been edited\. Here's the result of running `cat -n`/ },
    { pattern: /^File created successfully at: [^\n]+$/, created: true },
  ],
  failures: [/^ERROR:/, /^Invalid `path` parameter/],
  compaction: [{ role: 'user', pattern: /^USER_CONTEXT:/ }],
})
