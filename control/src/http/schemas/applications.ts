import { Type } from 'typebox'
import { Description, Language, Name, Runtime } from '../../model/resources.js'

export const CreateApplication = Type.Object({
  name: Name,
  language: Language,
  runtime: Runtime,
  description: Type.Optional(Description),
}, { additionalProperties: false })
