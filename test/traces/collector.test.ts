// The test collector itself (test/helpers/otel-collector.ts): a span sent to its OTLP/HTTP
// receiver comes out of its exporter, decoded and re-encoded, with its ids and attributes.
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { attribute, startCollector } from '../helpers/otel-collector.js'

t.test('a span sent over OTLP/HTTP JSON is exported to the test with its trace id', async (t) => {
  const collector = await startCollector(t)
  const traceId = randomBytes(16).toString('hex')
  const spanId = randomBytes(8).toString('hex')
  const now = BigInt(Date.now()) * 1_000_000n
  const response = await fetch(`${collector.endpoint}/v1/traces`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'collector-test' } }] },
          scopeSpans: [
            {
              spans: [
                {
                  traceId,
                  spanId,
                  name: 'probe',
                  kind: 1,
                  startTimeUnixNano: String(now),
                  endTimeUnixNano: String(now + 1_000n),
                  attributes: [{ key: 'probe.n', value: { intValue: '7' } }],
                },
              ],
            },
          ],
        },
      ],
    }),
  })
  t.equal(response.status, 200, await response.text())
  const spans = await collector.waitFor((spans) => spans.some((span) => span.traceId === traceId))
  const span = spans.find((span) => span.traceId === traceId)
  t.equal(span?.service, 'collector-test')
  t.equal(span?.spanId, spanId)
  t.equal(span?.name, 'probe')
  t.equal(attribute(span?.attributes, 'probe.n'), '7')
  t.match(collector.exported(), traceId)
})
