// How loading, errors and notices look everywhere: errors in words, announced to screen readers.
import type { ComponentChildren } from 'preact'

export function ErrorText({ message }: { message: string }) {
  return (
    <p class="error" role="alert">
      {message}
    </p>
  )
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status">
      Loading {what}…
    </p>
  )
}

export function Notice({ children }: { children: ComponentChildren }) {
  return (
    <p class="notice" role="status">
      {children}
    </p>
  )
}
