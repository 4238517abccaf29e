// One metrics endpoint as time-series charts (uPlot), one chart per series, with range and step
// pickers. When the API cannot answer (Prometheus down) the panel says so.
import { useEffect, useRef, useState } from 'preact/hooks'
import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'
import { ApiError, getJson } from '../api/client'
import type { Metrics, MetricSeries } from '../api/types'
import { ErrorText, Loading } from './status'

const RANGES = ['5m', '15m', '1h', '6h', '24h']
const STEPS = ['15s', '30s', '1m', '5m', '15m']

export function MetricsPanel({ path, defaultStep }: { path: string; defaultStep: string }) {
  const [range, setRange] = useState('15m')
  const [step, setStep] = useState(defaultStep)
  const [data, setData] = useState<Metrics | null>(null)
  const [error, setError] = useState<{ status: number; message: string } | null>(null)
  const [loading, setLoading] = useState(true)
  const [round, setRound] = useState(0)
  useEffect(() => {
    const abort = new AbortController()
    setLoading(true)
    getJson<Metrics>(`${path}?range=${range}&step=${step}`, abort.signal)
      .then(
        (m) => {
          setData(m)
          setError(null)
        },
        (e: unknown) => {
          if (!abort.signal.aborted)
            setError({
              status: e instanceof ApiError ? e.status : 0,
              message: e instanceof Error ? e.message : String(e),
            })
        },
      )
      .finally(() => setLoading(false))
    return () => abort.abort()
  }, [path, range, step, round])
  return (
    <div class="metrics">
      <div class="row">
        <label>
          Range{' '}
          <select value={range} onChange={(e) => setRange(e.currentTarget.value)}>
            {RANGES.map((r) => (
              <option key={r}>{r}</option>
            ))}
          </select>
        </label>
        <label>
          Step{' '}
          <select value={step} onChange={(e) => setStep(e.currentTarget.value)}>
            {STEPS.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <button type="button" onClick={() => setRound((r) => r + 1)}>
          Refresh
        </button>
        {loading && (
          <span class="muted small" role="status">
            loading…
          </span>
        )}
      </div>
      {error !== null &&
        (error.status === 503 ? (
          <p class="notice" role="alert">
            Metrics are not available: {error.message.replace(/^Unavailable: /, '')}
          </p>
        ) : (
          <ErrorText message={error.message} />
        ))}
      {data === null && error === null && <Loading what="metrics" />}
      {data !== null && error === null && (
        <div class="charts">
          {Object.entries(data.series).map(([name, series]) => (
            <Chart key={name} name={name} series={series} />
          ))}
        </div>
      )}
    </div>
  )
}

const TITLES: Record<string, string> = {
  cpu: 'CPU',
  memory: 'Memory',
  requestRate: 'Request rate',
  latencyP95: 'Latency p95',
  errorRate: 'Error rate',
  httpRequestRate: 'API request rate',
  buildRate: 'Build rate',
}

function Chart({ name, series }: { name: string; series: MetricSeries }) {
  const host = useRef<HTMLDivElement>(null)
  const title = `${TITLES[name] ?? name} (${series.unit})`
  useEffect(() => {
    const el = host.current
    if (el === null) return
    const xs = series.points.map((p) => p[0])
    const ys = series.points.map((p) => p[1])
    const dark = matchMedia('(prefers-color-scheme: dark)').matches
    const axis = { stroke: dark ? '#ccc' : '#333', grid: { stroke: dark ? '#444' : '#ddd' } }
    const plot = new uPlot(
      {
        width: Math.max(240, el.clientWidth),
        height: 180,
        series: [{}, { label: series.unit, stroke: dark ? '#6cb6ff' : '#0057b8', width: 2 }],
        axes: [axis, axis],
        // One sample alone would stretch the time axis over years: a minute around it instead.
        scales: { x: { time: true, range: (_u, min, max) => (min === max ? [min - 60, max + 60] : [min, max]) } },
        legend: { show: false },
      },
      [xs, ys],
      el,
    )
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(240, el.clientWidth), height: 180 }))
    resize.observe(el)
    return () => {
      resize.disconnect()
      plot.destroy()
    }
  }, [series])
  return (
    <figure class="chart" data-series={name}>
      <figcaption>
        {title}
        {series.points.length === 0 && <span class="muted"> — no samples in this range</span>}
      </figcaption>
      <div ref={host} role="img" aria-label={`${title}: ${series.points.length} samples`} />
    </figure>
  )
}
