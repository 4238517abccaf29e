import { Type } from 'typebox'
import { Name, Route } from '../../model/resources.js'

export const CreateFunction = Type.Object(
  {
    name: Name,
    route: Type.Optional(Route),
  },
  { additionalProperties: false },
)

export const UpdateFunction = Type.Object({ route: Route }, { additionalProperties: false })
