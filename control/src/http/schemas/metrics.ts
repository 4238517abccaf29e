import { Type } from 'typebox'
import type { TSchema } from 'typebox'

export const MetricsQuery = Type.Object(
  {
    range: Type.Optional(Type.String({ description: 'Go duration from 1m to 24h, e.g. 15m; default 15m' })),
    step: Type.Optional(
      Type.String({
        description: 'Go duration of at least 1s, e.g. 15s; default 15s; at most 11,000 points per series',
      }),
    ),
  },
  { additionalProperties: false },
)

const Series = (unit: string): TSchema =>
  Type.Object({
    points: Type.Array(Type.Array(Type.Number(), { minItems: 2, maxItems: 2 }), {
      description: '[unix seconds, value] pairs',
    }),
    unit: Type.Literal(unit),
  })

const metricsOf = (series: Record<string, TSchema>): TSchema =>
  Type.Object({
    range: Type.String(),
    step: Type.String(),
    series: Type.Object(series),
  })

export const ApplicationMetrics = metricsOf({ cpu: Series('cores'), memory: Series('bytes') })
export const FunctionMetrics = metricsOf({
  requestRate: Series('req/s'),
  latencyP95: Series('ms'),
  errorRate: Series('req/s'),
})
export const OverviewMetrics = metricsOf({ httpRequestRate: Series('req/s'), buildRate: Series('builds/s') })
