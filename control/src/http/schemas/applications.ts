import { Type } from 'typebox'
import { Description, Language, Name, Runtime, Tenant } from '../../model/resources.js'

export const CreateApplication = Type.Object({
  name: Name,
  language: Language,
  runtime: Runtime,
  description: Type.Optional(Description),
  tenant: Type.Optional(Tenant),
}, { additionalProperties: false })
