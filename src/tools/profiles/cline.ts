import { defineProfile } from '../define-profile.js'

const PATH = ['path', 'absolutePath']

/** Cline classic (v3.89): every result starts `[tool for 'x'] Result:`. research/agents.md §5a. */
export const clineClassic = defineProfile({
  name: 'cline-classic',
  tools: [
    {
      kind: 'read',
      names: ['read_file'],
      path: PATH,
      range: [{ start: 'start_line', end: 'end_line' }],
    },
    { kind: 'edit', names: ['replace_in_file'], path: PATH, edit: [{ blocks: 'diff' }] },
    { kind: 'write', names: ['write_to_file'], path: PATH, content: ['content'] },
    { kind: 'patch', names: ['apply_patch'], patch: ['input'] },
    { kind: 'search', names: ['search_files'] },
    { kind: 'list', names: ['list_files'] },
    { kind: 'shell', names: ['execute_command'], command: ['command'] },
  ],
  envelopes: [
    {
      pattern:
        /^\[read_file for '[^\n]*'\] Result:\n(?<body>[\s\S]*?)(?:\n\n\((?:File has (?<total>\d+) lines total|Showing lines (?<start>\d+)-(?<end>\d+) of (?<of>\d+) total\.[^\n]*)\.?\))?$/,
    },
  ],
  shellEnvelopes: [
    {
      any: /^(?:\[execute_command for '[^\n]*'\] Result:\n)?Command /,
      success:
        /^(?:\[execute_command for '[^\n]*'\] Result:\n)?Command executed successfully \(exit code 0\)\.\nOutput:\n(?<body>[\s\S]*)$/,
    },
  ],
  success: [
    // The answer echoes the whole file; the diff says the same in a fraction of it.
    { pattern: /^(?:\[\w+ for '[^\n]*'\] Result:\n)?The content was successfully saved to / },
    {
      pattern:
        /^(?:\[\w+ for '[^\n]*'\] Result:\n)?The user made the following updates to your content:/,
    },
  ],
  failures: [
    /^(?:\[\w+ for '[^\n]*'\] Result:\n)?The tool execution failed/,
    /^(?:\[\w+ for '[^\n]*'\] Result:\n)?Error/,
  ],
  agentStubs: [
    /^(?:\[\w+ for '[^\n]*'\] Result:\n)?\[\[NOTE\] This file read has been removed/,
    /^(?:\[\w+ for '[^\n]*'\] Result:\n)?\[DUPLICATE READ\]/,
    /^\[outdated - see the latest file content\]/, // Cline 4
  ],
  compaction: [
    // The summary is the result of the model's summarize_task call.
    {
      role: 'tool',
      pattern:
        /^(?:\[\w+[^\n]*\] Result:\n)?\n?This session is being continued from a previous conversation that ran out of context\./,
    },
    { role: 'user', pattern: /^Context summary:\n\n/ }, // Cline 4
    { role: 'user', pattern: /^<SYSTEM_NOTICE>\nEarlier context was compacted\./ }, // Cline 4, basic
  ],
})
