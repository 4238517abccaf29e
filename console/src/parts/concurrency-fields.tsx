// The Settings tab's share of the shared worker: the application's requests running at once
// and waiting, each at most the platform's value (GET /policy), which an empty field takes.
import type { ResourcePolicy } from '../api/types'
import type { ConcurrencyField } from './settings-draft'
import { CONCURRENCY_FIELDS } from './settings-draft'

const LABELS: Record<ConcurrencyField, string> = {
  maxRunning: 'Requests running at once',
  maxQueued: 'Requests waiting',
}

type Props = {
  values: Record<ConcurrencyField, string>
  policy: ResourcePolicy
  readOnly: boolean
  marks: (field: string) => Record<string, unknown>
  onChange: (values: Record<ConcurrencyField, string>) => void
}

export function ConcurrencyFields({ values, policy, readOnly, marks, onChange }: Props) {
  return (
    <fieldset>
      <legend>Requests</legend>
      <p class="muted small">
        On one machine, the application's share of the worker every application runs in: past both, its requests get
        429. An empty field takes the platform's value. A cluster keeps these but does not apply them.
      </p>
      <div class="fields top">
        {CONCURRENCY_FIELDS.map((field) => (
          <label key={field}>
            {LABELS[field]}
            <input
              name={field}
              inputMode="numeric"
              value={values[field]}
              placeholder={`the platform's: ${policy.concurrency[field]}`}
              disabled={readOnly}
              autoComplete="off"
              {...marks(`concurrency.${field}`)}
              onInput={(e) => onChange({ ...values, [field]: e.currentTarget.value })}
            />
            <span class="muted small">at most {policy.concurrency[field]}</span>
          </label>
        ))}
      </div>
    </fieldset>
  )
}
