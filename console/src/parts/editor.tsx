// CodeMirror 6 over one file, with the highlighting its name calls for.
import { useEffect, useRef } from 'preact/hooks'
import { minimalSetup } from 'codemirror'
import {
  drawSelection,
  EditorView,
  highlightActiveLine,
  highlightActiveLineGutter,
  keymap,
  lineNumbers,
} from '@codemirror/view'
import { EditorState } from '@codemirror/state'
import type { Extension } from '@codemirror/state'
import { indentWithTab } from '@codemirror/commands'
import { bracketMatching, foldGutter, indentOnInput, StreamLanguage } from '@codemirror/language'
import { javascript } from '@codemirror/lang-javascript'
import { go } from '@codemirror/lang-go'
import { rust } from '@codemirror/lang-rust'
import { toml } from '@codemirror/legacy-modes/mode/toml'

function languageFor(file: string): Extension {
  const ext = file.slice(file.lastIndexOf('.') + 1).toLowerCase()
  switch (ext) {
    case 'js':
    case 'mjs':
    case 'cjs':
      return javascript()
    case 'jsx':
      return javascript({ jsx: true })
    case 'ts':
    case 'mts':
    case 'cts':
      return javascript({ typescript: true })
    case 'tsx':
      return javascript({ typescript: true, jsx: true })
    case 'go':
      return go()
    case 'rs':
      return rust()
    case 'toml':
      return StreamLanguage.define(toml)
    default:
      return []
  }
}

/**
 * Uncontrolled: `text` is read once, when the editor is made; every change goes out through
 * `onChange`. Show another file or a reloaded map by mounting a new editor (a new `key`).
 */
export function Editor({
  file,
  text,
  readOnly = false,
  onChange,
}: {
  file: string
  text: string
  readOnly?: boolean
  onChange: (text: string) => void
}) {
  const host = useRef<HTMLDivElement>(null)
  const changed = useRef(onChange)
  changed.current = onChange

  useEffect(() => {
    if (host.current === null) return
    const view = new EditorView({
      parent: host.current,
      state: EditorState.create({
        doc: text,
        extensions: [
          // basicSetup without autocompletion, whose pop-up a keyboard user must dismiss.
          minimalSetup,
          lineNumbers(),
          highlightActiveLineGutter(),
          highlightActiveLine(),
          foldGutter(),
          drawSelection(),
          indentOnInput(),
          bracketMatching(),
          // Tab indents; Escape then Tab leaves the editor (CodeMirror's own escape hatch).
          keymap.of([indentWithTab]),
          languageFor(file),
          // Still focusable and selectable (to read and copy), but typing changes nothing.
          EditorState.readOnly.of(readOnly),
          // A tabindex makes the text focusable in the accessibility tree's sense too (a
          // contenteditable alone is not to axe), so a long line's scroller is keyboard-reachable.
          EditorView.contentAttributes.of({ 'aria-label': `Contents of ${file}`, tabindex: '0' }),
          EditorView.updateListener.of((update) => {
            if (update.docChanged) changed.current(update.state.doc.toString())
          }),
        ],
      }),
    })
    return () => view.destroy()
  }, [])

  return <div class="editor" ref={host} data-file={file} />
}
