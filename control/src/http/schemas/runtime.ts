import { Type } from 'typebox'

export const LogsQuery = Type.Object(
  {
    follow: Type.Optional(
      Type.Boolean({ description: 'keep the connection open and stream new lines; default false' }),
    ),
  },
  { additionalProperties: false },
)

export const AppLogsQuery = Type.Object(
  {
    follow: Type.Optional(
      Type.Boolean({ description: 'keep the connection open and stream new lines; default false' }),
    ),
    tail: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 100_000,
        description: 'only the last this many lines; default: every line the pod kept',
      }),
    ),
  },
  { additionalProperties: false },
)

export const Accepted = Type.Object({ message: Type.String() })
