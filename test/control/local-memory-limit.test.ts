// An application's memoryLimit as the worker gets it (control/src/local/memory-limit.ts): whole
// bytes never below the quantity, at most the 4 GiB a 32-bit memory can reach; none without one.
import fc from 'fast-check'
import t from 'tap'
import { instanceMemoryBytes } from '@session-relay/control/local/memory-limit'

const GiB = 2 ** 30

t.test('the quantities users write', async (t) => {
  t.equal(instanceMemoryBytes(undefined), undefined, "no limit: the worker's default")
  t.equal(instanceMemoryBytes('64Mi'), 64 * 2 ** 20)
  t.equal(instanceMemoryBytes('128M'), 128e6)
  t.equal(instanceMemoryBytes('1.5Gi'), 1.5 * GiB)
  t.equal(instanceMemoryBytes('500m'), 1, 'half a byte is one')
  t.equal(instanceMemoryBytes('8Gi'), 4 * GiB, 'past 4 GiB: 4 GiB')
  t.equal(instanceMemoryBytes('1e30'), 4 * GiB)
})

t.test('any quantity: whole bytes, not below it, at most 4 GiB', async () => {
  fc.assert(
    fc.property(
      fc.bigInt({ min: 1n, max: 10n ** 12n }),
      fc.constantFrom('', 'k', 'Ki', 'M', 'Mi', 'm'),
      (digits, suffix) => {
        const bytes = instanceMemoryBytes(`${digits}${suffix}`)
        if (bytes === undefined || !Number.isSafeInteger(bytes)) return false
        const scale: Record<string, number> = { '': 1, k: 1e3, Ki: 1024, M: 1e6, Mi: 2 ** 20, m: 1e-3 }
        const value = Number(digits) * (scale[suffix] ?? 1)
        return bytes <= 4 * GiB && (bytes === 4 * GiB ? value >= 4 * GiB : bytes >= value && bytes - value < 1)
      },
    ),
  )
})
