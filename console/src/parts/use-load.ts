// A value loaded from the API, with its error in words and a way to load it again.
import { useCallback, useEffect, useState } from 'preact/hooks'
import { messageOf } from '../api/client'

export type Loaded<T> = { data: T | null; error: string | null; loading: boolean; reload: () => void }

export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [loading, setLoading] = useState(true)
  const [round, setRound] = useState(0)
  useEffect(() => {
    let live = true
    setLoading(true)
    load()
      .then((value) => {
        if (live) {
          setData(value)
          setError(null)
        }
      })
      .catch((e: unknown) => {
        if (live) setError(messageOf(e))
      })
      .finally(() => {
        if (live) setLoading(false)
      })
    return () => {
      live = false
    }
  }, [...deps, round])
  const reload = useCallback(() => setRound((r) => r + 1), [])
  return { data, error, loading, reload }
}
