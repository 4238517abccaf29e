// What every artifact store offers, a registry or an image-layout directory (store.ts opens one).
export type ArtifactStore = {
  hasBlob: (digest: string) => Promise<boolean>
  pushBlob: (bytes: Uint8Array, digest: string) => Promise<void>
  pushManifest: (bytes: Uint8Array, mediaType: string, reference: string) => Promise<string>
  getManifest: (reference: string) => Promise<{ bytes: Buffer; digest: string; mediaType: string }>
  getBlob: (digest: string, maxBytes: number) => Promise<Buffer>
}
