// The functions and, for the one selected, its source: the file map in the editor. Files are
// added, renamed and deleted here and only reach the server on Save, which sends the whole map
// (the API replaces the map as one). Upload and download move the map as a .tar.gz.
import { useEffect, useState } from 'preact/hooks'
import { getJson, messageOf, send, sendJson } from '../api/client'
import type { Application, Source } from '../api/types'
import { useAccess } from './access'
import type { Editor as EditorComponent } from './editor'
import { FileActions } from './file-actions'
import { FunctionsSection } from './functions'
import { SourceFiles } from './source-files'
import { ErrorText, Loading, Notice } from './status'

type Fn = Application['functions'][number]

// CodeMirror is most of the console's code: loaded (as its own cached chunk) only when a
// source is first shown, so the applications list starts without it.
let editorModule: Promise<typeof EditorComponent> | null = null
function useEditor(): typeof EditorComponent | null {
  const [editor, setEditor] = useState<typeof EditorComponent | null>(null)
  useEffect(() => {
    let live = true
    editorModule ??= import('./editor').then((m) => m.Editor)
    editorModule.then(
      (e) => {
        if (live) setEditor(() => e)
      },
      () => {
        editorModule = null
      },
    )
    return () => {
      live = false
    }
  }, [])
  return editor
}

export function CodePanel({
  app,
  selected,
  onSelect,
  onChanged,
}: {
  app: Application
  selected: Fn | null
  onSelect: (id: string) => void
  onChanged: () => void
}) {
  return (
    <>
      <FunctionsSection app={app} selected={selected} onSelect={onSelect} onChanged={onChanged} />
      {selected !== null && <SourceEditor key={selected.id} appId={app.id} fn={selected} language={app.language} />}
    </>
  )
}

function SourceEditor({ appId, fn, language }: { appId: string; fn: Fn; language: string }) {
  const base = `/applications/${appId}/functions/${fn.id}`
  const [files, setFiles] = useState<Record<string, string> | null>(null)
  const [saved, setSaved] = useState<Record<string, string>>({})
  const [current, setCurrent] = useState<string | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [notice, setNotice] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  // A new map from the server (load, save, upload) remounts the editor with it.
  const [version, setVersion] = useState(0)
  const Editor = useEditor()
  // A read-only caller reads and downloads the source; nothing here changes it.
  const { canWrite } = useAccess()

  const accept = (source: Source, message: string | null): void => {
    setFiles(source.files)
    setSaved(source.files)
    setCurrent((c) => (c !== null && c in source.files ? c : (Object.keys(source.files).sort()[0] ?? null)))
    setNotice(message)
    setVersion((v) => v + 1)
  }

  useEffect(() => {
    getJson<Source>(`${base}/source`).then(
      (s) => accept(s, null),
      (e: unknown) => setError(messageOf(e)),
    )
  }, [base])

  if (files === null) return error !== null ? <ErrorText message={error} /> : <Loading what="the source" />
  const dirty =
    JSON.stringify(files) !== JSON.stringify(saved) || Object.keys(files).length !== Object.keys(saved).length
  const run = (action: () => Promise<void>): void => {
    setBusy(true)
    setError(null)
    setNotice(null)
    action()
      .catch((e: unknown) => setError(messageOf(e)))
      .finally(() => setBusy(false))
  }

  return (
    <section aria-labelledby="source">
      <h2 id="source">
        Source of {fn.name} {dirty && <span class="warn small">(unsaved changes)</span>}
      </h2>
      <div class="row">
        {canWrite && (
          <button
            type="button"
            class="primary"
            disabled={busy || !dirty}
            onClick={() =>
              run(async () => {
                const source = await sendJson<Source>('PUT', `${base}/source`, { files })
                if (source !== null) accept(source, 'Saved.')
              })
            }
          >
            Save
          </button>
        )}
        <button
          type="button"
          disabled={busy}
          onClick={() =>
            run(async () => {
              const blob = await (await send(`${base}/source.tar.gz`)).blob()
              const link = document.createElement('a')
              link.href = URL.createObjectURL(blob)
              link.download = `${fn.name}.tar.gz`
              link.click()
              setTimeout(() => URL.revokeObjectURL(link.href), 10_000)
            })
          }
        >
          Download .tar.gz
        </button>
        {canWrite && (
          <label class="button">
            Upload .tar.gz
            <input
              type="file"
              class="visually-hidden"
              accept=".tar.gz,.tgz,application/gzip"
              disabled={busy}
              onChange={(e) => {
                const file = e.currentTarget.files?.[0]
                e.currentTarget.value = ''
                if (file === undefined) return
                run(async () => {
                  const form = new FormData()
                  form.append('archive', file)
                  const source = (await (
                    await send(`${base}/source.tar.gz`, { method: 'POST', body: form })
                  ).json()) as Source
                  accept(source, `Uploaded ${file.name}: ${Object.keys(source.files).length} files.`)
                })
              }}
            />
          </label>
        )}
      </div>
      {notice !== null && <Notice>{notice}</Notice>}
      {error !== null && <ErrorText message={error} />}
      <div class="source">
        <SourceFiles
          files={files}
          saved={saved}
          current={current}
          language={language}
          canWrite={canWrite}
          onPick={setCurrent}
          onAdd={(name) => {
            setFiles({ ...files, [name]: '' })
            setCurrent(name)
          }}
          onError={setError}
        />
        <div class="current">
          {current !== null && files[current] !== undefined && (
            <>
              {canWrite && (
                <FileActions
                  key={current}
                  current={current}
                  files={files}
                  onRename={(to) => {
                    const next: Record<string, string> = {}
                    for (const [name, text] of Object.entries(files)) next[name === current ? to : name] = text
                    setFiles(next)
                    setCurrent(to)
                  }}
                  onDelete={() => {
                    const { [current]: _gone, ...rest } = files
                    setFiles(rest)
                    setCurrent(Object.keys(rest).sort()[0] ?? null)
                  }}
                  onError={setError}
                />
              )}
              {Editor === null && <Loading what="the editor" />}
              {Editor !== null && (
                <Editor
                  key={`${version}:${current}`}
                  readOnly={!canWrite}
                  file={current}
                  text={files[current] ?? ''}
                  onChange={(text) => setFiles((f) => (f === null ? f : { ...f, [current]: text }))}
                />
              )}
            </>
          )}
        </div>
      </div>
    </section>
  )
}
