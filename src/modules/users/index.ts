/** The users module's front door: members of a tenant and the caller's own profile. */
export { Me } from './users.model'
export { findUserByEmail, findUserById, insertUser, memberTimezone, setPassword, type UserRow } from './users.repository'
export { meView } from './users.service'
export { usersRoutes } from './users.routes'
