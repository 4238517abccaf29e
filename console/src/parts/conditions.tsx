// A deployment's conditions as the control plane keeps them (Deployed, Ready): whether each
// holds, the reason a program matches on, the words for a person, and since when.
import type { Application } from '../api/types'

type Condition = NonNullable<Application['deployment']>['conditions'][number]

export function Conditions({ conditions }: { conditions: Condition[] }) {
  if (conditions.length === 0) return <span class="muted">none yet</span>
  return (
    <table class="conditions" data-testid="conditions">
      <thead>
        <tr>
          <th scope="col">Condition</th>
          <th scope="col">Holds</th>
          <th scope="col">Reason</th>
          <th scope="col">Message</th>
          <th scope="col">Since</th>
        </tr>
      </thead>
      <tbody>
        {conditions.map((c) => (
          <tr key={c.type} data-condition={c.type}>
            <th scope="row">{c.type}</th>
            <td>
              <span class={c.status === 'True' ? 'ok' : c.status === 'False' ? 'warn' : 'muted'}>
                {c.status === 'True' ? 'yes' : c.status === 'False' ? 'no' : 'unknown'}
              </span>
            </td>
            <td>{c.reason}</td>
            <td class="break">{c.message}</td>
            <td>
              <time dateTime={c.lastTransitionTime}>{new Date(c.lastTransitionTime).toLocaleString()}</time>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  )
}
