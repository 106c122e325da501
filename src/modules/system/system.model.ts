import { Type } from '@sinclair/typebox'

export const Health = Type.Object({ status: Type.Literal('ok') })
export const Readiness = Type.Object({
  status: Type.Literal('ready'),
  migrations: Type.Object({ applied: Type.Integer(), pending: Type.Integer() }),
})
