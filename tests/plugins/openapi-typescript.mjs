/**
 * Generates the typed client an integrator would: `node openapi-typescript.mjs <document.json> <out.d.ts>`.
 * openapi-typescript builds its output with the TypeScript 5 compiler API, which the project's TypeScript (7)
 * no longer has: a resolve hook hands it the `typescript-5` dev dependency instead.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { createRequire, register } from 'node:module'
import { pathToFileURL } from 'node:url'

const ts5 = pathToFileURL(createRequire(import.meta.url).resolve('typescript-5')).href
const hook = `export async function resolve(specifier, context, next) {
  return specifier === 'typescript' ? { url: ${JSON.stringify(ts5)}, format: 'commonjs', shortCircuit: true } : next(specifier, context)
}`
register(`data:text/javascript,${encodeURIComponent(hook)}`)

const [input, output] = process.argv.slice(2)
const { default: openapiTS, astToString } = await import('openapi-typescript')
const ast = await openapiTS(JSON.parse(readFileSync(input, 'utf8')))
writeFileSync(output, astToString(ast))
