// The variables table of the Settings tab: name -> a plain value, a secret, or a reference to
// an existing Secret (name, key). A stored secret is never shown, only said to be set, with a
// way to replace it; what the user types for a secret is a password field's value, which never
// becomes part of the page's HTML.
import type { VariableKind, VariableRow } from './settings-draft'
import { emptyRow } from './settings-draft'

const KINDS: Array<[VariableKind, string]> = [
  ['value', 'value'],
  ['secret', 'secret'],
  ['secretRef', 'existing Secret'],
]

type Props = {
  rows: VariableRow[]
  onChange: (rows: VariableRow[]) => void
  readOnly: boolean
  invalid: string | null
  errorId: string
}

export function VariablesTable({ rows, onChange, readOnly, invalid, errorId }: Props) {
  const update = (key: number, change: Partial<VariableRow>) =>
    onChange(rows.map((row) => (row.key === key ? { ...row, ...change } : row)))
  return (
    <fieldset>
      <legend>Variables</legend>
      <p class="muted small">
        Every function reads them through Spin's variables interface. Names: lowercase letters, digits and "_", starting
        with a letter.
      </p>
      {rows.length === 0 && <p class="muted">No variables.</p>}
      {rows.length > 0 && (
        <table class="variables">
          <caption class="visually-hidden">Variables</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Kind</th>
              <th scope="col">Value</th>
              {!readOnly && (
                <th scope="col">
                  <span class="visually-hidden">Remove</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => {
              const label = row.name === '' ? 'the new variable' : row.name
              // "variables: ... is not a name" is about a name typed here, not a stored one.
              const bad = invalid === `variables.${row.name.trim()}` || (invalid === 'variables' && row.isNew)
              const marks = bad ? { 'aria-invalid': true, 'aria-describedby': errorId } : {}
              return (
                <tr key={row.key} data-variable={row.name}>
                  <td data-label="Name">
                    {row.isNew ? (
                      <input
                        aria-label="Variable name"
                        value={row.name}
                        disabled={readOnly}
                        autoComplete="off"
                        spellcheck={false}
                        {...marks}
                        onInput={(e) => update(row.key, { name: e.currentTarget.value })}
                      />
                    ) : (
                      <code>{row.name}</code>
                    )}
                  </td>
                  <td data-label="Kind">
                    <select
                      aria-label={`Kind of ${label}`}
                      value={row.kind}
                      disabled={readOnly}
                      onChange={(e) =>
                        update(row.key, { kind: e.currentTarget.value as VariableKind, value: '', replacing: false })
                      }
                    >
                      {KINDS.map(([kind, text]) => (
                        <option key={kind} value={kind}>
                          {text}
                        </option>
                      ))}
                    </select>
                  </td>
                  <td data-label="Value">
                    <ValueCell
                      row={row}
                      label={label}
                      readOnly={readOnly}
                      marks={marks}
                      update={(change) => update(row.key, change)}
                    />
                  </td>
                  {!readOnly && (
                    <td class="actions">
                      <button
                        type="button"
                        class="danger"
                        onClick={() => onChange(rows.filter((r) => r.key !== row.key))}
                      >
                        Remove<span class="visually-hidden"> {label}</span>
                      </button>
                    </td>
                  )}
                </tr>
              )
            })}
          </tbody>
        </table>
      )}
      {!readOnly && (
        <button type="button" onClick={() => onChange([...rows, emptyRow()])}>
          Add variable
        </button>
      )}
    </fieldset>
  )
}

type CellProps = {
  row: VariableRow
  label: string
  readOnly: boolean
  marks: Record<string, unknown>
  update: (change: Partial<VariableRow>) => void
}

function ValueCell({ row, label, readOnly, marks, update }: CellProps) {
  if (row.kind === 'value') {
    return (
      <input
        aria-label={`Value of ${label}`}
        value={row.value}
        disabled={readOnly}
        autoComplete="off"
        {...marks}
        onInput={(e) => update({ value: e.currentTarget.value })}
      />
    )
  }
  if (row.kind === 'secretRef') {
    return (
      <span class="inline-fields">
        <label class="small">
          Secret{' '}
          <input
            aria-label={`Secret name of ${label}`}
            value={row.refName}
            disabled={readOnly}
            autoComplete="off"
            {...marks}
            onInput={(e) => update({ refName: e.currentTarget.value })}
          />
        </label>
        <label class="small">
          key{' '}
          <input
            aria-label={`Secret key of ${label}`}
            value={row.refKey}
            disabled={readOnly}
            autoComplete="off"
            {...marks}
            onInput={(e) => update({ refKey: e.currentTarget.value })}
          />
        </label>
      </span>
    )
  }
  if (row.stored && !row.replacing) {
    return (
      <span class="inline-fields">
        <span class="ok" data-testid="secret-set">
          secret, set
        </span>
        {!readOnly && (
          <button type="button" onClick={() => update({ replacing: true, value: '' })}>
            Replace<span class="visually-hidden"> the secret {label}</span>
          </button>
        )}
      </span>
    )
  }
  return (
    <span class="inline-fields">
      <input
        type="password"
        aria-label={`Secret value of ${label}`}
        value={row.value}
        disabled={readOnly}
        autoComplete="new-password"
        {...marks}
        onInput={(e) => update({ value: e.currentTarget.value })}
      />
      {row.stored && (
        <button type="button" onClick={() => update({ replacing: false, value: '' })}>
          Keep the stored one
        </button>
      )}
    </span>
  )
}
