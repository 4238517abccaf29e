// The Settings tab: description, replicas or autoscaling, CPU and memory under the platform's
// policy (GET /policy), the application's share of the worker's requests, and variables. Save sends one PATCH with only what changed; the API's
// 400 is shown in its own words beside the form, and the field it names is marked. A read-only
// caller sees every setting but no control that would change one.
import { useState } from 'preact/hooks'
import { getJson, messageOf, sendJson } from '../api/client'
import type { Application, ResourcePolicy } from '../api/types'
import { useAccess } from './access'
import { ConcurrencyFields } from './concurrency-fields'
import type { Draft, ResourceField } from './settings-draft'
import { draftOf, fieldOf, patchOf, RESOURCE_FIELDS } from './settings-draft'
import { ErrorText, Loading } from './status'
import { useLoad } from './use-load'
import { VariablesTable } from './variables'

const ERROR_ID = 'settings-error'

const RESOURCE_LABELS: Record<ResourceField, string> = {
  cpuRequest: 'CPU request',
  cpuLimit: 'CPU limit',
  memoryRequest: 'Memory request',
  memoryLimit: 'Memory limit',
}

export function SettingsPanel({ app, onChanged }: { app: Application; onChanged: () => void }) {
  const policy = useLoad(() => getJson<ResourcePolicy>('/policy'), [])
  const [saved, setSaved] = useState(false)
  if (policy.data === null)
    return policy.error !== null ? <ErrorText message={policy.error} /> : <Loading what="the platform's policy" />
  // A new form whenever the stored settings change (after a save), so it shows what is stored.
  const stored = JSON.stringify([
    app.description,
    app.replicas,
    app.autoscaling,
    app.resources,
    app.concurrency,
    app.variables,
  ])
  return (
    <SettingsForm
      key={stored}
      app={app}
      policy={policy.data}
      saved={saved}
      onSaved={(done) => {
        setSaved(done)
        if (done) onChanged()
      }}
    />
  )
}

type FormProps = { app: Application; policy: ResourcePolicy; saved: boolean; onSaved: (done: boolean) => void }

