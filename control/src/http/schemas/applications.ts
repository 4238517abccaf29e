import { Type } from 'typebox'
import { Autoscaling, Concurrency, Resources, VariablesInput } from '../../model/app-settings.js'
import { Description, Language, Name, Runtime, Tenant } from '../../model/resources.js'

export const CreateApplication = Type.Object(
  {
    name: Name,
    language: Language,
    runtime: Type.Optional(Runtime),
    description: Type.Optional(Description),
    tenant: Type.Optional(Tenant),
  },
  { additionalProperties: false },
)

export const PatchApplication = Type.Object(
  {
    description: Type.Optional(Description),
    replicas: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'an integer from 1 to 100' })),
    autoscaling: Type.Optional(Type.Union([Autoscaling, Type.Null()])),
    resources: Type.Optional(Resources),
    concurrency: Type.Optional(Concurrency),
    variables: Type.Optional(VariablesInput),
  },
  {
    additionalProperties: false,
    description: 'the settings to change: each field given replaces the stored one, the others stay',
  },
)
