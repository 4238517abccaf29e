// The builder images a fresh install builds with (--builder-images' default): the project's own
// images from builders/Dockerfile.{js,go,rust}, named like its relay and control images
// (docs/operations.md) and tagged with its release. builders/README.md says how to build and
// push them; another registry or tag is one setting away.
import type { LanguageT } from './resources.js'
import { LANGUAGES } from '@session-relay/spin/languages'

// package.json's version: test/control/builder-images.test.ts keeps the two equal, so a
// release's control plane asks for the builders built from the same sources.
const RELEASE = '0.1.0'
const REPOSITORY = 'registry.example.com/session-relay'

// ts builds with the js image: esbuild strips the types, the rest of the toolchain is the same.
const IMAGE_OF: Record<LanguageT, string> = {
  js: 'builder-js',
  ts: 'builder-js',
  go: 'builder-go',
  rust: 'builder-rust',
}

/** The default as the setting spells it, language=image pairs in LANGUAGES order. */
export const DEFAULT_BUILDER_IMAGES = LANGUAGES.map(
  (language) => `${language}=${REPOSITORY}/${IMAGE_OF[language]}:${RELEASE}`,
).join(',')
