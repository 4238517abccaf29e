import { Type } from 'typebox'
import { Files } from '../../model/resources.js'

export const PutSource = Type.Object({ files: Files }, { additionalProperties: false })
