import { Type } from 'typebox'

// Ids are any string here: one that is not a UUID simply matches nothing (404), like an unknown one.
export const AppParams = Type.Object({ appId: Type.String() })
export const FunctionParams = Type.Object({ appId: Type.String(), fnId: Type.String() })
export const BuildParams = Type.Object({ appId: Type.String(), buildId: Type.String() })
