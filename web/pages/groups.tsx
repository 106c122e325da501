import { useState } from 'preact/hooks'
import { request } from '../lib/api'
import type { Resource } from '../lib/resource'
import { can } from '../lib/session'
import type { Group, GroupCreateBody, GroupPatchBody } from '../lib/api-types'
import { Form, TextField, useForm } from '../ui/form'
import { Section } from '../ui/layout'
import { Action, Async, Empty, TableWrap } from '../ui/states'

/** Server groups (docs/fleet.md "Groups"): create, rename, delete an empty one. */

function Rename({ group, done }: { group: Group; done: () => void }) {
  const form = useForm()
  const [name, setName] = useState(group.name)
  return (
    <Form
      form={form}
      class="form inline"
      label={`Rename ${group.name}`}
      submit="Save"
      onSubmit={async () => {
        await request('PATCH', `/groups/${group.id}`, { body: { name } satisfies GroupPatchBody, ifMatch: `"${group.version}"` })
        done()
      }}
      secondary={
        <button type="button" onClick={done}>
          Cancel
        </button>
      }
    >
      <TextField form={form} name="/name" label="New name" value={name} onInput={setName} />
    </Form>
  )
}

export function Groups({ groups, counts }: { groups: Resource<{ items: Group[] }>; counts: { group_id: string | null; servers: number }[] }) {
  const form = useForm()
  const [name, setName] = useState('')
  const [renaming, setRenaming] = useState<string | null>(null)
  const ungrouped = counts.find((c) => c.group_id === null)?.servers ?? 0
  return (
    <Section title="Groups">
      <Async r={groups}>
        {({ items }) =>
          items.length === 0 ? (
            <Empty>No groups yet. Groups gather servers (by site, owner or model) for filters and pricing policies.</Empty>
          ) : (
            <TableWrap label="Groups">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Group</th>
                    <th scope="col" class="num">
                      Servers
                    </th>
                    {can('operator') && <th scope="col">Actions</th>}
                  </tr>
                </thead>
                <tbody>
                  {items.map((g) => (
                    <tr key={g.id}>
                      <td>
                        {renaming === g.id ? (
                          <Rename
                            group={g}
                            done={() => {
                              setRenaming(null)
                              groups.reload()
                            }}
                          />
                        ) : (
                          g.name
                        )}
                      </td>
                      <td class="num">{g.servers}</td>
                      {can('operator') && (
                        <td>
                          <button type="button" onClick={() => setRenaming(g.id)} aria-label={`Rename ${g.name}`}>
                            Rename
                          </button>{' '}
                          <Action
                            label="Delete"
                            class="danger"
                            confirm={`Delete the group ${g.name}?`}
                            run={async () => {
                              await request('DELETE', `/groups/${g.id}`)
                              groups.reload()
                            }}
                          />
                        </td>
                      )}
                    </tr>
                  ))}
                </tbody>
              </table>
              <p class="muted small">{ungrouped} servers are in no group.</p>
            </TableWrap>
          )
        }
      </Async>
      {can('operator') && (
        <Form
          form={form}
          class="form inline"
          label="Create a group"
          submit="Create the group"
          onSubmit={async () => {
            await request('POST', '/groups', { body: { name } satisfies GroupCreateBody })
            setName('')
            groups.reload()
          }}
        >
          <TextField form={form} name="/name" label="New group" value={name} onInput={setName} />
        </Form>
      )}
    </Section>
  )
}
