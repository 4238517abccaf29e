// CodeMirror 6 over one file, with the highlighting its name calls for. The editor is made once
// and its document swapped when another file is shown, so undo history stays per mount only.
import { useEffect, useRef } from 'preact/hooks'
import { basicSetup } from 'codemirror'
import { EditorView, keymap } from '@codemirror/view'
import { Compartment, EditorState } from '@codemirror/state'
import type { Extension } from '@codemirror/state'
import { indentWithTab } from '@codemirror/commands'
import { StreamLanguage } from '@codemirror/language'
import { javascript } from '@codemirror/lang-javascript'
import { go } from '@codemirror/lang-go'
import { rust } from '@codemirror/lang-rust'
import { toml } from '@codemirror/legacy-modes/mode/toml'

function languageFor (file: string): Extension {
  const ext = file.slice(file.lastIndexOf('.') + 1).toLowerCase()
  switch (ext) {
    case 'js': case 'mjs': case 'cjs': return javascript()
    case 'jsx': return javascript({ jsx: true })
    case 'ts': case 'mts': case 'cts': return javascript({ typescript: true })
    case 'tsx': return javascript({ typescript: true, jsx: true })
    case 'go': return go()
    case 'rs': return rust()
    case 'toml': return StreamLanguage.define(toml)
    default: return []
  }
}

const labelFor = (file: string): Extension => EditorView.contentAttributes.of({ 'aria-label': `Contents of ${file}` })

export function Editor ({ file, text, onChange }: { file: string; text: string; onChange: (text: string) => void }) {
  const host = useRef<HTMLDivElement>(null)
  const view = useRef<EditorView | null>(null)
  const language = useRef(new Compartment())
  const label = useRef(new Compartment())
  const changed = useRef(onChange)
  changed.current = onChange

  useEffect(() => {
    if (host.current === null) return
    view.current = new EditorView({
      parent: host.current,
      state: EditorState.create({
        doc: text,
        extensions: [
          basicSetup,
          // Tab indents; Escape then Tab leaves the editor (CodeMirror's own escape hatch).
          keymap.of([indentWithTab]),
          language.current.of(languageFor(file)),
          label.current.of(labelFor(file)),
          EditorView.updateListener.of((update) => { if (update.docChanged) changed.current(update.state.doc.toString()) }),
        ],
      }),
    })
    return () => view.current?.destroy()
  }, [])

  useEffect(() => {
    const v = view.current
    if (v === null) return
    v.dispatch({
      effects: [language.current.reconfigure(languageFor(file)), label.current.reconfigure(labelFor(file))],
      ...(v.state.doc.toString() === text ? {} : { changes: { from: 0, to: v.state.doc.length, insert: text } }),
    })
  }, [file, text])

  return <div class="editor" ref={host} data-file={file} />
}
