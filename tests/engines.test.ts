import { expect, test } from 'bun:test'
import { join } from 'node:path'

/**
 * `npm ci` warns (EBADENGINE) for every installed package whose `engines.node` the machine's Node.js does not
 * satisfy; the README promises a fresh clone needs Node.js and npm only, so none may ask for more than the Node.js
 * that runs the install.
 */
test('every locked package accepts the Node.js that installs it: `npm ci` prints no engine warning', async () => {
  const lock = await Bun.file(join(import.meta.dir, '..', 'package-lock.json')).json()
  const node = (await Bun.$`node --version`.text()).trim().replace(/^v/, '')
  const refused = Object.entries<{ engines?: { node?: unknown } }>(lock.packages)
    .filter(([, p]) => typeof p.engines?.node === 'string' && !Bun.semver.satisfies(node, p.engines.node as string))
    .map(([path, p]) => `${path} wants node ${p.engines!.node}`)
  expect({ node, refused }).toEqual({ node, refused: [] })
})
