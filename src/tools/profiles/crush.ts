import { defineProfile } from '../define-profile.js'

/** Crush (charmbracelet): research/agents.md §11, and test/fixtures/agents/crush. */
export const crush = defineProfile({
  name: 'crush',
  tools: [
    {
      kind: 'read',
      names: ['view'],
      path: ['file_path'],
      range: [{ offset: 'offset', limit: 'limit', base: 'schema' }],
    },
    {
      kind: 'edit',
      names: ['edit'],
      path: ['file_path'],
      edit: [{ old: 'old_string', new: 'new_string', all: 'replace_all' }],
    },
    {
      kind: 'edit',
      names: ['multiedit'],
      path: ['file_path'],
      edit: [{ list: 'edits', old: 'old_string', new: 'new_string', all: 'replace_all' }],
    },
    { kind: 'write', names: ['write'], path: ['file_path'], content: ['content'] },
    { kind: 'list', names: ['ls'] },
    { kind: 'glob', names: ['glob'] },
    { kind: 'grep', names: ['grep'] },
    { kind: 'shell', names: ['bash'], command: ['command'], dir: ['working_dir'] },
  ],
  envelopes: [
    // view.go: LSP diagnostics may follow the closing tag.
    {
      pattern:
        /^<file>\n(?<body>[\s\S]*?)\n*(?:\(File has more lines[^\n]*\)\n)?<\/file>(?:\n[\s\S]*)?$/,
    },
  ],
  shellEnvelopes: [
    // bash.go: a run that printed nothing (a file's lines would carry the <cwd> line).
    { any: /^no output$/ },
    // bash.go: output, then "\n" + stderr and "Exit code N" (or an abort) when it failed, then
    // the working directory. A cut middle ("... [N lines truncated] ...") is not a file's lines.
    {
      any: /\n\n<cwd>[^\n]*<\/cwd>$/,
      success:
        /^(?![\s\S]*\n(?:Exit code \d+|Command was aborted before completion)\n\n<cwd>[^\n]*<\/cwd>$)(?![\s\S]*\n\n\.\.\. \[\d+ lines truncated\] \.\.\.\n\n)(?<body>[\s\S]*)\n\n<cwd>[^\n]*<\/cwd>$/,
    },
  ],
  success: [
    // edit.go, multiedit.go, write.go: LSP diagnostics may follow the closing tag.
    {
      pattern:
        /^<result>\n(?:Content replaced in file|Content deleted from file|Applied \d+ edits to file|File successfully written): [^\n]+\n<\/result>\n*(?<note>[\s\S]*)$/,
    },
    { pattern: /^<result>\nFile created: [^\n]+\n<\/result>\n*(?<note>[\s\S]*)$/, created: true },
    // Some edits of a multi-edit failed: the file changed, but not as the call says.
    { pattern: /^<result>\nApplied \d+ of \d+ edits to file: /, opaque: true },
  ],
  failures: [
    /^File not found: /,
    /^Path is a directory, not a file: /,
    /^File content is not valid UTF-8/,
  ],
  compaction: [{ role: 'user', pattern: /^## Current State\n[\s\S]*\n## Exact Next Steps\n/ }],
})