function SettingsForm({ app, policy, saved, onSaved }: FormProps) {
  const [draft, setDraft] = useState<Draft>(() => draftOf(app, policy))
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const { canWrite } = useAccess()
  const readOnly = !canWrite
  const invalid = error === null ? null : fieldOf(error)
  const edit = (change: Partial<Draft>) => {
    setDraft({ ...draft, ...change })
    onSaved(false)
  }
  // The field the API's 400 names: marked invalid and pointed at the sentence.
  const marks = (field: string) =>
    invalid === field || (invalid !== null && field.startsWith(`${invalid}.`))
      ? { 'aria-invalid': true, 'aria-describedby': ERROR_ID }
      : {}

  return (
    <form
      class="settings"
      aria-labelledby="settings"
      onSubmit={(event) => {
        event.preventDefault()
        setError(null)
        let patch
        try {
          patch = patchOf(app, draft, policy)
        } catch (e) {
          setError(messageOf(e))
          return
        }
        if (Object.keys(patch).length === 0) {
          onSaved(true)
          return
        }
        setBusy(true)
        sendJson<Application>('PATCH', `/applications/${app.id}`, patch)
          .then(
            () => onSaved(true),
            (e: unknown) => setError(messageOf(e)),
          )
          .finally(() => setBusy(false))
      }}
    >
      <h2 id="settings">Settings</h2>
      <label>
        Description{' '}
        <textarea
          name="description"
          rows={2}
          value={draft.description}
          disabled={readOnly}
          {...marks('description')}
          onInput={(e) => edit({ description: e.currentTarget.value })}
        />
      </label>

      <fieldset>
        <legend>Scaling</legend>
        <div class="fields">
          <label>
            Replicas{' '}
            <input
              name="replicas"
              type="number"
              min={1}
              max={100}
              value={draft.replicas}
              disabled={readOnly || draft.autoscaling}
              {...marks('replicas')}
              onInput={(e) => edit({ replicas: e.currentTarget.value })}
            />
          </label>
          <label class="check">
            <input
              type="checkbox"
              name="autoscaling"
              checked={draft.autoscaling}
              disabled={readOnly}
              {...marks('autoscaling')}
              onChange={(e) => edit({ autoscaling: e.currentTarget.checked })}
            />{' '}
            Autoscaling on CPU
          </label>
        </div>
        {draft.autoscaling && (
          <div class="fields">
            <label>
              Minimum replicas{' '}
              <input
                name="min-replicas"
                type="number"
                min={1}
                max={100}
                value={draft.minReplicas}
                disabled={readOnly}
                {...marks('autoscaling.minReplicas')}
                onInput={(e) => edit({ minReplicas: e.currentTarget.value })}
              />
            </label>
            <label>
              Maximum replicas{' '}
              <input
                name="max-replicas"
                type="number"
                min={1}
                max={100}
                value={draft.maxReplicas}
                disabled={readOnly}
                {...marks('autoscaling.maxReplicas')}
                onInput={(e) => edit({ maxReplicas: e.currentTarget.value })}
              />
            </label>
            <label>
              Target CPU %{' '}
              <input
                name="target-cpu"
                type="number"
                min={1}
                max={100}
                value={draft.targetCpuPercent}
                disabled={readOnly}
                {...marks('autoscaling.targetCpuPercent')}
                onInput={(e) => edit({ targetCpuPercent: e.currentTarget.value })}
              />
            </label>
          </div>
        )}
        <p class="muted small">
          {draft.autoscaling
            ? 'Replicas follow CPU use, measured against the CPU request; the replica count above is then ignored.'
            : 'A fixed number of replicas.'}
        </p>
      </fieldset>

      <fieldset>
        <legend>CPU and memory</legend>
        <p class="muted small">{policyNote(policy)}</p>
        <div class="fields top">
          {RESOURCE_FIELDS.map((field) => {
            const forced = policy.mode === 'forced'
            const platform = policy[field]
            return (
              <label key={field}>
                {RESOURCE_LABELS[field]}
                <input
                  name={field}
                  value={forced ? (platform ?? '') : draft.resources[field]}
                  placeholder={
                    forced
                      ? 'none'
                      : platform !== null
                        ? `the platform's: ${platform}`
                        : field.startsWith('cpu')
                          ? 'e.g. 500m'
                          : 'e.g. 256Mi'
                  }
                  readOnly={forced}
                  disabled={readOnly}
                  autoComplete="off"
                  spellcheck={false}
                  {...marks(`resources.${field}`)}
                  onInput={(e) => edit({ resources: { ...draft.resources, [field]: e.currentTarget.value } })}
                />
                {platform !== null && (
                  <span class="muted small">
                    {forced
                      ? 'set by the platform'
                      : policy.mode === 'max'
                        ? `at most ${platform}`
                        : `default ${platform}`}
                  </span>
                )}
              </label>
            )
          })}
        </div>
      </fieldset>

      <ConcurrencyFields
        values={draft.concurrency}
        policy={policy}
        readOnly={readOnly}
        marks={marks}
        onChange={(concurrency) => edit({ concurrency })}
      />

      <VariablesTable
        rows={draft.variables}
        readOnly={readOnly}
        invalid={invalid}
        errorId={ERROR_ID}
        onChange={(variables) => edit({ variables })}
      />

      {!readOnly && (
        <p class="row">
          <button type="submit" class="primary" disabled={busy}>
            {busy ? 'Saving…' : 'Save settings'}
          </button>
          {saved && (
            <span class="ok" role="status">
              Settings saved.
            </span>
          )}
        </p>
      )}
      {error !== null && (
        <div id={ERROR_ID}>
          <ErrorText message={error} />
        </div>
      )}
    </form>
  )
}

function policyNote(policy: ResourcePolicy): string {
  switch (policy.mode) {
    case 'forced':
      return 'The platform sets these values for every application (policy: forced); they cannot be changed here.'
    case 'max':
      return "Kubernetes quantities (500m, 1, 256Mi). The platform caps each value (policy: max); an empty field takes the platform's value."
    default:
      return "Kubernetes quantities (500m, 1, 256Mi). An empty field takes the platform's default, if it has one."
  }
}
